package recorder_test

import (
	"context"
	"net/http"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/brakebench/brakebench/internal/recorder"
	"github.com/brakebench/brakebench/internal/recorder/recordertest"
)

// The tests below drive the recorder's real informers through recordertest's fake watches. Events
// of one watch reach the handlers in order, so a marker object sent last on a watch tells when
// everything before it on that watch has been handled; events of different watches are handled
// in no set order, so only the final state is asserted across resources.

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// at is t0 plus s seconds (server clock).
func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// window is the harness-clock interval a case ran in: every harness-clock time the recorder
// took for it lies within.
type window struct{ from, to time.Time }

func (w window) has(t time.Time) bool { return !t.IsZero() && !t.Before(w.from) && !t.After(w.to) }

type handlerCase struct {
	name  string
	feed  func(s *recordertest.Stream)
	ready func(recorder.Snapshot) bool
	check func(t *testing.T, rec *recorder.Recorder, snap recorder.Snapshot, w window)
}

func runHandlerCases(t *testing.T, cases []handlerCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec, s := start(t)
			from := time.Now()
			tc.feed(s)
			snap := waitSnap(t, rec, tc.name, tc.ready)
			tc.check(t, rec, snap, window{from, time.Now()})
		})
	}
}

func hasClaim(name string) func(recorder.Snapshot) bool {
	return func(s recorder.Snapshot) bool { _, ok := s.Claims[name]; return ok }
}

func hasSandbox(name string) func(recorder.Snapshot) bool {
	return func(s recorder.Snapshot) bool { _, ok := s.Sandboxes[name]; return ok }
}

func hasPod(uid string) func(recorder.Snapshot) bool {
	return func(s recorder.Snapshot) bool { _, ok := s.Pods[uid]; return ok }
}

func wantCounts(t *testing.T, rec *recorder.Recorder, claims, sandboxes, pods int) {
	t.Helper()
	if c, s, p := rec.Counts(); c != claims || s != sandboxes || p != pods {
		t.Errorf("Counts() = %d claims, %d sandboxes, %d pods; want %d, %d, %d", c, s, p, claims, sandboxes, pods)
	}
}

