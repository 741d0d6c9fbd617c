package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/brakebench/brakebench/configs"
	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/brakes"
	"github.com/brakebench/brakebench/internal/gates"
	"github.com/brakebench/brakebench/internal/results"
)

// gateFlags select the gates of a run or a re-rendered report, and the baseline run they may
// refer to (and that the run is checked against).
type gateFlags struct {
	file     string
	none     bool
	baseline string
	base     *results.Results // the baseline run, once loaded
	input    string           // report: the results file being re-rendered (never rewritten)
}

// loadBaseline reads --baseline (bad input when it cannot be read or is another suite's run).
func (gf *gateFlags) loadBaseline(suite string) error {
	if gf.baseline == "" {
		return nil
	}
	r, err := results.Read(gf.baseline)
	if err != nil {
		return badInput(fmt.Errorf("--baseline: %w", err))
	}
	if r.Suite != suite {
		return badInput(fmt.Errorf("--baseline %s is a %s run; this is %s", gf.baseline, r.Suite, suite))
	}
	gf.base = r
	return nil
}

// load parses the user's gate file (every cell(...) in it must select a cell of the run), or the
// suite's embedded default gates, keeping those whose cells the run has and writing a line to w
// for each gate it skips. Errors are bad input (exit 2).
func (gf *gateFlags) load(w io.Writer, suite string, schema gates.Schema) ([]gates.Gate, error) {
	schema.Metrics = analysis.MetricUnits()
	if err := gf.loadBaseline(suite); err != nil {
		return nil, err
	}
	if gf.base != nil {
		schema.Baseline, schema.BaselineAxes = summaryNames(gf.base), gf.base.CellAxes
	}
	if gf.file != "" {
		// Checked even with --no-gates: a broken gate file is bad input either way.
		gs, err := gates.Load(gf.file, schema)
		if err != nil {
			return nil, badInput(err)
		}
		if gf.none {
			return nil, badInput(fmt.Errorf("--gates and --no-gates contradict each other"))
		}
		return gs, nil
	}
	if gf.none {
		return nil, nil
	}
	raw, err := configs.FS.ReadFile("gates/" + suite + ".yaml")
	if err != nil {
		return nil, nil // the suite has no default gates
	}
	schema.Lenient = true
	gs, err := gates.Parse("configs/gates/"+suite+".yaml", raw, schema)
	if err != nil {
		return nil, fmt.Errorf("built-in gates: %w", err)
	}
	kept, skipped := gates.ForCells(gs, schema)
	for _, s := range skipped {
		fmt.Fprintln(w, "note:", s)
	}
	return kept, nil
}

func summaryNames(r *results.Results) []string {
	var out []string
	for _, s := range r.Summary {
		if s.NotApplicable == "" {
			out = append(out, s.Name)
		}
	}
	return out
}

// baselineVerdict is the built-in check against --baseline: no metric with a direction got
// significantly worse in a cell both runs have (repetition-level inference, as compare).
func baselineVerdict(base *results.Results, path string, res *results.Results) gates.Verdict {
	v := gates.Verdict{Name: "no significant regression against the baseline", Expr: "baseline " + path, Passed: true}
	cmp := analysis.CompareRuns([]*results.Results{base, res}, res.Seed)
	regs := analysis.Regressions(cmp)
	switch {
	case len(cmp) == 0:
		v.Passed, v.Message = false, "the run shares no cell name with the baseline: nothing was compared"
	case len(regs) > 0:
		v.Passed, v.Message = false, strings.Join(regs, "; ")
		v.Measured = float64(len(regs))
	default:
		v.Message = fmt.Sprintf("passed: %d shared cells, no latency, failure or correctness metric significantly worse", len(cmp))
	}
	return v
}

// planSchema is what a run's gates may select: its cells and their axes.
func planSchema(names []string, axes map[string]map[string]string, primary string) gates.Schema {
	return gates.Schema{Cells: names, Axes: axes, Primary: primary, Brakes: brakes.Operands()}
}

// gateValues exposes a run's summary and brake settings to gate expressions.
func gateValues(r *results.Results) gates.Values {
	v := gates.Values{Brakes: map[string]float64{}, Axes: r.CellAxes}
	for _, s := range r.Summary {
		if s.NotApplicable == "" {
			v.Cells = append(v.Cells, s.Name)
		}
	}
	v.Metric = func(cell, key string) (float64, bool) {
		m, ok := r.Find(cell, key)
		if !ok {
			return 0, false
		}
		return float64(m.Value), true
	}
	v.Brakes = brakes.OperandValues(r.Cells)
	return v
}
