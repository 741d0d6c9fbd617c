package suites

import (
	"testing"
	"time"

	"github.com/brakebench/brakebench/internal/nodechain"
	"github.com/brakebench/brakebench/internal/results"
)

// Each step's pods are traced to their node and NodeClaim; pods on nodes Ready before them count
// as served by existing nodes; consolidations are counted in the step they happen in.
func TestNodeSteps(t *testing.T) {
	t0 := time.Unix(5000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	tl := nodechain.Timeline{
		Claims: map[string]nodechain.ClaimTimes{
			"c0": {Name: "c0", Node: "n0", Created: at(-30)},
			"c1": {Name: "c1", Node: "n1", Created: at(11)},
			"c2": {Name: "c2", Node: "n2", Created: at(12)},
		},
		Nodes: map[string]nodechain.NodeTimes{
			"n0": {Name: "n0", Created: at(-29), Ready: at(-28)},
			"n1": {Name: "n1", Created: at(12), Ready: at(13), Deleted: at(27)},
			"n2": {Name: "n2", Created: at(13), Ready: at(14), Deleted: at(28)},
		},
		Pods: map[string]nodechain.PodTimes{
			"p0": {Name: "p0", Node: "n0", Created: at(-40), Ready: at(-27)}, // before the profile
			"p1": {Name: "p1", Node: "n0", Created: at(10), Ready: at(10.5)}, // headroom: existing node
			"p2": {Name: "p2", Node: "n1", Created: at(10), Ready: at(14)},
			"p3": {Name: "p3", Node: "n2", Created: at(10), Ready: at(16)},
			"p4": {Name: "p4", Created: at(12)}, // never Ready
		},
	}
	got := nodeSteps(tl, t0, 10*time.Second, 3, time.Time{})
	s0, s1, s2 := got[0], got[1], got[2]
	if s0.Pods != 0 || s0.ClaimsCreated != 0 || s0.ReadyNodes != 1 {
		t.Errorf("step 0: %+v", s0)
	}
	if s1.Pods != 3 || s1.OnExistingNodes != 1 || s1.ClaimsCreated != 2 || s1.ReadyNodes != 3 || s1.NodesDeleted != 0 {
		t.Errorf("step 1: %+v", s1)
	}
	// NodeClaim: 1 and 2 s after their pods (median of the two new-node pods: nearest rank);
	// node Ready 3 and 4 s; pod Ready 0.5, 4, 6 s.
	for _, c := range []struct {
		name string
		got  *float64
		lo   float64
		hi   float64
	}{{"NodeClaim", s1.NodeClaimS, 1, 2}, {"node Ready", s1.NodeReadyS, 3, 4}, {"pod Ready", s1.PodReadyS, 4, 4}} {
		if c.got == nil || *c.got < c.lo || *c.got > c.hi {
			t.Errorf("step 1 %s median %s, want %g-%g", c.name, results.FormatSecs(c.got), c.lo, c.hi)
		}
	}
	if s2.NodesDeleted != 2 || s2.ConsolidatedS == nil || *s2.ConsolidatedS != 8 || s2.ReadyNodes != 1 {
		t.Errorf("step 2: %+v (consolidated %s)", s2, results.FormatSecs(s2.ConsolidatedS))
	}
	if n := nodesFor(5, 8); n != 5 {
		t.Errorf("nodesFor(5, 8) = %d", n)
	}
	if n := nodesFor(9, 1); n != 2 {
		t.Errorf("nodesFor(9, 1) = %d", n)
	}
}

// The last step's node figures cover the tail the suite watched for consolidation: a node
// deleted after the step's nominal end counts when the tail reaches it, and not beyond the tail.
func TestNodeStepsTail(t *testing.T) {
	t0 := time.Unix(5000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	tl := nodechain.Timeline{
		Nodes: map[string]nodechain.NodeTimes{
			"n0": {Name: "n0", Created: at(-29), Ready: at(-28)},
			"n1": {Name: "n1", Created: at(1), Ready: at(2), Deleted: at(15)},
			"n2": {Name: "n2", Created: at(1), Ready: at(2), Deleted: at(34)},
		},
	}
	for _, c := range []struct {
		name    string
		lastEnd time.Time
		deleted int
		last    float64
		ready   int
	}{
		{"no tail", time.Time{}, 1, 5, 2},
		{"tail ending before the step", at(18), 1, 5, 2},
		{"tail past the second deletion", at(40), 2, 24, 1},
		{"tail ending before the second deletion", at(33), 1, 5, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := nodeSteps(tl, t0, 10*time.Second, 2, c.lastEnd)[1]
			if s.NodesDeleted != c.deleted || s.ConsolidatedS == nil || *s.ConsolidatedS != c.last || s.ReadyNodes != c.ready {
				t.Errorf("last step %+v (consolidated %s), want %d deleted, last %g s, %d Ready", s, results.FormatSecs(s.ConsolidatedS), c.deleted, c.last, c.ready)
			}
		})
	}
}