func TestClaimEvents(t *testing.T) {
	none := time.Time{}
	runHandlerCases(t, []handlerCase{{
		name: "added pending: nothing bound or Ready",
		feed: func(s *recordertest.Stream) {
			s.Claims.Add(recordertest.Claim(ns, "c1", "p", "", at(0), none, 2))
		},
		ready: hasClaim("c1"),
		check: func(t *testing.T, rec *recorder.Recorder, snap recorder.Snapshot, _ window) {
			if c := snap.Claims["c1"]; !c.Bound.IsZero() || !c.Ready.IsZero() || !c.ServerReady.IsZero() || c.Sandbox != "" || c.LastReason != "SandboxNotReady" {
				t.Errorf("claim %+v", c)
			}
			if rec.ClaimReady("c1") {
				t.Error("ClaimReady(c1) = true for a pending claim")
			}
			wantCounts(t, rec, 1, 0, 0)
		},
	}, {
		// A second Ready transition and a later loss of Ready keep the first Ready times; the
		// reason follows the last event.
		name: "bound, Ready set, then updated twice",
		feed: func(s *recordertest.Stream) {
			s.Claims.Add(recordertest.Claim(ns, "c1", "p", "", at(0), none, 2))
			s.Claims.Modify(recordertest.Claim(ns, "c1", "p", "sb1", at(0), none, 3))
			s.Claims.Modify(recordertest.Claim(ns, "c1", "p", "sb1", at(0), at(2), 4))
			s.Claims.Modify(recordertest.Claim(ns, "c1", "p", "sb1", at(0), at(9), 5))
			s.Claims.Modify(recordertest.Claim(ns, "c1", "p", "sb1", at(0), none, 6))
			s.Claims.Add(recordertest.Claim(ns, "marker", "p", "", at(0), none, 7))
		},
		ready: hasClaim("marker"),
		check: func(t *testing.T, rec *recorder.Recorder, snap recorder.Snapshot, w window) {
			c := snap.Claims["c1"]
			if !w.has(c.Bound) || !w.has(c.Ready) || c.Bound.After(c.Ready) {
				t.Errorf("bound %v, ready %v: want both within [%v, %v], bound first", c.Bound, c.Ready, w.from, w.to)
			}
			if !c.ServerReady.Equal(at(2)) || c.Sandbox != "sb1" || c.LastReason != "SandboxNotReady" {
				t.Errorf("claim %+v: want ServerReady %v, sandbox sb1, last reason SandboxNotReady", c, at(2))
			}
			if !rec.ClaimReady("c1") || rec.ClaimReady("marker") || rec.ClaimReady("missing") {
				t.Errorf("ClaimReady c1 %v marker %v missing %v; want true, false, false",
					rec.ClaimReady("c1"), rec.ClaimReady("marker"), rec.ClaimReady("missing"))
			}
			if n := rec.ReadyAmong([]string{"c1", "marker", "missing", "c1"}); n != 2 {
				t.Errorf("ReadyAmong = %d, want 2 (c1 listed twice)", n)
			}
			wantCounts(t, rec, 2, 0, 0)
		},
	}, {
		name: "rebound: sandbox follows the last event",
		feed: func(s *recordertest.Stream) {
			s.Claims.Add(recordertest.Claim(ns, "c1", "p", "sb1", at(0), none, 2))
			s.Claims.Modify(recordertest.Claim(ns, "c1", "p", "sb2", at(0), none, 3))
			s.Claims.Modify(recordertest.Claim(ns, "c1", "p", "", at(0), none, 4)) // a stale unbound event
			s.Claims.Add(recordertest.Claim(ns, "marker", "p", "", at(0), none, 5))
		},
		ready: hasClaim("marker"),
		check: func(t *testing.T, _ *recorder.Recorder, snap recorder.Snapshot, w window) {
			if c := snap.Claims["c1"]; c.Sandbox != "sb2" || !w.has(c.Bound) || !c.Ready.IsZero() {
				t.Errorf("claim %+v: want sandbox sb2, bound, not Ready", c)
			}
		},
	}, {
		// Claims have no delete handler: what was seen stays for the cell's analysis.
		name: "deleted: the record stays",
		feed: func(s *recordertest.Stream) {
			s.Claims.Add(recordertest.Claim(ns, "c1", "p", "sb1", at(0), at(1), 2))
			s.Claims.Delete(recordertest.Claim(ns, "c1", "p", "sb1", at(0), at(1), 3))
			s.Claims.Add(recordertest.Claim(ns, "marker", "p", "", at(0), none, 4))
		},
		ready: hasClaim("marker"),
		check: func(t *testing.T, rec *recorder.Recorder, snap recorder.Snapshot, w window) {
			c, ok := snap.Claims["c1"]
			if !ok || !w.has(c.Ready) || !c.ServerReady.Equal(at(1)) || c.Sandbox != "sb1" {
				t.Errorf("deleted claim %+v (present %v)", c, ok)
			}
			if !rec.ClaimReady("c1") {
				t.Error("ClaimReady(c1) = false after its deletion")
			}
			wantCounts(t, rec, 2, 0, 0)
		},
	}, {
		// Claims are kept by name: a claim re-created under a deleted one's name keeps the first
		// one's times (Ready is when Ready was first seen).
		name: "deleted and re-created under the same name: first times kept",
		feed: func(s *recordertest.Stream) {
			s.Claims.Add(recordertest.Claim(ns, "c1", "p", "sb1", at(0), at(1), 2))
			s.Claims.Delete(recordertest.Claim(ns, "c1", "p", "sb1", at(0), at(1), 3))
			s.Claims.Add(recordertest.Claim(ns, "c1", "p", "sb9", at(5), at(7), 4))
			s.Claims.Add(recordertest.Claim(ns, "marker", "p", "", at(0), none, 5))
		},
		ready: hasClaim("marker"),
		check: func(t *testing.T, rec *recorder.Recorder, snap recorder.Snapshot, _ window) {
			if c := snap.Claims["c1"]; !c.ServerReady.Equal(at(1)) || c.Sandbox != "sb9" {
				t.Errorf("claim %+v: want ServerReady %v (first), sandbox sb9 (last)", c, at(1))
			}
			wantCounts(t, rec, 2, 0, 0)
		},
	}, {
		// Out of order: the Ready update arrives before the bind update it followed. Bound is
		// taken when Ready is first seen; the stale event changes only the last reason.
		name: "Ready before the bind update",
		feed: func(s *recordertest.Stream) {
			s.Claims.Add(recordertest.Claim(ns, "c1", "p", "", at(0), none, 2))
			s.Claims.Modify(recordertest.Claim(ns, "c1", "p", "sb1", at(0), at(3), 5))
			s.Claims.Modify(recordertest.Claim(ns, "c1", "p", "sb1", at(0), none, 4))
			s.Claims.Add(recordertest.Claim(ns, "marker", "p", "", at(0), none, 6))
		},
		ready: hasClaim("marker"),
		check: func(t *testing.T, _ *recorder.Recorder, snap recorder.Snapshot, w window) {
			c := snap.Claims["c1"]
			if !w.has(c.Ready) || !c.Bound.Equal(c.Ready) || !c.ServerReady.Equal(at(3)) || c.Sandbox != "sb1" || c.LastReason != "SandboxNotReady" {
				t.Errorf("claim %+v: want bound = ready, ServerReady %v, sandbox sb1, last reason SandboxNotReady", c, at(3))
			}
		},
	}, {
		name: "Ready without a sandbox name: bound when Ready",
		feed: func(s *recordertest.Stream) {
			s.Claims.Add(recordertest.Claim(ns, "c1", "p", "", at(0), at(4), 2))
		},
		ready: hasClaim("c1"),
		check: func(t *testing.T, _ *recorder.Recorder, snap recorder.Snapshot, w window) {
			c := snap.Claims["c1"]
			if !w.has(c.Ready) || !c.Bound.Equal(c.Ready) || c.Sandbox != "" || !c.ServerReady.Equal(at(4)) || c.LastReason != "SandboxReady" {
				t.Errorf("claim %+v", c)
			}
		},
	}})
}

