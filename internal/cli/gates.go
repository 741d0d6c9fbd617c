package cli

import (
	"fmt"
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

// load parses the user's gate file (every cell it names must be in cells), or the suite's
// embedded default gates restricted to the cells present. Errors are bad input (exit 2).
func (gf gateFlags) load(suite string, cells []string) ([]gates.Gate, error) {
	schema := gates.Schema{Metrics: analysis.MetricUnits(), Cells: cells}
	if gf.none {
		return nil, nil
	}
	if gf.file != "" {
		gs, err := gates.Load(gf.file, schema)
		if err != nil {
			return nil, badInput(err)
		}
		return gs, nil
	}
	raw, err := configs.FS.ReadFile("gates/" + suite + ".yaml")
	if err != nil {
		return nil, nil // the suite has no default gates
	}
	schema.Cells = nil
	gs, err := gates.Parse("configs/gates/"+suite+".yaml", raw, schema)
	if err != nil {
		return nil, fmt.Errorf("built-in gates: %w", err)
	}
	return gates.ForCells(gs, cells), nil
}

// gateValues exposes a run's summary and brake settings to gate expressions.
func gateValues(r *results.Results) gates.Values {
	v := gates.Values{Brakes: map[string]float64{}}
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
