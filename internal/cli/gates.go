package cli

import (
	"fmt"
	"io"
	"slices"
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
	inputRun string           // report: that file's run ID (a baseline may not be the run itself)
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
	if gf.inputRun != "" && r.RunID == gf.inputRun {
		return badInput(fmt.Errorf("--baseline %s: expected an earlier run, got the run being reported (run %s): a run compared with itself shows no regression by construction", gf.baseline, r.RunID))
	}
	gf.base = r
	return nil
}

// load parses the user's gate file (every cell(...) in it must select a cell of the run), or the
// suite's embedded default gates, keeping those whose cells the run has and writing one line to
// w that sums up the gates it skips (skippedSummary). Errors are bad input (exit 2).
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
	if len(skipped) > 0 {
		fmt.Fprintln(w, skippedSummary(skipped))
	}
	return kept, nil
}

// skippedSummary sums up the built-in gates ForCells skipped in one line: how many, and the cells
// they are about that the matrix does not have ("gates: 2 built-in gates skipped (cells not in
// this matrix: both, max-batch-size)").
func skippedSummary(skipped []string) string {
	const marker = "this run has no cell "
	var cells []string
	for _, s := range skipped {
		_, missing, ok := strings.Cut(s, marker)
		if !ok {
			continue
		}
		for _, c := range splitTopLevel(missing) {
			if !slices.Contains(cells, c) {
				cells = append(cells, c)
			}
		}
	}
	noun := "gates"
	if len(skipped) == 1 {
		noun = "gate"
	}
	line := fmt.Sprintf("gates: %d built-in %s skipped", len(skipped), noun)
	if len(cells) > 0 {
		line += " (cells not in this matrix: " + strings.Join(cells, ", ") + ")"
	}
	return line
}

// splitTopLevel splits a list of selectors at the ", " outside parentheses and quotes (an axis
// selector reads "(brake=both, version=v0.5.5)").
func splitTopLevel(s string) []string {
	var out []string
	depth, quoted, start := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0 && strings.HasPrefix(s[i:], ", "):
			out = append(out, s[start:i])
			start = i + 2
			i++
		}
	}
	return append(out, s[start:])
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

// planSchema is what a run's gates may select: its cells and their axes.
func planSchema(names []string, axes map[string]map[string]string, primary string) gates.Schema {
	return gates.Schema{Cells: names, Axes: axes, Primary: primary, Brakes: brakes.Operands()}
}
