package reproduce

import (
	"math"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/stats"
)

func run(cell, key string, v float64) *results.Results {
	return &results.Results{Cluster: results.Cluster{Provider: "lab", ServerVersion: "v1.37.2", Nodes: 4}, Machine: results.Machine{CPUs: 2},
		Summary: []results.Summary{{Name: cell, Metrics: []results.Metric{{Key: key, Value: stats.Num(v)}}}}}
}

func TestCatalogLoads(t *testing.T) {
	c, err := Load(analysis.MetricUnits())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Figures) < 8 || len(c.ScenarioNames()) != 3 {
		t.Errorf("%d figures, scenarios %v", len(c.Figures), c.ScenarioNames())
	}
	if _, err := Load(map[string]string{}); err == nil {
		t.Error("unknown metrics must be rejected")
	}
}

func TestJudge(t *testing.T) {
	ceiling := Figure{ID: "c", Published: 85, Low: 70, High: 85, Tolerance: 0.25, Scenario: "s", Cell: "none", Metric: "m", Environment: "22 cores"}
	gate := Figure{ID: "g", Published: 300, AtMost: true, Scenario: "s", Cell: "none", Metric: "m"}
	point := Figure{ID: "p", Published: 6.4, Tolerance: 0.25, Scenario: "s", Cell: "none", Metric: "m"}
	cases := []struct {
		f       Figure
		r       *results.Results
		verdict string
		ratio   float64
	}{
		{ceiling, run("none", "m", 80), "reproduced", 80.0 / 85},
		{ceiling, run("none", "m", 54), "reproduced", 54.0 / 85}, // 70 x 0.75 = 52.5
		{ceiling, run("none", "m", 24), "differs", 24.0 / 85},
		{gate, run("none", "m", 290), "reproduced", 290.0 / 300},
		{gate, run("none", "m", 301), "differs", 301.0 / 300},
		{point, run("none", "m", 7.9), "reproduced", 7.9 / 6.4},
		{point, run("none", "m", 8.1), "differs", 8.1 / 6.4},
		{point, run("other", "m", 6.4), "not measured", math.NaN()},
		{point, nil, "not measured", math.NaN()},
		{Figure{ID: "x", NotReproducible: "simulated"}, nil, "not reproducible here", math.NaN()},
	}
	for _, c := range cases {
		row := Judge(c.f, c.r, Environment(c.r))
		if row.Verdict != c.verdict {
			t.Errorf("%s on %v: verdict %q, want %q (%s)", c.f.ID, c.r, row.Verdict, c.verdict, row.Why)
		}
		if got := float64(row.Ratio); !(math.IsNaN(c.ratio) && math.IsNaN(got)) && math.Abs(got-c.ratio) > 1e-9 {
			t.Errorf("%s: ratio %v, want %v", c.f.ID, got, c.ratio)
		}
		if row.Verdict == "differs" && !strings.Contains(row.Why, "measured on lab") {
			t.Errorf("%s: a difference must name the environments: %q", c.f.ID, row.Why)
		}
	}
}
