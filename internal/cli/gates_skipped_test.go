package cli

import (
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/suites"
)

func TestSkippedSummary(t *testing.T) {
	for _, tc := range []struct {
		name    string
		skipped []string
		want    string
	}{
		{"one gate", []string{`configs/gates/warmpool-burst.yaml:14: gate "max-batch-size caps" skipped: this run has no cell max-batch-size`},
			"gates: 1 built-in gate skipped (cells not in this matrix: max-batch-size)"},
		{"cells named once, in order", []string{
			`f.yaml:3: gate "a" skipped: this run has no cell both, max-batch-size`,
			`f.yaml:5: gate "b" skipped: this run has no cell max-batch-size`,
			`f.yaml:7: gate "c" skipped: this run has no cell (brake=both, version=v0.5.5), "x, y"`,
		}, `gates: 3 built-in gates skipped (cells not in this matrix: both, max-batch-size, (brake=both, version=v0.5.5), "x, y")`},
		{"an unknown wording still counts", []string{"something else"}, "gates: 1 built-in gate skipped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := skippedSummary(tc.skipped); got != tc.want {
				t.Errorf("skippedSummary() =\n  %s\nwant\n  %s", got, tc.want)
			}
		})
	}
}

// The default warmpool-burst matrix has no max-batch-size cell: loading its built-in gates writes
// exactly one summary line naming it (printed once the lab is up, not as the run's first line).
func TestDefaultGatesSkippedLine(t *testing.T) {
	cfg, err := config.Loader{Suite: "warmpool-burst"}.Load()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := suites.Default().Get("warmpool-burst")
	plan, err := s.Plan(cfg, suites.PlanContext{})
	if err != nil {
		t.Fatal(err)
	}
	var notes strings.Builder
	gf := &gateFlags{}
	if _, err := gf.load(&notes, "warmpool-burst", planSchema(plan.Names, plan.Axes, plan.Primary)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(notes.String()), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "gates: ") || !strings.Contains(lines[0], "cells not in this matrix: max-batch-size") {
		t.Errorf("notes: %q, want one line naming max-batch-size", notes.String())
	}
}
