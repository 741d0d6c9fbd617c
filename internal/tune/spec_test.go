package tune

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/config"
)

// The defaults are a search tune can run: the two refill brakes, claim p99, the suite's paired
// sequential design for the confirmation.
func TestDefaultSpec(t *testing.T) {
	sp := loadSpec(t)
	if len(sp.Dims) != 2 || sp.Dims[0].Brake != "max-refill-rate" || sp.Dims[1].Brake != "replenish-delay" {
		t.Fatalf("dims %+v", sp.Dims)
	}
	if sp.Objective != "claim.p99_ms" || sp.ObjectiveUnit != "ms" || sp.Budget != 40 || sp.ConfirmReps != 10 || !sp.Paired {
		t.Fatalf("spec %+v", sp)
	}
	if d := sp.Design; d.Fixed || !d.Paired || d.MinReps != 3 || d.MaxReps != 10 {
		t.Fatalf("confirmation design %+v", d)
	}
	// Not a verdict metric: the runner's stopping rule does not read it, so the fixed design.
	if d := loadSpec(t, "tune.objective=pool.refill_s").Design; !d.Fixed || d.MaxReps != 10 {
		t.Fatalf("pool.refill_s objective: design %+v", d)
	}
	// Three repetitions at most: one look, the fixed design.
	if d := loadSpec(t, "tune.confirmRepetitions=3").Design; !d.Fixed || d.MaxReps != 3 {
		t.Fatalf("3 repetitions: design %+v", d)
	}
	sp = loadSpec(t, "tune.brakes=replenish-delay,disable-claim-events", "tune.ranges=replenish-delay=1s..30s",
		"tune.objective=claim.p50", "tune.constraints=pool.refill<=60,cpu.kube-apiserver_s <= 1.1*baseline,efficiency.claims_per_apiserver_cpu_s>=baseline")
	if sp.Dims[0].Lo != 1 || sp.Dims[0].Hi != 30 || sp.Objective != "claim.p50_ms" {
		t.Fatalf("spec %+v", sp)
	}
	want := []Constraint{
		{Text: "pool.refill_s <= 60", Metric: "pool.refill_s", Unit: "s", Op: "<=", Bound: 60},
		{Text: "cpu.kube-apiserver_s <= 1.1*baseline", Metric: "cpu.kube-apiserver_s", Unit: "s", Op: "<=", Relative: true, Factor: 1.1},
		{Text: "efficiency.claims_per_apiserver_cpu_s >= baseline", Metric: "efficiency.claims_per_apiserver_cpu_s", Unit: "claims/cpu-s", Op: ">=", Relative: true, Factor: 1},
	}
	for i, c := range sp.Constraints {
		if c != want[i] {
			t.Errorf("constraint %d: %+v, want %+v", i, c, want[i])
		}
	}
}

// Bad tune input is a config error naming the key, where it came from and what was expected.
func TestSpecErrors(t *testing.T) {
	cases := []struct {
		sets []string
		want string
	}{
		{[]string{"tune.brakes=apf-insulation"}, `--set: key "tune.brakes": expected tunable brakes from api-connections, cache-label-selectors`},
		{[]string{"tune.brakes=warp-drive"}, `expected tunable brakes from`},
		{[]string{"tune.brakes=max-refill-rate,max-refill-rate"}, `brake "max-refill-rate" is listed twice`},
		{[]string{"tune.ranges=max-refill-rate=5"}, `--set: key "tune.ranges": expected items "BRAKE=LO..HI"`},
		{[]string{"tune.ranges=max-batch-size=5..50"}, `max-batch-size is not in tune.brakes`},
		{[]string{"tune.brakes=disable-claim-events", "tune.ranges=disable-claim-events=1..2"}, `is a switch (searched on and off) and has no range`},
		{[]string{"tune.ranges=max-refill-rate=50..5"}, `expected LO below HI`},
		{[]string{"tune.ranges=max-refill-rate=fast..5"}, `expected a number, got "fast"`},
		{[]string{"tune.ranges=replenish-delay=5..10"}, `expected a duration like 5s or 250ms, got "5"`},
		{[]string{"tune.ranges=max-refill-rate=5..80,max-refill-rate=1..2"}, `max-refill-rate has a range already`},
		{[]string{"tune.ranges=replenish-delay=1s..48h"}, `key "tune.ranges": the range of replenish-delay [1s, 48h0m0s] holds a setting the brake refuses: "replenish-delay=48h0m0s": replenish-delay=48h0m0s: expected a positive duration up to 24h`},
		{[]string{"tune.brakes=api-connections", "tune.ranges=api-connections=1..8"}, `expected 2 to 64 connections`},
		{[]string{"tune.objective=claims.failed"}, `key "tune.objective": expected a latency or duration metric`},
		{[]string{"tune.objective=claim.p999_ms"}, `key "tune.objective": expected a latency or duration metric`},
		{[]string{"tune.constraints=pool.refill_s=60"}, `key "tune.constraints": item 0: expected "METRIC<=VALUE"`},
		{[]string{"tune.constraints=pool.refil_s<=60"}, `unknown metric pool.refil_s (known here: pool.fill_s`},
		{[]string{"tune.constraints=pool.refill_s<=0*baseline"}, `expected a number, baseline or F*baseline (F above 0)`},
		{[]string{"tune.constraints=pool.refill_s<=soon"}, `expected a number, baseline or F*baseline`},
		{[]string{"tune.budget=1"}, `key "tune.budget": expected 2 to 10000 cells`},
		{[]string{"tune.budget=10", "tune.candidates=10"}, `key "tune.candidates": expected at most tune.budget-1 = 9`},
		{[]string{"tune.confirmRepetitions=2"}, `key "tune.confirmRepetitions": expected 3 to 1000`},
		{[]string{"tune.confirmRepetitions=60"}, `expected 3 to 50 with matrix.sequential true`},
		{[]string{"controller.versions=v0.5.5,v1.0.1"}, `key "controller.versions": expected at most one version for tune`},
		{[]string{"matrix.faults=none,apf-throttle"}, `key "matrix.faults": expected none for tune`},
		{[]string{"workload.mode=ceiling"}, `key "workload.mode": expected burst, poisson or steps for tune`},
	}
	for _, tc := range cases {
		cfg, err := config.Loader{Suite: "warmpool-burst", Sets: tc.sets}.Load()
		if err == nil {
			_, err = FromConfig(cfg)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !config.IsConfigError(err) {
			t.Errorf("%v: err %v, want a config error containing %q", tc.sets, err, tc.want)
		}
	}
	// From a file: file:line of the key.
	f := filepath.Join(t.TempDir(), "tune.yaml")
	if err := os.WriteFile(f, []byte("tune:\n  brakes: [max-refill-rate]\n  ranges:\n    - max-refill-rate=0..80\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Loader{Suite: "warmpool-burst", Files: []string{f}}.Load()
	if err == nil {
		_, err = FromConfig(cfg)
	}
	if err == nil || !strings.Contains(err.Error(), f+`:3: key "tune.ranges"`) || !strings.Contains(err.Error(), "expected LO below HI (and above 0") {
		t.Errorf("file: %v", err)
	}
}
