package cli

import (
	"bytes"
	"testing"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/suites"
)

// Every suite's built-in gate file parses against that suite's default plan (metric names,
// selectors, brake operands), so a broken default gate is caught here, not in a nightly run.
func TestDefaultGatesParse(t *testing.T) {
	reg := suites.Default()
	for _, name := range reg.Names() {
		s, _ := reg.Get(name)
		cfg, err := config.Loader{Suite: name}.Load()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		plan, err := s.Plan(cfg, suites.PlanContext{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var notes bytes.Buffer
		gf := &gateFlags{}
		gs, err := gf.load(&notes, name, planSchema(plan.Names, plan.Axes, plan.Primary))
		if err != nil {
			t.Errorf("%s: built-in gates: %v", name, err)
			continue
		}
		t.Logf("%s: %d gates kept; %s", name, len(gs), notes.String())
	}
}