func TestSandboxEvents(t *testing.T) {
	runHandlerCases(t, []handlerCase{{
		name: "claim-created sandbox: not from the pool, no pool member",
		feed: func(s *recordertest.Stream) {
			s.Sandboxes.Add(recordertest.Sandbox(ns, "sb1", "SandboxClaim/c1", "cold", at(4), false, 2))
		},
		ready: hasSandbox("sb1"),
		check: func(t *testing.T, rec *recorder.Recorder, snap recorder.Snapshot, w window) {
			sb := snap.Sandboxes["sb1"]
			if !sb.Created.Equal(at(4)) || !w.has(sb.Observed) || sb.FromPool || sb.Owner != "SandboxClaim/c1" || sb.LaunchType != "cold" || sb.Deleted {
				t.Errorf("sandbox %+v", sb)
			}
			if len(snap.MaxPoolMembers) != 0 {
				t.Errorf("pool members %v, want none", snap.MaxPoolMembers)
			}
			wantCounts(t, rec, 0, 1, 0)
		},
	}, {
		// FromPool is decided at first sight; the owner follows the last event; the launch type
		// is kept when a later event has none.
		name: "adopted pool member: owner follows, launch type kept",
		feed: func(s *recordertest.Stream) {
			s.Sandboxes.Add(recordertest.Sandbox(ns, "m1", "SandboxWarmPool/p", "", at(0), false, 2))
			s.Sandboxes.Modify(recordertest.Sandbox(ns, "m1", "SandboxClaim/c1", "warm", at(0), false, 3))
			s.Sandboxes.Modify(recordertest.Sandbox(ns, "m1", "SandboxClaim/c1", "", at(0), false, 4))
			s.Sandboxes.Add(recordertest.Sandbox(ns, "marker", "SandboxClaim/x", "", at(0), false, 5))
		},
		ready: hasSandbox("marker"),
		check: func(t *testing.T, _ *recorder.Recorder, snap recorder.Snapshot, _ window) {
			if m1 := snap.Sandboxes["m1"]; !m1.FromPool || m1.Owner != "SandboxClaim/c1" || m1.LaunchType != "warm" || m1.Deleted {
				t.Errorf("sandbox %+v", m1)
			}
			if got := snap.MaxPoolMembers["p"]; got != 1 {
				t.Errorf("max pool members %d, want 1", got)
			}
		},
	}, {
		name: "deletion timestamp, then delete event",
		feed: func(s *recordertest.Stream) {
			s.Sandboxes.Add(recordertest.Sandbox(ns, "m1", "SandboxWarmPool/p", "", at(0), false, 2))
			s.Sandboxes.Modify(recordertest.Sandbox(ns, "m1", "SandboxWarmPool/p", "", at(0), true, 3))
			s.Sandboxes.Delete(recordertest.Sandbox(ns, "m1", "SandboxWarmPool/p", "", at(0), true, 4))
			s.Sandboxes.Add(recordertest.Sandbox(ns, "marker", "SandboxClaim/x", "", at(0), false, 5))
		},
		ready: hasSandbox("marker"),
		check: func(t *testing.T, rec *recorder.Recorder, snap recorder.Snapshot, _ window) {
			if m1 := snap.Sandboxes["m1"]; !m1.Deleted || m1.Owner != "SandboxWarmPool/p" {
				t.Errorf("sandbox %+v", m1)
			}
			if got := snap.MaxPoolMembers["p"]; got != 1 {
				t.Errorf("max pool members %d, want 1", got)
			}
			wantCounts(t, rec, 0, 2, 0)
		},
	}, {
		// LiveSandboxesOf: the sandboxes of deleted claims the garbage collector still has to remove.
		name: "live sandboxes of claims",
		feed: func(s *recordertest.Stream) {
			s.Claims.Add(recordertest.Claim(ns, "c1", "p", "sb1", at(0), time.Time{}, 2))
			s.Claims.Add(recordertest.Claim(ns, "c2", "p", "sb2", at(0), time.Time{}, 3))
			s.Claims.Add(recordertest.Claim(ns, "c3", "p", "", at(0), time.Time{}, 4))
			s.Sandboxes.Add(recordertest.Sandbox(ns, "sb1", "SandboxClaim/c1", "warm", at(0), false, 5))
			s.Sandboxes.Add(recordertest.Sandbox(ns, "sb2", "SandboxClaim/c2", "warm", at(0), false, 6))
			s.Sandboxes.Delete(recordertest.Sandbox(ns, "sb2", "SandboxClaim/c2", "warm", at(0), true, 7))
			s.Sandboxes.Add(recordertest.Sandbox(ns, "marker", "SandboxClaim/x", "", at(0), false, 8))
		},
		// Claims and sandboxes come through separate informers: wait for the last of each.
		ready: func(snap recorder.Snapshot) bool { return hasSandbox("marker")(snap) && hasClaim("c3")(snap) },
		check: func(t *testing.T, rec *recorder.Recorder, _ recorder.Snapshot, _ window) {
			if n := rec.LiveSandboxesOf([]string{"c1", "c2", "c3", "missing"}); n != 1 {
				t.Errorf("LiveSandboxesOf = %d, want 1 (sb1; sb2 deleted, c3 unbound, missing unknown)", n)
			}
		},
	}, {
		name: "delete event without a deletion timestamp first",
		feed: func(s *recordertest.Stream) {
			s.Sandboxes.Add(recordertest.Sandbox(ns, "m1", "SandboxWarmPool/p", "", at(0), false, 2))
			s.Sandboxes.Delete(recordertest.Sandbox(ns, "m1", "SandboxWarmPool/p", "", at(0), false, 3))
			s.Sandboxes.Add(recordertest.Sandbox(ns, "marker", "SandboxClaim/x", "", at(0), false, 4))
		},
		ready: hasSandbox("marker"),
		check: func(t *testing.T, _ *recorder.Recorder, snap recorder.Snapshot, _ window) {
			if !snap.Sandboxes["m1"].Deleted {
				t.Errorf("sandbox %+v not deleted", snap.Sandboxes["m1"])
			}
		},
	}, {
		name: "delete of a never-seen sandbox records nothing",
		feed: func(s *recordertest.Stream) {
			s.Sandboxes.Delete(recordertest.Sandbox(ns, "ghost", "SandboxWarmPool/p", "", at(0), true, 2))
			s.Sandboxes.Add(recordertest.Sandbox(ns, "marker", "SandboxClaim/x", "", at(0), false, 3))
		},
		ready: hasSandbox("marker"),
		check: func(t *testing.T, rec *recorder.Recorder, snap recorder.Snapshot, _ window) {
			if _, ok := snap.Sandboxes["ghost"]; ok {
				t.Errorf("ghost recorded: %+v", snap.Sandboxes["ghost"])
			}
			if len(snap.MaxPoolMembers) != 0 {
				t.Errorf("pool members %v, want none", snap.MaxPoolMembers)
			}
			wantCounts(t, rec, 0, 1, 0)
		},
	}, {
		// Out of order: a stale event without the deletion timestamp, after it, neither revives
		// the sandbox nor counts it again (live members m1, m3: 2, not 3).
		name: "stale event after deletion: stays deleted, not re-counted",
		feed: func(s *recordertest.Stream) {
			s.Sandboxes.Add(recordertest.Sandbox(ns, "m1", "SandboxWarmPool/p", "", at(0), false, 2))
			s.Sandboxes.Add(recordertest.Sandbox(ns, "m2", "SandboxWarmPool/p", "", at(0), false, 3))
			s.Sandboxes.Modify(recordertest.Sandbox(ns, "m2", "SandboxWarmPool/p", "", at(0), true, 5))
			s.Sandboxes.Add(recordertest.Sandbox(ns, "m3", "SandboxWarmPool/p", "", at(1), false, 6))
			s.Sandboxes.Modify(recordertest.Sandbox(ns, "m2", "SandboxWarmPool/p", "", at(0), false, 4))
			s.Sandboxes.Add(recordertest.Sandbox(ns, "marker", "SandboxClaim/x", "", at(0), false, 7))
		},
		ready: hasSandbox("marker"),
		check: func(t *testing.T, _ *recorder.Recorder, snap recorder.Snapshot, _ window) {
			if !snap.Sandboxes["m2"].Deleted || snap.Sandboxes["m3"].Deleted {
				t.Errorf("m2 %+v, m3 %+v", snap.Sandboxes["m2"], snap.Sandboxes["m3"])
			}
			if got := snap.MaxPoolMembers["p"]; got != 2 {
				t.Errorf("max pool members %d, want 2", got)
			}
		},
	}, {
		// A member leaves the pool and comes back: counted once each time, never twice.
		name: "member released and returned: no double count",
		feed: func(s *recordertest.Stream) {
			s.Sandboxes.Add(recordertest.Sandbox(ns, "m1", "SandboxWarmPool/p", "", at(0), false, 2))
			s.Sandboxes.Modify(recordertest.Sandbox(ns, "m1", "SandboxClaim/c1", "warm", at(0), false, 3))
			s.Sandboxes.Modify(recordertest.Sandbox(ns, "m1", "SandboxWarmPool/p", "warm", at(0), false, 4))
			s.Sandboxes.Modify(recordertest.Sandbox(ns, "m1", "SandboxWarmPool/p", "warm", at(0), false, 5))
			s.Sandboxes.Add(recordertest.Sandbox(ns, "m2", "SandboxWarmPool/p", "", at(1), false, 6))
		},
		ready: hasSandbox("m2"),
		check: func(t *testing.T, _ *recorder.Recorder, snap recorder.Snapshot, _ window) {
			if got := snap.MaxPoolMembers["p"]; got != 2 {
				t.Errorf("max pool members %d, want 2", got)
			}
			if m1 := snap.Sandboxes["m1"]; m1.Owner != "SandboxWarmPool/p" || !m1.FromPool {
				t.Errorf("m1 %+v", m1)
			}
		},
	}, {
		name: "two pools counted apart",
		feed: func(s *recordertest.Stream) {
			s.Sandboxes.Add(recordertest.Sandbox(ns, "a1", "SandboxWarmPool/p", "", at(0), false, 2))
			s.Sandboxes.Add(recordertest.Sandbox(ns, "b1", "SandboxWarmPool/q", "", at(0), false, 3))
			s.Sandboxes.Add(recordertest.Sandbox(ns, "a2", "SandboxWarmPool/p", "", at(0), false, 4))
			s.Sandboxes.Add(recordertest.Sandbox(ns, "c1", "SandboxClaim/c1", "cold", at(0), false, 5))
		},
		ready: hasSandbox("c1"),
		check: func(t *testing.T, _ *recorder.Recorder, snap recorder.Snapshot, _ window) {
			if want := map[string]int{"p": 2, "q": 1}; !reflect.DeepEqual(snap.MaxPoolMembers, want) {
				t.Errorf("max pool members %v, want %v", snap.MaxPoolMembers, want)
			}
		},
	}})
}

