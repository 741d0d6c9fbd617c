package recorder_test

import (
	"context"
	"testing"
	"time"

	"github.com/brakebench/brakebench/internal/recorder"
	"github.com/brakebench/brakebench/internal/recorder/recordertest"
)

const ns = "rec"

func start(t *testing.T) (*recorder.Recorder, *recordertest.Stream) {
	t.Helper()
	s, infs := recordertest.New(100)
	rec, err := recorder.StartInformers(context.Background(), infs, ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.Stop)
	return rec, s
}

// waitSnap waits until cond holds on a snapshot (events are handled asynchronously).
func waitSnap(t *testing.T, rec *recorder.Recorder, what string, cond func(recorder.Snapshot) bool) recorder.Snapshot {
	t.Helper()
	if !rec.WaitFor(context.Background(), 10*time.Second, func() bool { return cond(rec.Snapshot()) }) {
		t.Fatalf("%s: not seen; snapshot %+v", what, rec.Snapshot())
	}
	return rec.Snapshot()
}

func TestRecorderHandlers(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	cases := []struct {
		name  string
		feed  func(s *recordertest.Stream)
		ready func(recorder.Snapshot) bool
		check func(t *testing.T, snap recorder.Snapshot)
	}{{
		name: "claim: pending, bound, Ready in order",
		feed: func(s *recordertest.Stream) {
			s.Claims.Add(recordertest.Claim(ns, "c1", "p", "", at(0), time.Time{}, 2))
			s.Claims.Modify(recordertest.Claim(ns, "c1", "p", "sb1", at(0), time.Time{}, 3))
			s.Claims.Modify(recordertest.Claim(ns, "c1", "p", "sb1", at(0), at(2), 4))
		},
		ready: func(s recorder.Snapshot) bool { return !s.Claims["c1"].Ready.IsZero() },
		check: func(t *testing.T, snap recorder.Snapshot) {
			c := snap.Claims["c1"]
			if c.Sandbox != "sb1" || c.Bound.IsZero() || c.Bound.After(c.Ready) || !c.ServerReady.Equal(at(2)) || c.LastReason != "SandboxReady" {
				t.Errorf("claim %+v", c)
			}
		},
	}, {
		// A claim's first event already says Ready (its earlier updates were coalesced or arrived
		// before the watch): bound is taken to be when Ready was seen, never left empty.
		name: "claim: first event already Ready",
		feed: func(s *recordertest.Stream) {
			s.Claims.Add(recordertest.Claim(ns, "c2", "p", "sb2", at(0), at(1), 5))
		},
		ready: func(s recorder.Snapshot) bool { return !s.Claims["c2"].Ready.IsZero() },
		check: func(t *testing.T, snap recorder.Snapshot) {
			if c := snap.Claims["c2"]; !c.Bound.Equal(c.Ready) || c.Sandbox != "sb2" {
				t.Errorf("claim %+v", c)
			}
		},
	}, {
		// Out of order: a stale update (not Ready, no sandbox) after Ready keeps the first times.
		name: "claim: stale update after Ready",
		feed: func(s *recordertest.Stream) {
			s.Claims.Add(recordertest.Claim(ns, "c3", "p", "sb3", at(0), at(3), 6))
			s.Claims.Modify(recordertest.Claim(ns, "c3", "p", "", at(0), time.Time{}, 7))
			s.Claims.Add(recordertest.Claim(ns, "marker", "p", "", at(0), time.Time{}, 8))
		},
		ready: func(s recorder.Snapshot) bool { _, ok := s.Claims["marker"]; return ok },
		check: func(t *testing.T, snap recorder.Snapshot) {
			if c := snap.Claims["c3"]; c.Ready.IsZero() || c.Sandbox != "sb3" || !c.ServerReady.Equal(at(3)) {
				t.Errorf("claim %+v", c)
			}
		},
	}, {
		// The sandbox controller re-creates an evicted sandbox's pod under the same name: two
		// records by UID, the first one marked deleted.
		name: "pod: re-created under the same name",
		feed: func(s *recordertest.Stream) {
			s.Pods.Add(recordertest.Pod(ns, "sb4", "a", "", at(0), time.Time{}, time.Time{}, false, 10))
			s.Pods.Modify(recordertest.Pod(ns, "sb4", "a", "n1", at(0), at(1), time.Time{}, false, 11))
			s.Pods.Modify(recordertest.Pod(ns, "sb4", "a", "n1", at(0), at(1), at(2), false, 12))
			s.Pods.Modify(recordertest.Pod(ns, "sb4", "a", "n1", at(0), at(1), at(2), true, 13))
			s.Pods.Delete(recordertest.Pod(ns, "sb4", "a", "n1", at(0), at(1), at(2), true, 14))
			s.Pods.Add(recordertest.Pod(ns, "sb4", "b", "", at(5), time.Time{}, time.Time{}, false, 15))
			s.Pods.Modify(recordertest.Pod(ns, "sb4", "b", "n2", at(5), at(6), at(7), false, 16))
		},
		ready: func(s recorder.Snapshot) bool { return len(s.Pods) == 2 && !s.Pods[podUID("sb4b")].Ready.IsZero() },
		check: func(t *testing.T, snap recorder.Snapshot) {
			a, b := snap.Pods[podUID("sb4a")], snap.Pods[podUID("sb4b")]
			if a.Deleted.IsZero() || !a.Scheduled.Equal(at(1)) || !a.Ready.Equal(at(2)) || a.Node != "n1" {
				t.Errorf("first pod %+v", a)
			}
			if !b.Deleted.IsZero() || !b.Created.Equal(at(5)) || !b.Scheduled.Equal(at(6)) || !b.Ready.Equal(at(7)) || b.Node != "n2" || b.Name != "sb4" {
				t.Errorf("re-created pod %+v", b)
			}
		},
	}, {
		// Pool membership: 3 members, one adopted by a claim (owner changes), one refill, one
		// deleted: the most live members at once is 3, never the 4 ever created.
		name: "sandboxes: live pool members through adoption and refill",
		feed: func(s *recordertest.Stream) {
			for i, n := range []string{"m1", "m2", "m3"} {
				s.Sandboxes.Add(recordertest.Sandbox(ns, n, "SandboxWarmPool/p", "", at(0), false, 20+i))
			}
			s.Sandboxes.Modify(recordertest.Sandbox(ns, "m1", "SandboxClaim/c1", "warm", at(0), false, 30))
			s.Sandboxes.Add(recordertest.Sandbox(ns, "m4", "SandboxWarmPool/p", "", at(1), false, 31))
			s.Sandboxes.Modify(recordertest.Sandbox(ns, "m2", "SandboxWarmPool/p", "", at(0), true, 32))
			s.Sandboxes.Delete(recordertest.Sandbox(ns, "m2", "SandboxWarmPool/p", "", at(0), true, 33))
			s.Sandboxes.Add(recordertest.Sandbox(ns, "m5", "SandboxWarmPool/p", "", at(2), false, 34))
		},
		ready: func(s recorder.Snapshot) bool { _, ok := s.Sandboxes["m5"]; return ok },
		check: func(t *testing.T, snap recorder.Snapshot) {
			if got := snap.MaxPoolMembers["p"]; got != 3 {
				t.Errorf("max live pool members %d, want 3", got)
			}
			if m1 := snap.Sandboxes["m1"]; m1.Owner != "SandboxClaim/c1" || m1.LaunchType != "warm" || !m1.FromPool {
				t.Errorf("adopted sandbox %+v", m1)
			}
			if !snap.Sandboxes["m2"].Deleted || snap.Sandboxes["m4"].Deleted {
				t.Errorf("deleted flags m2 %+v m4 %+v", snap.Sandboxes["m2"], snap.Sandboxes["m4"])
			}
		},
	}, {
		name: "pool: unchanged status is one sample",
		feed: func(s *recordertest.Stream) {
			s.Pools.Add(recordertest.Pool(ns, "p", 3, 3, 3, 40))
			s.Pools.Modify(recordertest.Pool(ns, "p", 3, 3, 3, 41))
			s.Pools.Modify(recordertest.Pool(ns, "p", 3, 2, 2, 42))
			s.Pools.Modify(recordertest.Pool(ns, "p", 3, 3, 2, 43))
			s.Pools.Modify(recordertest.Pool(ns, "p", 3, 3, 3, 44))
		},
		ready: func(s recorder.Snapshot) bool { return len(s.Pools["p"]) == 4 },
		check: func(t *testing.T, snap recorder.Snapshot) {
			last := snap.Pools["p"][3]
			if last.Desired != 3 || last.Replicas != 3 || last.Ready != 3 {
				t.Errorf("samples %+v", snap.Pools["p"])
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec, s := start(t)
			tc.feed(s)
			tc.check(t, waitSnap(t, rec, tc.name, tc.ready))
		})
	}
}

func podUID(nameSuffix string) string { return "pod-" + nameSuffix + "-0000-0000-000000000000" }
