package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/brakebench/brakebench/configs"
	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/gates"
	"github.com/brakebench/brakebench/internal/results"
)

// gateFlags select the gates of a run or a re-rendered report.
type gateFlags struct {
	file string
	none bool
}

// load parses the user's gate file (every cell(...) in it must select a cell of the run), or the
// suite's embedded default gates, keeping those whose cells the run has and writing a line to w
// for each gate it skips. Errors are bad input (exit 2).
func (gf gateFlags) load(w io.Writer, suite string, schema gates.Schema) ([]gates.Gate, error) {
	schema.Metrics = analysis.MetricUnits()
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

// planSchema is what a run's gates may select: its cells and their axes.
func planSchema(names []string, axes map[string]map[string]string, primary string) gates.Schema {
	return gates.Schema{Cells: names, Axes: axes, Primary: primary}
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
	if b, ok := r.Config["brakes"].(map[string]any); ok {
		if rate, ok := b["maxRefillRate"].(float64); ok {
			v.Brakes["max_refill_rate"] = rate
		}
		if d, ok := b["replenishDelay"].(string); ok {
			if dur, err := time.ParseDuration(d); err == nil {
				v.Brakes["replenish_delay"] = float64(dur) / float64(time.Millisecond)
			}
		}
	}
	return v
}