func TestPodEvents(t *testing.T) {
	none := time.Time{}
	runHandlerCases(t, []handlerCase{{
		name: "lifecycle: pending, scheduled, Ready, deleted",
		feed: func(s *recordertest.Stream) {
			s.Pods.Add(recordertest.Pod(ns, "p1", "a", "", at(0), none, none, false, 2))
			s.Pods.Modify(recordertest.Pod(ns, "p1", "a", "n1", at(0), at(1), none, false, 3))
			s.Pods.Modify(recordertest.Pod(ns, "p1", "a", "n1", at(0), at(1), at(2), false, 4))
			s.Pods.Modify(recordertest.Pod(ns, "p1", "a", "n1", at(0), at(1), at(2), true, 5))
			s.Pods.Delete(recordertest.Pod(ns, "p1", "a", "n1", at(0), at(1), at(2), true, 6))
		},
		ready: func(s recorder.Snapshot) bool { return !s.Pods[podUID("p1a")].Deleted.IsZero() },
		check: func(t *testing.T, rec *recorder.Recorder, snap recorder.Snapshot, w window) {
			p := snap.Pods[podUID("p1a")]
			if p.Name != "p1" || !p.Created.Equal(at(0)) || !p.Scheduled.Equal(at(1)) || !p.Ready.Equal(at(2)) || p.Node != "n1" {
				t.Errorf("pod %+v", p)
			}
			if !w.has(p.Observed) || !w.has(p.Deleted) || p.Deleted.Before(p.Observed) {
				t.Errorf("observed %v, deleted %v: want within [%v, %v]", p.Observed, p.Deleted, w.from, w.to)
			}
			wantCounts(t, rec, 0, 0, 1)
		},
	}, {
		// The sandbox controller re-creates an evicted pod under the same name: each UID is a pod.
		name: "evicted twice: three pods by UID",
		feed: func(s *recordertest.Stream) {
			for i, u := range []string{"a", "b"} {
				c := at(10 * i)
				s.Pods.Add(recordertest.Pod(ns, "p1", u, "n1", c, c, c.Add(time.Second), false, 10*i+2))
				s.Pods.Modify(recordertest.Pod(ns, "p1", u, "n1", c, c, c.Add(time.Second), true, 10*i+3))
				s.Pods.Delete(recordertest.Pod(ns, "p1", u, "n1", c, c, c.Add(time.Second), true, 10*i+4))
			}
			s.Pods.Add(recordertest.Pod(ns, "p1", "c", "n2", at(20), at(21), none, false, 30))
		},
		ready: hasPod(podUID("p1c")),
		check: func(t *testing.T, rec *recorder.Recorder, snap recorder.Snapshot, w window) {
			a, b, c := snap.Pods[podUID("p1a")], snap.Pods[podUID("p1b")], snap.Pods[podUID("p1c")]
			if !w.has(a.Deleted) || !w.has(b.Deleted) || !c.Deleted.IsZero() {
				t.Errorf("deleted: a %v, b %v, c %v; want a and b only", a.Deleted, b.Deleted, c.Deleted)
			}
			if !a.Ready.Equal(at(1)) || !b.Created.Equal(at(10)) || !b.Ready.Equal(at(11)) || !c.Scheduled.Equal(at(21)) || !c.Ready.IsZero() || c.Node != "n2" {
				t.Errorf("pods a %+v, b %+v, c %+v", a, b, c)
			}
			for _, p := range []recorder.Pod{a, b, c} {
				if p.Name != "p1" {
					t.Errorf("pod name %q, want p1", p.Name)
				}
			}
			wantCounts(t, rec, 0, 0, 3)
		},
	}, {
		// A delete and re-create while the watch was away reaches the handlers as one update whose
		// UID changed (a relist replaces the object under its name): the old pod is gone.
		name: "replaced under the same name without a delete event",
		feed: func(s *recordertest.Stream) {
			s.Pods.Add(recordertest.Pod(ns, "p1", "a", "n1", at(0), at(1), at(2), false, 2))
			s.Pods.Modify(recordertest.Pod(ns, "p1", "b", "", at(5), none, none, false, 9))
		},
		ready: hasPod(podUID("p1b")),
		check: func(t *testing.T, rec *recorder.Recorder, snap recorder.Snapshot, w window) {
			a, b := snap.Pods[podUID("p1a")], snap.Pods[podUID("p1b")]
			if !w.has(a.Deleted) || !a.Ready.Equal(at(2)) || a.Node != "n1" {
				t.Errorf("replaced pod %+v: want deleted when its replacement was seen", a)
			}
			if !b.Deleted.IsZero() || !b.Created.Equal(at(5)) || !b.Scheduled.IsZero() || b.Node != "" {
				t.Errorf("replacement %+v", b)
			}
			wantCounts(t, rec, 0, 0, 2)
		},
	}, {
		name: "delete of a never-seen pod records nothing",
		feed: func(s *recordertest.Stream) {
			s.Pods.Delete(recordertest.Pod(ns, "ghost", "a", "n1", at(0), at(1), none, true, 2))
			s.Pods.Add(recordertest.Pod(ns, "marker", "a", "", at(0), none, none, false, 3))
		},
		ready: hasPod(podUID("markera")),
		check: func(t *testing.T, rec *recorder.Recorder, snap recorder.Snapshot, _ window) {
			if _, ok := snap.Pods[podUID("ghosta")]; ok {
				t.Errorf("ghost recorded: %+v", snap.Pods[podUID("ghosta")])
			}
			wantCounts(t, rec, 0, 0, 1)
		},
	}, {
		// Out of order: an update of the same UID after its delete event (the informer hands it
		// over as an add) neither revives the pod nor counts it twice.
		name: "stale update after the delete: still deleted",
		feed: func(s *recordertest.Stream) {
			s.Pods.Add(recordertest.Pod(ns, "p1", "a", "n1", at(0), at(1), none, false, 2))
			s.Pods.Delete(recordertest.Pod(ns, "p1", "a", "n1", at(0), at(1), none, false, 4))
			s.Pods.Modify(recordertest.Pod(ns, "p1", "a", "n1", at(0), at(1), none, false, 3))
			s.Pods.Add(recordertest.Pod(ns, "marker", "a", "", at(0), none, none, false, 5))
		},
		ready: hasPod(podUID("markera")),
		check: func(t *testing.T, rec *recorder.Recorder, snap recorder.Snapshot, w window) {
			if p := snap.Pods[podUID("p1a")]; !w.has(p.Deleted) || !p.Scheduled.Equal(at(1)) {
				t.Errorf("pod %+v: want deleted, scheduled %v", p, at(1))
			}
			wantCounts(t, rec, 0, 0, 2)
		},
	}, {
		// Out of order: an older resourceVersion after a newer one keeps the first-seen times.
		name: "older resourceVersion after a newer one: times kept",
		feed: func(s *recordertest.Stream) {
			s.Pods.Add(recordertest.Pod(ns, "p1", "a", "n1", at(0), at(1), at(2), false, 12))
			s.Pods.Modify(recordertest.Pod(ns, "p1", "a", "", at(0), none, none, false, 11))
			s.Pods.Add(recordertest.Pod(ns, "marker", "a", "", at(0), none, none, false, 13))
		},
		ready: hasPod(podUID("markera")),
		check: func(t *testing.T, rec *recorder.Recorder, snap recorder.Snapshot, _ window) {
			if p := snap.Pods[podUID("p1a")]; !p.Scheduled.Equal(at(1)) || !p.Ready.Equal(at(2)) || !p.Created.Equal(at(0)) || !p.Deleted.IsZero() {
				t.Errorf("pod %+v", p)
			}
			wantCounts(t, rec, 0, 0, 2)
		},
	}})
}

