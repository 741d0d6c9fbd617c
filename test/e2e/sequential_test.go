//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSequentialOnTheLab runs a shrunken sequential matrix on the lab in which one cell must stop
// at the first look and one must run to the planned maximum (4). The early one is kube-api-qps
// at 5 requests/s (burst 5): the controller's client-side token bucket spaces the requests of a
// 20-claim burst over many seconds, a slowdown that dominates claim latency and is about the same
// in every repetition. At 20 requests/s (CI, 2026-12-03) it was +175% at p99, settled at the
// first look with p=0.012 against a boundary near 0.03: too close to rely on. An APF throttle is
// worse: its cell's p99 (the slowest of 20 claims) varied from 1.5 to 6.6 s between repetitions
// and settled only at the 4th or 6th look. The cell that runs to the maximum is an A/A copy of the
// baseline (none_2): nothing differs, so with the equivalence stop off it runs to the maximum
// unless the rule makes a false positive (at most 5% by the A/A simulations); the baseline runs
// while any compared cell runs. The `both` cell (the two refill brakes) once looked like a second
// no-effect cell, but it restarts the controller with its flags just before the burst, and a CI
// run (2026-12-05) settled it at 3 repetitions as p99 +52% [+12, +107] (p=0.028): it may stop
// either way, so the test only requires that one of the two compared cells without a large effect
// runs to the maximum. Its refill, capped at 0.2 creates/s (20 slots: ~100 s), cannot finish
// within the 40 s refill timeout: it is ended by projection, never recorded as refilled. The
// report and the terminal say how each cell stopped.
func TestSequentialOnTheLab(t *testing.T) {
	r, dir, stdout := runSuiteOut(t, "warmpool-burst", "workload.pool=20", "workload.claims=20",
		"matrix.brakes=none,none,kube-api-qps,both", "matrix.repetitions=4", "matrix.minRepetitions=3",
		"matrix.equivalence=0", "matrix.seed=11", "brakes.kubeAPIQPS=5", "brakes.kubeAPIBurst=5",
		"brakes.maxRefillRate=0.2", "brakes.replenishDelay=2s", "workload.refillTimeout=40s")
	if r.Design == nil || r.Design.MinReps != 3 || r.Design.MaxReps != 4 {
		t.Fatalf("design %+v", r.Design)
	}
	reps := map[string]int{}
	for _, c := range r.Cells {
		if c.Error != "" {
			t.Errorf("%s: %s", c.ID, c.Error)
		}
		reps[c.Name]++
	}
	stop := map[string]string{}
	for _, s := range r.Summary {
		if s.Stopping == nil {
			t.Fatalf("%s: no stopping record", s.Name)
		}
		stop[s.Name] = s.Stopping.Reason
		t.Logf("%s: %d repetitions, %s: %s", s.Name, s.Stopping.Reps, s.Stopping.Reason, s.Stopping.Detail)
		if s.Verdict != nil {
			for _, m := range s.Verdict.Metrics {
				t.Logf("  %s", m.Text)
			}
		}
	}
	if stop["kube-api-qps"] != "effect" || reps["kube-api-qps"] != 3 {
		t.Errorf("kube-api-qps: %d repetitions, stopped for %q; want effect at the first look (3)", reps["kube-api-qps"], stop["kube-api-qps"])
	}
	if (stop["none_2"] != "max" || reps["none_2"] != 4) && (stop["both"] != "max" || reps["both"] != 4) || reps["none"] != 4 {
		t.Errorf("none_2 (A/A): %d repetitions (%q), both %d (%q), none %d; want one of the two and the baseline at the maximum 4",
			reps["none_2"], stop["none_2"], reps["both"], stop["both"], reps["none"])
	}
	for _, c := range r.Cells {
		if c.Name != "both" || c.Error != "" {
			continue
		}
		// (RefillProjectedSeconds is null when the window saw no create at all: projected never.)
		if c.Stats.RefillSeconds != nil || c.Stats.RefillEndedSeconds == nil || !strings.Contains(c.Stats.RefillProjection, "refill projected") {
			t.Errorf("%s: refill %v ended %v (%q); want it ended by projection, not refilled", c.ID, c.Stats.RefillSeconds, c.Stats.RefillEndedSeconds, c.Stats.RefillProjection)
		} else if *c.Stats.RefillEndedSeconds >= 40 {
			t.Errorf("%s: ended at %.1f s, not before the 40 s timeout", c.ID, *c.Stats.RefillEndedSeconds)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"stopped after 3 repetitions: p99 slower", "planned maximum of 4"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report lacks %q", want)
		}
		if !strings.Contains(stdout, want) {
			t.Errorf("terminal output lacks %q", want)
		}
	}
}
