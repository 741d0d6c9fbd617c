package suites

import (
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/brakebench/brakebench/internal/config"
)

func TestPlanAxes(t *testing.T) {
	cfg, err := config.Loader{Sets: []string{"controller.versions=v0.5.3,v0.5.5", "matrix.brakes=none,max-refill-rate", "matrix.faults=none,gpu", "matrix.repetitions=2", "matrix.seed=11"}}.Load()
	if err != nil {
		t.Fatal(err)
	}
	supports := func(v, flag string) (bool, error) { return v != "v0.5.3", nil }
	p, err := WarmpoolBurst().Plan(cfg, PlanContext{Supports: supports})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"none@v0.5.3", "none@v0.5.3/gpu", "max-refill-rate@v0.5.3", "max-refill-rate@v0.5.3/gpu",
		"none@v0.5.5", "none@v0.5.5/gpu", "max-refill-rate@v0.5.5", "max-refill-rate@v0.5.5/gpu"}
	if !reflect.DeepEqual(p.Names, want) || p.Baseline != "none@v0.5.3" || len(p.Cells) != 16 || p.Seed != 11 {
		t.Fatalf("names %v baseline %s cells %d", p.Names, p.Baseline, len(p.Cells))
	}
	var na []string
	for _, c := range p.Cells {
		if c.NotApplicable != "" {
			na = append(na, c.ID)
		}
		if c.Name == "max-refill-rate@v0.5.5/gpu" && (c.Fault != "gpu" || c.Version != "v0.5.5" || c.Brake.MaxRefillRate != 10) {
			t.Errorf("cell %+v", c)
		}
	}
	sort.Strings(na)
	if fmt.Sprint(na) != "[max-refill-rate@v0.5.3#1 max-refill-rate@v0.5.3#2 max-refill-rate@v0.5.3/gpu#1 max-refill-rate@v0.5.3/gpu#2]" {
		t.Errorf("not applicable: %v", na)
	}
	again, _ := WarmpoolBurst().Plan(cfg, PlanContext{Supports: supports})
	for i := range p.Cells {
		if p.Cells[i].ID != again.Cells[i].ID {
			t.Fatal("the same seed must give the same order")
		}
	}
	if _, err := WarmpoolBurst().Plan(cfg, PlanContext{Supports: func(string, string) (bool, error) { return false, fmt.Errorf("v0.5.4 refused") }}); err == nil {
		t.Error("a version that cannot be had must fail the plan")
	}
	// ... also when no cell needs a brake flag from it.
	plain, _ := config.Loader{Sets: []string{"controller.version=v0.5.4", "matrix.brakes=none"}}.Load()
	if _, err := WarmpoolBurst().Plan(plain, PlanContext{Source: func(string) (string, error) { return "", fmt.Errorf("v0.5.4 refused") }}); err == nil {
		t.Error("a version that cannot be had must fail the plan even without brake cells")
	}
}

// Every registered suite has a default config that loads and plans.
func TestEverySuitePlans(t *testing.T) {
	reg := Default()
	if len(reg.Names()) < 4 {
		t.Fatalf("suites %v", reg.Names())
	}
	for _, name := range reg.Names() {
		cfg, err := config.Loader{Suite: name}.Load()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		s, _ := reg.Get(name)
		p, err := s.Plan(cfg, PlanContext{})
		if err != nil || len(p.Cells) == 0 || p.Baseline == "" {
			t.Errorf("%s: plan %+v %v", name, p, err)
		}
	}
	if _, err := reg.Get("nope"); err == nil {
		t.Error("unknown suite")
	}
}

// A brake listed twice is an A/A pair: identical cells under distinct names, the first copy the
// baseline, the copies run with the same flags.
func TestPlanAA(t *testing.T) {
	cfg, err := config.Loader{Sets: []string{"matrix.brakes=none,none,max-refill-rate,max-refill-rate", "matrix.repetitions=2"}}.Load()
	if err != nil {
		t.Fatal(err)
	}
	p, err := WarmpoolBurst().Plan(cfg, PlanContext{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"none", "none_2", "max-refill-rate", "max-refill-rate_2"}; !reflect.DeepEqual(p.Names, want) || p.Baseline != "none" || len(p.Cells) != 8 {
		t.Fatalf("names %v baseline %s cells %d", p.Names, p.Baseline, len(p.Cells))
	}
	flags := map[string]string{}
	for _, c := range p.Cells {
		flags[c.Name] = fmt.Sprint(c.Flags, c.Brake)
	}
	if flags["none"] != flags["none_2"] || flags["max-refill-rate"] != flags["max-refill-rate_2"] || flags["none"] == flags["max-refill-rate"] {
		t.Errorf("copies must be identical: %v", flags)
	}
}