func TestPoolEvents(t *testing.T) {
	type sample struct{ desired, replicas, ready int64 }
	samples := func(ps []recorder.PoolSample) []sample {
		var out []sample
		for _, p := range ps {
			out = append(out, sample{p.Desired, p.Replicas, p.Ready})
		}
		return out
	}
	checkAt := func(t *testing.T, ps []recorder.PoolSample, w window) {
		t.Helper()
		for i, p := range ps {
			if !w.has(p.At) || (i > 0 && p.At.Before(ps[i-1].At)) {
				t.Errorf("sample %d at %v: want within [%v, %v], in order", i, p.At, w.from, w.to)
			}
		}
	}
	runHandlerCases(t, []handlerCase{{
		name: "fill: one sample per change, PoolReady is the last",
		feed: func(s *recordertest.Stream) {
			s.Pools.Add(recordertest.Pool(ns, "p", 3, 0, 0, 2))
			s.Pools.Modify(recordertest.Pool(ns, "p", 3, 1, 0, 3))
			s.Pools.Modify(recordertest.Pool(ns, "p", 3, 2, 1, 4))
			s.Pools.Modify(recordertest.Pool(ns, "p", 3, 3, 3, 5))
			s.Pools.Modify(recordertest.Pool(ns, "p", 3, 3, 3, 6))
			s.Pools.Add(recordertest.Pool(ns, "marker", 1, 0, 0, 7))
		},
		ready: func(s recorder.Snapshot) bool { return len(s.Pools["marker"]) == 1 },
		check: func(t *testing.T, rec *recorder.Recorder, snap recorder.Snapshot, w window) {
			want := []sample{{3, 0, 0}, {3, 1, 0}, {3, 2, 1}, {3, 3, 3}}
			if got := samples(snap.Pools["p"]); !reflect.DeepEqual(got, want) {
				t.Errorf("samples %v, want %v", got, want)
			}
			checkAt(t, snap.Pools["p"], w)
			if r, n := rec.PoolReady("p"); r != 3 || n != 3 {
				t.Errorf("PoolReady(p) = %d, %d; want 3, 3", r, n)
			}
			if r, n := rec.PoolReady("absent"); r != 0 || n != 0 {
				t.Errorf("PoolReady(absent) = %d, %d; want 0, 0", r, n)
			}
		},
	}, {
		name: "scaled: a new desired count is a sample",
		feed: func(s *recordertest.Stream) {
			s.Pools.Add(recordertest.Pool(ns, "p", 3, 3, 3, 2))
			s.Pools.Modify(recordertest.Pool(ns, "p", 5, 3, 3, 3))
			s.Pools.Modify(recordertest.Pool(ns, "p", 5, 5, 4, 4))
		},
		ready: func(s recorder.Snapshot) bool { return len(s.Pools["p"]) == 3 },
		check: func(t *testing.T, rec *recorder.Recorder, snap recorder.Snapshot, w window) {
			want := []sample{{3, 3, 3}, {5, 3, 3}, {5, 5, 4}}
			if got := samples(snap.Pools["p"]); !reflect.DeepEqual(got, want) {
				t.Errorf("samples %v, want %v", got, want)
			}
			checkAt(t, snap.Pools["p"], w)
			if r, n := rec.PoolReady("p"); r != 4 || n != 5 {
				t.Errorf("PoolReady(p) = %d, %d; want 4, 5", r, n)
			}
		},
	}, {
		name: "two pools sampled apart",
		feed: func(s *recordertest.Stream) {
			s.Pools.Add(recordertest.Pool(ns, "p", 2, 2, 2, 2))
			s.Pools.Add(recordertest.Pool(ns, "q", 1, 1, 0, 3))
		},
		ready: func(s recorder.Snapshot) bool { return len(s.Pools["p"]) == 1 && len(s.Pools["q"]) == 1 },
		check: func(t *testing.T, rec *recorder.Recorder, snap recorder.Snapshot, _ window) {
			if r, n := rec.PoolReady("p"); r != 2 || n != 2 {
				t.Errorf("PoolReady(p) = %d, %d; want 2, 2", r, n)
			}
			if r, n := rec.PoolReady("q"); r != 0 || n != 1 {
				t.Errorf("PoolReady(q) = %d, %d; want 0, 1", r, n)
			}
		},
	}, {
		// Out of order: PoolReady is the last status observed, whatever its resourceVersion.
		name: "older status after a newer one: the last event wins",
		feed: func(s *recordertest.Stream) {
			s.Pools.Add(recordertest.Pool(ns, "p", 3, 3, 3, 5))
			s.Pools.Modify(recordertest.Pool(ns, "p", 3, 2, 2, 4))
		},
		ready: func(s recorder.Snapshot) bool { return len(s.Pools["p"]) == 2 },
		check: func(t *testing.T, rec *recorder.Recorder, snap recorder.Snapshot, _ window) {
			if r, n := rec.PoolReady("p"); r != 2 || n != 2 {
				t.Errorf("PoolReady(p) = %d, %d; want 2, 2", r, n)
			}
		},
	}, {
		// Pools have no delete handler: the samples stay.
		name: "deleted: samples stay",
		feed: func(s *recordertest.Stream) {
			s.Pools.Add(recordertest.Pool(ns, "p", 2, 2, 1, 2))
			s.Pools.Delete(recordertest.Pool(ns, "p", 2, 2, 1, 3))
			s.Pools.Add(recordertest.Pool(ns, "marker", 1, 0, 0, 4))
		},
		ready: func(s recorder.Snapshot) bool { return len(s.Pools["marker"]) == 1 },
		check: func(t *testing.T, rec *recorder.Recorder, snap recorder.Snapshot, _ window) {
			if r, n := rec.PoolReady("p"); r != 1 || n != 2 || len(snap.Pools["p"]) != 1 {
				t.Errorf("PoolReady(p) = %d, %d, samples %v; want 1, 2, one sample", r, n, snap.Pools["p"])
			}
		},
	}})
}

