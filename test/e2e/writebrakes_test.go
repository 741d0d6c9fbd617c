//go:build e2e

package e2e

import (
	"strings"
	"testing"
)

// TestWriteShapingBrakesOnTheLab runs every write-shaping brake once at v0.5.3 and v0.5.5 on
// the lab: at v0.5.5 each runs, the one a cell can judge (no Event about a claim) shows engaged,
// and the rest state why one cell cannot judge them; at v0.5.3 the
// brakes whose flags its main.go does not define are not applicable, never a crashing controller.
func TestWriteShapingBrakesOnTheLab(t *testing.T) {
	brakes := []string{"disable-claim-observability-annotations", "disable-claim-events", "write-behind-window", "kube-api-qps",
		"separate-watch-connection", "api-connections", "cache-label-selectors"}
	r := runSuite(t, "warmpool-burst", "workload.pool=10", "workload.claims=10", "matrix.repetitions=1", "matrix.warmup=0",
		"controller.versions=v0.5.3,v0.5.5", "matrix.brakes=none,"+strings.Join(brakes, ","))
	byName := map[string]int{}
	for i, c := range r.Cells {
		byName[c.Name] = i
	}
	judged := map[string]bool{"disable-claim-events": true}
	inV053 := map[string]bool{"kube-api-qps": true, "cache-label-selectors": true}
	for _, b := range brakes {
		for _, v := range []string{"v0.5.3", "v0.5.5"} {
			i, ok := byName[b+"@"+v]
			if !ok {
				t.Errorf("no cell %s@%s", b, v)
				continue
			}
			c := r.Cells[i]
			if v == "v0.5.3" && !inV053[b] {
				if !strings.Contains(c.NotApplicable, "has no --") {
					t.Errorf("%s: want not applicable at v0.5.3, got %q (error %q)", c.Name, c.NotApplicable, c.Error)
				}
				continue
			}
			if c.Error != "" || c.NotApplicable != "" {
				t.Errorf("%s: error %q, not applicable %q", c.Name, c.Error, c.NotApplicable)
				continue
			}
			t.Logf("%s: engaged %v: %s", c.Name, deref(c.Stats.BrakeEngaged), c.Stats.BrakeEvidence)
			switch {
			case judged[b] && (c.Stats.BrakeEngaged == nil || !*c.Stats.BrakeEngaged):
				t.Errorf("%s: want engaged, got %v (%s)", c.Name, deref(c.Stats.BrakeEngaged), c.Stats.BrakeEvidence)
			case !judged[b] && (c.Stats.BrakeEngaged != nil || !strings.Contains(c.Stats.BrakeEvidence, "not judged in one cell")):
				t.Errorf("%s: want a stated reason it is not judged, got %v (%s)", c.Name, deref(c.Stats.BrakeEngaged), c.Stats.BrakeEvidence)
			}
		}
	}
	// The baseline cell at v0.5.5 shows the claim Events and the annotation the two claim brakes act on.
	if i, ok := byName["none@v0.5.5"]; ok {
		c := r.Cells[i]
		if c.Stats.ClaimEvents == nil || *c.Stats.ClaimEvents == 0 || c.Stats.ClaimAnnotations["agents.x-k8s.io/controller-first-observed-at"] == 0 {
			t.Errorf("none@v0.5.5: claim Events %v, annotations %v: the controller's own writes were not seen", c.Stats.ClaimEvents, c.Stats.ClaimAnnotations)
		}
	}
}

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}
