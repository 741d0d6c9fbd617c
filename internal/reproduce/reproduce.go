// Package reproduce holds the published figures brakebench knows (configs/published.yaml), the
// scenario that measures each, and the verdict: reproduced within the stated tolerance, or
// differs. It never adjusts a measurement toward the published value.
package reproduce

import (
	"fmt"
	"math"
	"sort"

	"sigs.k8s.io/yaml"

	"github.com/brakebench/brakebench/configs"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/stats"
)

// Catalog is configs/published.yaml.
type Catalog struct {
	Scenarios map[string]Scenario `json:"scenarios"`
	Figures   []Figure            `json:"figures"`
}

// Scenario is a suite run with settings.
type Scenario struct {
	Suite string   `json:"suite"`
	Set   []string `json:"set"`
	Quick []string `json:"quick"` // added by --quick (CI-sized)
}

// Figure is one published number.
type Figure struct {
	ID              string  `json:"id"`
	Claim           string  `json:"claim"`
	Published       float64 `json:"published"`
	Low             float64 `json:"low,omitempty"`
	High            float64 `json:"high,omitempty"`
	AtMost          bool    `json:"atMost,omitempty"` // the published figure is an upper bound (a gate)
	Unit            string  `json:"unit"`
	Tolerance       float64 `json:"tolerance"`
	Source          string  `json:"source"`
	Environment     string  `json:"environment"`
	Scenario        string  `json:"scenario,omitempty"`
	Cell            string  `json:"cell,omitempty"`
	Metric          string  `json:"metric,omitempty"`
	Note            string  `json:"note,omitempty"`
	NotReproducible string  `json:"notReproducible,omitempty"`
}

// Load reads the embedded catalog and checks every reference.
func Load(metrics map[string]string) (*Catalog, error) {
	raw, err := configs.FS.ReadFile("published.yaml")
	if err != nil {
		return nil, err
	}
	var c Catalog
	if err := yaml.UnmarshalStrict(raw, &c); err != nil {
		return nil, fmt.Errorf("configs/published.yaml: %w", err)
	}
	for _, f := range c.Figures {
		if f.NotReproducible != "" {
			continue
		}
		if _, ok := c.Scenarios[f.Scenario]; !ok {
			return nil, fmt.Errorf("configs/published.yaml: figure %s: unknown scenario %q", f.ID, f.Scenario)
		}
		if _, ok := metrics[f.Metric]; !ok {
			return nil, fmt.Errorf("configs/published.yaml: figure %s: unknown metric %q", f.ID, f.Metric)
		}
	}
	return &c, nil
}

// ScenarioNames lists the scenarios the figures use, sorted.
func (c *Catalog) ScenarioNames() []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range c.Figures {
		if f.Scenario != "" && f.NotReproducible == "" && !seen[f.Scenario] {
			seen[f.Scenario] = true
			out = append(out, f.Scenario)
		}
	}
	sort.Strings(out)
	return out
}

// Row is one figure's outcome.
type Row struct {
	Figure
	Measured stats.Num `json:"measured"` // null when not measured
	Ratio    stats.Num `json:"ratio"`
	Verdict  string    `json:"verdict"` // reproduced | differs | not reproducible here | not measured
	Why      string    `json:"why"`
}

// Judge compares one figure with what its scenario measured (r may be nil: not run).
func Judge(f Figure, r *results.Results, labNote string) Row {
	row := Row{Figure: f, Measured: stats.Num(math.NaN()), Ratio: stats.Num(math.NaN())}
	switch {
	case f.NotReproducible != "":
		row.Verdict, row.Why = "not reproducible here", f.NotReproducible
		return row
	case r == nil:
		row.Verdict, row.Why = "not measured", "scenario "+f.Scenario+" did not run"
		return row
	}
	m, ok := r.Find(f.Cell, f.Metric)
	if !ok || math.IsNaN(float64(m.Value)) {
		row.Verdict, row.Why = "not measured", fmt.Sprintf("the run has no %s for cell %s", f.Metric, f.Cell)
		return row
	}
	measured := float64(m.Value)
	row.Measured, row.Ratio = m.Value, stats.Num(measured/f.Published)
	switch {
	case f.AtMost:
		ok = measured <= f.Published*(1+f.Tolerance)
	case f.High > 0:
		ok = measured >= f.Low*(1-f.Tolerance) && measured <= f.High*(1+f.Tolerance)
	default:
		ok = math.Abs(measured/f.Published-1) <= f.Tolerance
	}
	if ok {
		row.Verdict = "reproduced"
	} else {
		row.Verdict = "differs"
		row.Why = fmt.Sprintf("published on %s; measured on %s", f.Environment, labNote)
	}
	if f.Note != "" {
		row.Why = joinNote(row.Why, f.Note)
	}
	return row
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// Environment describes where a run happened, for the "why it may differ" column.
func Environment(r *results.Results) string {
	if r == nil {
		return ""
	}
	return fmt.Sprintf("%s (Kubernetes %s, %d simulated nodes) with harness and control plane sharing %d CPUs", r.Cluster.Provider, r.Cluster.ServerVersion, r.Cluster.Nodes, r.Machine.CPUs)
}