// Events of different resources are handled in no set order: a claim may be seen Ready before its
// sandbox or pod, or after. The recorder does not join them; each record stands on its own.
func TestClaimSandboxPodOrder(t *testing.T) {
	none := time.Time{}
	claim := func(s *recordertest.Stream) {
		s.Claims.Add(recordertest.Claim(ns, "c1", "p", "", at(0), none, 2))
		s.Claims.Modify(recordertest.Claim(ns, "c1", "p", "m1", at(0), at(3), 3))
	}
	sandbox := func(s *recordertest.Stream) {
		s.Sandboxes.Add(recordertest.Sandbox(ns, "m1", "SandboxWarmPool/p", "", at(0), false, 2))
		s.Sandboxes.Modify(recordertest.Sandbox(ns, "m1", "SandboxClaim/c1", "warm", at(0), false, 3))
	}
	pod := func(s *recordertest.Stream) {
		s.Pods.Add(recordertest.Pod(ns, "m1", "a", "n1", at(0), at(1), at(2), false, 2))
	}
	ready := func(s recorder.Snapshot) bool {
		return !s.Claims["c1"].Ready.IsZero() && s.Sandboxes["m1"].Owner == "SandboxClaim/c1" && !s.Pods[podUID("m1a")].Ready.IsZero()
	}
	check := func(t *testing.T, rec *recorder.Recorder, snap recorder.Snapshot, w window) {
		c, sb, p := snap.Claims["c1"], snap.Sandboxes["m1"], snap.Pods[podUID("m1a")]
		if c.Sandbox != "m1" || !w.has(c.Bound) || !c.ServerReady.Equal(at(3)) {
			t.Errorf("claim %+v", c)
		}
		if !sb.FromPool || sb.LaunchType != "warm" || sb.Deleted {
			t.Errorf("sandbox %+v", sb)
		}
		if p.Name != "m1" || p.Node != "n1" || !p.Ready.Equal(at(2)) {
			t.Errorf("pod %+v", p)
		}
		if got := snap.MaxPoolMembers["p"]; got != 1 {
			t.Errorf("max pool members %d, want 1", got)
		}
		wantCounts(t, rec, 1, 1, 1)
	}
	runHandlerCases(t, []handlerCase{{
		name:  "claim Ready sent before its sandbox and pod",
		feed:  func(s *recordertest.Stream) { claim(s); sandbox(s); pod(s) },
		ready: ready, check: check,
	}, {
		name:  "sandbox and pod sent before the claim",
		feed:  func(s *recordertest.Stream) { pod(s); sandbox(s); claim(s) },
		ready: ready, check: check,
	}})
}

