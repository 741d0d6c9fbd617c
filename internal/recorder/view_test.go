package recorder_test

import (
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/brakebench/brakebench/internal/recorder"
	"github.com/brakebench/brakebench/internal/recorder/recordertest"
)

// A View reads what a Snapshot copies: every Observations method agrees on both, for the
// recorder's records read in place and for the copy.
func TestViewReadsWhatSnapshotCopies(t *testing.T) {
	rec, s := start(t)
	none := time.Time{}
	s.Pools.Add(recordertest.Pool(ns, "p", 2, 2, 2, 2))
	s.Sandboxes.Add(recordertest.Sandbox(ns, "m1", "SandboxWarmPool/p", "", at(0), false, 2))
	s.Sandboxes.Add(recordertest.Sandbox(ns, "m2", "SandboxWarmPool/p", "", at(0), false, 3))
	s.Sandboxes.Modify(recordertest.Sandbox(ns, "m1", "SandboxClaim/c1", "warm", at(0), false, 4))
	s.Sandboxes.Add(recordertest.Sandbox(ns, "marker", "SandboxClaim/c2", "cold", at(1), true, 5))
	s.Claims.Add(recordertest.Claim(ns, "c1", "p", "", at(0), none, 2))
	s.Claims.Modify(recordertest.Claim(ns, "c1", "p", "m1", at(0), at(3), 3))
	s.Claims.Add(recordertest.Claim(ns, "c2", "p", "", at(1), none, 4))
	s.Pods.Add(recordertest.Pod(ns, "m1", "a", "n1", at(0), at(1), at(2), false, 2))
	s.Pods.Add(recordertest.Pod(ns, "m2", "a", "", at(0), none, none, false, 3))
	s.Pools.Modify(recordertest.Pool(ns, "p", 2, 1, 1, 6))
	snap := waitSnap(t, rec, "objects", func(s recorder.Snapshot) bool {
		return len(s.Pools["p"]) == 2 && len(s.Claims) == 2 && len(s.Sandboxes) == 3 && len(s.Pods) == 2 && !s.Claims["c1"].Ready.IsZero()
	})

	var viewed recorder.Snapshot
	rec.Read(func(v recorder.View) { viewed = v.Snapshot() })
	for _, tc := range []struct {
		name string
		obs  recorder.Observations
	}{{"snapshot", snap}, {"view's snapshot", viewed}} {
		t.Run(tc.name, func(t *testing.T) {
			rec.Read(func(v recorder.View) { sameObservations(t, v, tc.obs) })
		})
	}
}

// sameObservations fails t where got and want differ.
func sameObservations(t *testing.T, got, want recorder.Observations) {
	t.Helper()
	for _, name := range []string{"c1", "c2", "absent"} {
		g, gok := got.ClaimNamed(name)
		w, wok := want.ClaimNamed(name)
		if gok != wok || !reflect.DeepEqual(g, w) {
			t.Errorf("claim %s: %+v %v, want %+v %v", name, g, gok, w, wok)
		}
	}
	for _, name := range []string{"m1", "m2", "marker", "absent"} {
		g, gok := got.SandboxNamed(name)
		w, wok := want.SandboxNamed(name)
		if gok != wok || !reflect.DeepEqual(g, w) {
			t.Errorf("sandbox %s: %+v %v, want %+v %v", name, g, gok, w, wok)
		}
	}
	if g, w := maps.Collect(got.EachClaim()), maps.Collect(want.EachClaim()); !reflect.DeepEqual(g, w) {
		t.Errorf("claims %+v, want %+v", g, w)
	}
	if g, w := maps.Collect(got.EachSandbox()), maps.Collect(want.EachSandbox()); !reflect.DeepEqual(g, w) {
		t.Errorf("sandboxes %+v, want %+v", g, w)
	}
	if g, w := maps.Collect(got.EachPod()), maps.Collect(want.EachPod()); !reflect.DeepEqual(g, w) {
		t.Errorf("pods %+v, want %+v", g, w)
	}
	if g, w := got.PoolSamples("p"), want.PoolSamples("p"); !reflect.DeepEqual(g, w) || len(g) != 2 {
		t.Errorf("pool samples %+v, want %+v (2)", g, w)
	}
	if g, w := got.PoolMembersMax("p"), want.PoolMembersMax("p"); g != w || g != 2 {
		t.Errorf("pool members max %d, want %d (2)", g, w)
	}
	if got.NumClaims() != want.NumClaims() || got.NumPods() != want.NumPods() || got.NumClaims() != 2 || got.NumPods() != 2 {
		t.Errorf("counts %d claims %d pods, want %d %d (2, 2)", got.NumClaims(), got.NumPods(), want.NumClaims(), want.NumPods())
	}
	// An iteration stopped early stops.
	n := 0
	for range got.EachSandbox() {
		n++
		break
	}
	if n != 1 {
		t.Errorf("stopped iteration ran %d times", n)
	}
}
