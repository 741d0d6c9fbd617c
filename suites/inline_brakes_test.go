package suites

import (
	"reflect"
	"slices"
	"testing"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/config"
)

// Inline brake values (matrix.brakes=max-refill-rate=20,...): one plan holds several settings of
// one brake; each item is its cell's name and its brake axis, the cells carry the value as their
// setting and flag, and an A/A copy of an inline item is still found as one.
func TestPlanInlineBrakeValues(t *testing.T) {
	items := []string{"none", "max-refill-rate=20", "max-refill-rate=40", "replenish-delay=5s+max-refill-rate=40", "max-refill-rate=20"}
	cfg, err := config.Loader{Suite: "warmpool-burst", Sets: []string{"matrix.brakes=none,max-refill-rate=20,max-refill-rate=40,replenish-delay=5s+max-refill-rate=40,max-refill-rate=20",
		"matrix.repetitions=2", "matrix.seed=5", "matrix.sequential=false"}}.Load()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Matrix.Brakes, items) {
		t.Fatalf("matrix.brakes %v", cfg.Matrix.Brakes)
	}
	p, err := WarmpoolBurst().Plan(cfg, PlanContext{})
	if err != nil {
		t.Fatal(err)
	}
	wantNames := []string{"none", "max-refill-rate=20", "max-refill-rate=40", "replenish-delay=5s+max-refill-rate=40", "max-refill-rate=20_2"}
	if !reflect.DeepEqual(p.Names, wantNames) || p.Baseline != "none" || len(p.Cells) != 10 {
		t.Fatalf("names %v baseline %s cells %d", p.Names, p.Baseline, len(p.Cells))
	}
	if p.Axes["max-refill-rate=40"]["brake"] != "max-refill-rate=40" {
		t.Errorf("axes %v", p.Axes["max-refill-rate=40"])
	}
	want := map[string]struct {
		settings map[string]string
		flags    []string
	}{
		"max-refill-rate=20": {map[string]string{"max-refill-rate": "20"}, []string{"--sandbox-warm-pool-max-refill-rate=20"}},
		"max-refill-rate=40": {map[string]string{"max-refill-rate": "40"}, []string{"--sandbox-warm-pool-max-refill-rate=40"}},
		"replenish-delay=5s+max-refill-rate=40": {map[string]string{"max-refill-rate": "40", "replenish-delay": "5s"},
			[]string{"--sandbox-warm-pool-max-refill-rate=40", "--sandbox-warm-pool-replenish-delay=5s"}},
	}
	for _, c := range p.Cells {
		w, ok := want[c.Name]
		if !ok {
			continue
		}
		if !reflect.DeepEqual(c.Brake.Settings, w.settings) || !reflect.DeepEqual(c.Flags, w.flags) {
			t.Errorf("%s: settings %v flags %v, want %v %v", c.ID, c.Brake.Settings, c.Flags, w.settings, w.flags)
		}
		if slices.Contains(c.FillFlags, w.flags[0]) {
			t.Errorf("%s: the pool is filled with the brake's flags %v", c.ID, c.FillFlags)
		}
	}
	if got := analysis.AAPairs(p.Names); !reflect.DeepEqual(got, []analysis.AAPair{{Original: "max-refill-rate=20", Copy: "max-refill-rate=20_2"}}) {
		t.Errorf("A/A pairs %v", got)
	}
	// A value the brake refuses is bad input before anything runs, naming the item.
	bad, err := config.Loader{Suite: "warmpool-burst", Sets: []string{"matrix.brakes=none,max-refill-rate=-4"}}.Load()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WarmpoolBurst().Plan(bad, PlanContext{}); err == nil || !config.IsConfigError(err) {
		t.Errorf("max-refill-rate=-4: %v, want a config error", err)
	}
}