// A watch that expires makes the informer relist; objects missing from the new list reach the
// delete handlers as DeletedFinalStateUnknown, which the recorder unwraps.
func TestRelistDeletesVanishedObjects(t *testing.T) {
	rec, s := start(t)
	from := time.Now()
	s.Sandboxes.Add(recordertest.Sandbox(ns, "m1", "SandboxWarmPool/p", "", at(0), false, 2))
	s.Sandboxes.Add(recordertest.Sandbox(ns, "m2", "SandboxWarmPool/p", "", at(0), false, 3))
	s.Pods.Add(recordertest.Pod(ns, "m1", "a", "n1", at(0), at(1), at(2), false, 2))
	waitSnap(t, rec, "objects", func(s recorder.Snapshot) bool { return len(s.Sandboxes) == 2 && len(s.Pods) == 1 })
	gone := &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired, Message: "too old resource version"}
	s.Sandboxes.Error(gone)
	s.Pods.Error(gone)
	snap := waitSnap(t, rec, "deletions after the relist", func(s recorder.Snapshot) bool {
		return s.Sandboxes["m1"].Deleted && s.Sandboxes["m2"].Deleted && !s.Pods[podUID("m1a")].Deleted.IsZero()
	})
	w := window{from, time.Now()}
	if p := snap.Pods[podUID("m1a")]; !w.has(p.Deleted) || !p.Ready.Equal(at(2)) {
		t.Errorf("pod %+v", p)
	}
	if got := snap.MaxPoolMembers["p"]; got != 2 {
		t.Errorf("max pool members %d, want 2", got)
	}
	wantCounts(t, rec, 0, 2, 1)
}

