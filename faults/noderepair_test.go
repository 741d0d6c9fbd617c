package faults

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/nodechain"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/recorder"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/sut/karpenter"
)

// The pool's pods go to the repair NodePool: its label, its taint tolerated, a GPU request.
func TestNodeRepairPlacesThePool(t *testing.T) {
	cfg, err := config.Loader{Sets: []string{"faults.nodeRepair.gpusPerSandbox=2"}}.Load()
	if err != nil {
		t.Fatal(err)
	}
	f, _ := CellFaultNamed("node-repair")
	spec := map[string]any{"containers": []any{map[string]any{"name": "main", "image": "pause"}},
		"tolerations": []any{map[string]any{"key": "other", "operator": "Exists"}}}
	if err := f.(Placer).PlacePod(cfg, spec); err != nil {
		t.Fatal(err)
	}
	if sel := spec["nodeSelector"].(map[string]any); sel[karpenter.PoolLabel] != repairPool {
		t.Errorf("nodeSelector %v", sel)
	}
	if tols := spec["tolerations"].([]any); len(tols) != 2 || tols[1].(map[string]any)["key"] != repairTaint {
		t.Errorf("tolerations %v", tols)
	}
	res := spec["containers"].([]any)[0].(map[string]any)["resources"].(map[string]any)
	want := map[string]any{"nvidia.com/gpu": "2"}
	if !reflect.DeepEqual(res["requests"], want) || !reflect.DeepEqual(res["limits"], want) {
		t.Errorf("resources %v", res)
	}
	if err := f.(Placer).PlacePod(cfg, map[string]any{}); err == nil {
		t.Error("a template without a container was accepted")
	}
}

