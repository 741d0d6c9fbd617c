package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/stats"
	"github.com/brakebench/brakebench/suites"
)

// plan states the design, the range of cells, and with an earlier run the duration range from
// its cell times and the repetitions a 20% p99 change needs at its spread; the noisier the
// earlier run, the more repetitions.
func TestPlanEstimate(t *testing.T) {
	cfg := &config.Resolved{Config: config.Default()}
	cfg.Matrix.Repetitions, cfg.Matrix.Warmup = 10, 1
	design := &stats.Sequential{Alpha: 0.05, MinReps: 3, MaxReps: 10, Spending: stats.SpendPocock, EquivalencePct: 15}
	plan := &suites.Plan{Design: design}
	for _, n := range []string{"none", "both"} {
		for r := 1; r <= 10; r++ {
			plan.Cells = append(plan.Cells, suites.PlannedCell{Name: n, Rep: r})
		}
	}
	earlier := func(spread float64) *results.Results {
		r := &results.Results{Baseline: "none"}
		for rep := 1; rep <= 6; rep++ {
			c := results.Cell{Name: "none", Rep: rep, Phases: map[string]float64{"total": 60}}
			k := 1 + spread*float64(rep%3-1)
			for i := 0; i < 100; i++ {
				l := (500 + 5*float64(i)) * k
				c.Claims = append(c.Claims, results.Claim{Name: fmt.Sprint(i), LatencyMS: &l, LaunchType: "warm"})
			}
			r.Cells = append(r.Cells, c)
		}
		r.Summary = analysis.Summarize(r.Cells, []string{"none"}, "none", 1)
		return r
	}
	reps := map[float64]int{}
	for _, spread := range []float64{0.05, 0.2} {
		var b bytes.Buffer
		planEstimate(&b, cfg, plan, earlier(spread), "earlier.json", 20)
		out := b.String()
		for _, want := range []string{"design: sequential design: a look after every round from 3 to 10", "cells: 6-20", "+ 1 warm-up", "duration: 7m0s-21m0s", "a 20% change of claim p99 at 80% power needs about"} {
			if !strings.Contains(out, want) {
				t.Errorf("spread %v: plan output lacks %q:\n%s", spread, want, out)
			}
		}
		i := strings.Index(out, "needs about ")
		var n int
		if _, err := fmt.Sscanf(out[i+len("needs about "):], "%d", &n); i < 0 || err != nil {
			t.Fatalf("no repetitions number in %q", out)
		}
		reps[spread] = n
	}
	if !(reps[0.05] < reps[0.2]) {
		t.Errorf("repetitions needed: %v; a noisier earlier run must need more", reps)
	}
	var b bytes.Buffer
	planEstimate(&b, cfg, plan, nil, "", 20)
	if !strings.Contains(b.String(), "pass --from") {
		t.Errorf("without --from: %s", b.String())
	}
}

// With the paired design, plan reads the spread of the per-round ratio to the baseline: on a
// run whose rounds move both cells together (a 20% round effect), it needs fewer repetitions
// than the two-sample spread says, and it names which spread it used.
func TestPlanEstimatePaired(t *testing.T) {
	cfg := &config.Resolved{Config: config.Default()}
	cfg.Matrix.Repetitions = 10
	earlier := &results.Results{Baseline: "none"}
	for rep := 1; rep <= 6; rep++ {
		k := 1 + 0.2*float64(rep%3-1) // the round's shared conditions
		for _, cell := range []struct {
			name string
			f    float64
		}{{"none", 1}, {"both", 0.8 * (1 + 0.02*float64(rep%2))}} {
			c := results.Cell{Name: cell.name, Rep: rep, Phases: map[string]float64{"total": 60}}
			for i := 0; i < 100; i++ {
				l := (500 + 5*float64(i)) * k * cell.f
				c.Claims = append(c.Claims, results.Claim{Name: fmt.Sprint(i), LatencyMS: &l, LaunchType: "warm"})
			}
			earlier.Cells = append(earlier.Cells, c)
		}
	}
	earlier.Summary = analysis.Summarize(earlier.Cells, []string{"none", "both"}, "none", 1)
	reps := map[bool]int{}
	for _, paired := range []bool{false, true} {
		design := &stats.Sequential{Alpha: 0.05, MinReps: 3, MaxReps: 10, Spending: stats.SpendPocock, EquivalencePct: 15, Paired: paired}
		var b bytes.Buffer
		planEstimate(&b, cfg, &suites.Plan{Design: design}, earlier, "earlier.json", 20)
		out := b.String()
		if want := "(paired design)"; paired != strings.Contains(out, want) {
			t.Errorf("paired %v: output and %q:\n%s", paired, want, out)
		}
		i := strings.Index(out, "needs about ")
		if i < 0 {
			t.Fatalf("no repetitions in %q", out)
		}
		var n int
		if _, err := fmt.Sscanf(out[i+len("needs about "):], "%d", &n); err != nil {
			t.Fatalf("no repetitions number in %q", out)
		}
		reps[paired] = n
	}
	if !(reps[true] < reps[false]) {
		t.Errorf("repetitions needed (unpaired, paired): %d, %d; pairing by round must need fewer here", reps[false], reps[true])
	}
}