func TestWaitFor(t *testing.T) {
	rec, s := start(t)
	ctx := context.Background()
	if !rec.WaitFor(ctx, time.Hour, func() bool { return true }) {
		t.Error("WaitFor with a true condition = false")
	}
	begin := time.Now()
	if rec.WaitFor(ctx, 50*time.Millisecond, func() bool { return false }) {
		t.Error("WaitFor with a false condition = true")
	}
	if d := time.Since(begin); d < 50*time.Millisecond || d > 5*time.Second {
		t.Errorf("WaitFor(50ms) returned after %v", d)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if rec.WaitFor(cancelled, time.Hour, func() bool { return false }) {
		t.Error("WaitFor on a cancelled context = true")
	}
	// The condition is checked again after an observation, well before the 1 s tick.
	s.Pools.Add(recordertest.Pool(ns, "p", 2, 2, 2, 2))
	if !rec.WaitFor(ctx, 10*time.Second, func() bool { r, _ := rec.PoolReady("p"); return r >= 2 }) {
		t.Errorf("PoolReady never reached 2: %+v", rec.Snapshot().Pools)
	}
	select { // the pool's signal, if WaitFor left it
	case <-rec.Changed():
	default:
	}
	s.Claims.Add(recordertest.Claim(ns, "c1", "p", "", at(0), time.Time{}, 2))
	select {
	case <-rec.Changed():
	case <-time.After(10 * time.Second):
		t.Error("Changed() not signalled after an observation")
	}
}

// Refill: a claim that took a sandbox seen before T0 is a slot to replace; only pool-created
// sandboxes first seen at or after T0 replace it (the pool's status can still read "full" from
// before the burst: seen on the lab's real node, where a delayed refill was then never waited for).
func TestRefillCounts(t *testing.T) {
	rec, s := start(t)
	s.Sandboxes.Add(recordertest.Sandbox(ns, "m1", "SandboxWarmPool/p", "", at(0), false, 2))
	s.Sandboxes.Add(recordertest.Sandbox(ns, "m2", "SandboxWarmPool/p", "", at(0), false, 3))
	s.Sandboxes.Add(recordertest.Sandbox(ns, "before-marker", "SandboxClaim/x", "", at(0), false, 4))
	waitSnap(t, rec, "members", hasSandbox("before-marker"))
	time.Sleep(5 * time.Millisecond)
	tBurst := time.Now()
	time.Sleep(5 * time.Millisecond)
	s.Claims.Add(recordertest.Claim(ns, "c1", "p", "m1", at(1), at(2), 5))
	s.Claims.Add(recordertest.Claim(ns, "c2", "p", "m2", at(1), at(2), 6))
	waitSnap(t, rec, "claims", func(sn recorder.Snapshot) bool { return sn.Claims["c2"].Sandbox == "m2" })
	if created, taken := rec.Refill(tBurst); created != 0 || taken != 2 {
		t.Fatalf("after the burst: created %d, taken %d; want 0, 2", created, taken)
	}
	s.Sandboxes.Add(recordertest.Sandbox(ns, "r1", "SandboxWarmPool/p", "", at(3), false, 7))
	s.Sandboxes.Add(recordertest.Sandbox(ns, "cold1", "SandboxClaim/c9", "cold", at(3), false, 8))
	s.Sandboxes.Add(recordertest.Sandbox(ns, "r2", "SandboxWarmPool/p", "", at(3), false, 9))
	waitSnap(t, rec, "refill", hasSandbox("r2"))
	if created, taken := rec.Refill(tBurst); created != 2 || taken != 2 {
		t.Fatalf("after the refill: created %d, taken %d; want 2, 2 (a claim-created sandbox is no refill)", created, taken)
	}
}