func TestMaxOverlap(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	for _, tc := range []struct {
		name  string
		spans [][2]time.Time
		want  int
	}{
		{"none", nil, 0},
		{"one", [][2]time.Time{{at(0), at(1)}}, 1},
		{"disjoint", [][2]time.Time{{at(0), at(1)}, {at(2), at(3)}}, 1},
		{"back to back", [][2]time.Time{{at(0), at(1)}, {at(1), at(2)}}, 1},
		{"nested", [][2]time.Time{{at(0), at(10)}, {at(1), at(2)}, {at(1.5), at(3)}}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := maxOverlap(tc.spans); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

// The repair cells' invariants are judged from what Karpenter did, and each can fail.
func TestNodeRepairJudge(t *testing.T) {
	armed := time.Unix(2000, 0)
	at := func(s float64) time.Time { return armed.Add(time.Duration(s * float64(time.Second))) }
	tol := 6 * time.Second
	// Five Ready nodes; n1 (and n2 above the breaker) faulted.
	nodes := func() map[string]nodechain.NodeTimes {
		m := map[string]nodechain.NodeTimes{}
		for _, n := range []string{"n1", "n2", "n3", "n4", "n5"} {
			m[n] = nodechain.NodeTimes{Name: n, Created: at(-60), Ready: at(-59)}
		}
		return m
	}
	repaired := func(node string, deleting float64) (nodechain.ClaimTimes, nodechain.NodeTimes) {
		return nodechain.ClaimTimes{Name: "c-" + node, Node: node, Created: at(-60), Deleting: at(deleting), Deleted: at(deleting + 1)},
			nodechain.NodeTimes{Name: "new-" + node, Created: at(deleting + 0.5), Ready: at(deleting + 2)}
	}
	type tcase struct {
		name    string
		blocked bool
		faulted []string
		tl      func() nodechain.Timeline
		held    []bool
		since   float64 // the condition's stored lastTransitionTime, from the arming (0: unread)
	}
	below := func(deleting ...float64) func() nodechain.Timeline {
		return func() nodechain.Timeline {
			tl := nodechain.Timeline{Claims: map[string]nodechain.ClaimTimes{}, Nodes: nodes()}
			for i, d := range deleting {
				n := []string{"n1", "n2"}[i]
				c, nn := repaired(n, d)
				tl.Claims[c.Name], tl.Nodes[nn.Name] = c, nn
			}
			return tl
		}
	}
	for _, tc := range []tcase{
		{"repaired after the toleration", false, []string{"n1"}, below(6.2), []bool{true, true, true}, 0},
		{"repaired before the toleration", false, []string{"n1"}, below(2), []bool{true, false, true}, 0},
		// Stored to the second: armed at .8 past a second, stored at the second before; a repair
		// 5.3 s after arming is 6.1 s after what Karpenter counts from.
		{"toleration from the stored transition", false, []string{"n1"}, below(5.3), []bool{true, true, true}, -0.8},
		{"early even from the stored transition", false, []string{"n1"}, below(4.9), []bool{true, false, true}, -0.8},
		{"not repaired", false, []string{"n1"}, below(), []bool{false, true, true}, 0},
		{"two repaired where one is allowed", false, []string{"n1", "n2"}, below(6.2, 6.5), []bool{true, true, false}, 0},
		// The burst's refill grew the pool to 10 nodes before the toleration ran out: two
		// unhealthy are within the allowance then (what Karpenter counts when it decides).
		{"two repaired after the pool grew", false, []string{"n1", "n2"}, func() nodechain.Timeline {
			tl := below(6.2, 6.5)()
			for _, n := range []string{"g1", "g2", "g3", "g4", "g5"} {
				tl.Nodes[n] = nodechain.NodeTimes{Name: n, Created: at(3), Ready: at(4)}
			}
			return tl
		}, []bool{true, true, true}, 0},
		{"breaker held", true, []string{"n1", "n2"}, func() nodechain.Timeline {
			tl := below()()
			tl.Blocked = []nodechain.Blocked{{At: at(-30), Node: "n9", Message: "earlier"}, {At: at(0.4), Node: "n1", Message: "more than 20% unhealthy"}}
			return tl
		}, []bool{true, true, true}, 0},
		{"breaker silent", true, []string{"n1", "n2"}, below(), []bool{true, false, true}, 0},
		{"breaker broken", true, []string{"n1", "n2"}, below(6.5), []bool{false, false, false}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := nodeRepairCell{name: "node-repair", blocked: tc.blocked}
			r := &repairCell{f: f, c: &Cell{Karpenter: &provider.Karpenter{Version: "v1.14.1"}}, cfg: nodeRepairKeys{TolerationScale: 0.01},
				sym: Symptom{Condition: "AcceleratedHardwareReady", Reason: "NvidiaXID79Error"}, tol: tol,
				armed: armed, nodes: tc.faulted, poolNodes: 5, threshold: karpenter.RepairThreshold(5), thresholdFor: 5}
			if tc.since != 0 {
				r.since = at(tc.since)
			}
			fs := r.judge(tc.tl(), recorder.Snapshot{})
			var got []bool
			for _, inv := range fs.Invariants {
				got = append(got, inv.Held)
			}
			if !reflect.DeepEqual(got, tc.held) {
				t.Errorf("held %v, want %v: %+v", got, tc.held, fs.Invariants)
			}
			rs := fs.Repair
			if rs.PoolNodes != 5 || rs.Threshold != 1 || rs.Faulted != len(tc.faulted) || rs.TolerationS != 6 || !strings.HasPrefix(rs.Condition, "AcceleratedHardwareReady=") {
				t.Errorf("repair stats %+v", rs)
			}
			if tc.name == "repaired after the toleration" {
				if rs.RepairS == nil || *rs.RepairS < 6.19 || *rs.RepairS > 6.21 || rs.ReplacementReadyS == nil || *rs.ReplacementReadyS < 8.19 || rs.Repaired != 1 {
					t.Errorf("chain %s %s repaired %d", results.FormatSecs(rs.RepairS), results.FormatSecs(rs.ReplacementReadyS), rs.Repaired)
				}
			}
			if tc.name == "breaker held" && (rs.BlockedS == nil || *rs.BlockedS < 0.39 || *rs.BlockedS > 0.41) {
				t.Errorf("blocked at %s (an event before the fault must not count)", results.FormatSecs(rs.BlockedS))
			}
		})
	}
}

// The nodes holding the most of the cell's pods are faulted first, ties by name; a node that
// already had a NodeRepairBlocked event (Karpenter would not report it again for 15 minutes) only
// when too few others are left.
func TestPickRepairNodes(t *testing.T) {
	pods := map[string]nodechain.PodTimes{
		"a": {Node: "n2"}, "b": {Node: "n2"}, "c": {Node: "n3"}, "d": {Node: "n1", Deleted: time.Unix(1, 0)},
	}
	blocked := func(nodes ...string) []nodechain.Blocked {
		var out []nodechain.Blocked
		for _, n := range nodes {
			out = append(out, nodechain.Blocked{At: time.Unix(2, 0), Node: n, Message: "more than 20% nodes are unhealthy in the nodepool"})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		blocked []nodechain.Blocked
		k       int
		want    []string
	}{
		{"by load, ties by name", nil, 3, []string{"n2", "n3", "n1"}},
		{"reported nodes last", blocked("n2", "n3"), 3, []string{"n1", "n4", "n2"}},
		{"all reported: by load", blocked("n1", "n2", "n3", "n4"), 2, []string{"n2", "n3"}},
		{"a NodePool's or NodeClaim's event names no node", blocked("NodePool/p", "NodeClaim/c"), 2, []string{"n2", "n3"}},
		{"more than live", blocked("n2"), 5, []string{"n3", "n1", "n4", "n2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := nodechain.Timeline{Pods: pods, Blocked: tc.blocked}
			if got := pickRepairNodes([]string{"n1", "n2", "n3", "n4"}, tl, tc.k); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// Displaced pods are followed to their successors (same name, created after they went); refill
// pods of new sandboxes do not count.
func TestNodeRepairDisplacedPods(t *testing.T) {
	armed := time.Unix(3000, 0)
	at := func(s float64) time.Time { return armed.Add(time.Duration(s * float64(time.Second))) }
	tl := nodechain.Timeline{
		Claims: map[string]nodechain.ClaimTimes{"c1": {Name: "c1", Node: "n1", Created: at(-60), Deleting: at(6.2), Deleted: at(6.4)}},
		Nodes:  map[string]nodechain.NodeTimes{"n1": {Name: "n1", Created: at(-60), Ready: at(-59), Deleted: at(6.4)}},
		Pods: map[string]nodechain.PodTimes{
			"u1": {Name: "sb-1", Node: "n1", Created: at(-50), Ready: at(-49), Deleted: at(6.3)},
			"u2": {Name: "sb-2", Node: "n1", Created: at(-50), Ready: at(-49), Deleted: at(6.3)},
			"u3": {Name: "sb-1", Node: "n2", Created: at(6.5), Ready: at(8)},
			"u4": {Name: "sb-2", Node: "n3", Created: at(6.5), Ready: at(9)},
			"u5": {Name: "sb-9", Node: "n3", Created: at(7), Ready: at(20)}, // a refill sandbox
		},
	}
	r := &repairCell{f: nodeRepairCell{name: "node-repair"}, c: &Cell{Karpenter: &provider.Karpenter{}}, tol: 6 * time.Second,
		armed: armed, nodes: []string{"n1"}, poolNodes: 5, threshold: 1}
	rs := r.judge(tl, recorder.Snapshot{}).Repair
	if rs.Displaced != 2 || rs.Recreated != 2 || rs.RecoveredS == nil || *rs.RecoveredS != 9 {
		t.Errorf("displaced %d, recreated %d, recovered %s; want 2, 2, 9.0 s", rs.Displaced, rs.Recreated, results.FormatSecs(rs.RecoveredS))
	}
	delete(tl.Pods, "u4")
	if rs := r.judge(tl, recorder.Snapshot{}).Repair; rs.Recreated != 1 || rs.RecoveredS != nil {
		t.Errorf("one not recreated: recreated %d, recovered %s; want 1 and none", rs.Recreated, results.FormatSecs(rs.RecoveredS))
	}
}
