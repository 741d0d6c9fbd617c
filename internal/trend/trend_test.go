package trend_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/stats"
	"github.com/brakebench/brakebench/internal/trend"
)

// fileRun is results.json with the cells pre-encoded (the same claims in every synthetic run).
type fileRun struct {
	Schema    string            `json:"schema"`
	Suite     string            `json:"suite"`
	RunID     string            `json:"runID"`
	StartedAt time.Time         `json:"startedAt"`
	Versions  map[string]string `json:"versions"`
	Cluster   results.Cluster   `json:"cluster"`
	Cells     json.RawMessage   `json:"cells"`
	Summary   []results.Summary `json:"summary"`
}

// cellsJSON is `cells` cells of `claims` claims each, encoded once.
func cellsJSON(t testing.TB, cells, claims int) json.RawMessage {
	var cs []results.Cell
	for c := 0; c < cells; c++ {
		cell := results.Cell{ID: fmt.Sprintf("none#%d", c+1), Name: "none", Rep: c + 1}
		for i := 0; i < claims; i++ {
			in, ack, b, r, l := 0.001*float64(i), 0.4, 1.0, 2.0+0.01*float64(i), 2000.0+10*float64(i)
			cell.Claims = append(cell.Claims, results.Claim{Name: fmt.Sprintf("claim-%05d", i), Planned: 0, Intent: &in, Acked: &ack, Bound: &b, Ready: &r, LatencyMS: &l, LaunchType: "warm", Sandbox: fmt.Sprintf("pool-%05d", i)})
		}
		cs = append(cs, cell)
	}
	raw, err := json.Marshal(cs)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// writeRuns writes n runs of suite into dir (file order shuffled, start times one day apart),
// with claim.p99_ms of cell "none" at p99(i) and of cell "both" flat, plus extraCells cells of 30
// stationary metrics (10% noise); it returns the paths.
func writeRuns(t testing.TB, dir, suite string, n int, cells json.RawMessage, p99 func(i int) float64, extraCells int) []string {
	t.Helper()
	t0 := time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(5, 5))
	var paths []string
	for _, i := range rng.Perm(n) {
		v := p99(i)
		metric := func(v float64) results.Metric {
			return results.Metric{Key: "claim.p99_ms", Unit: "ms", Value: stats.Num(v), CI: stats.CI{Lo: stats.Num(v * 0.9), Hi: stats.Num(v * 1.1)}}
		}
		r := fileRun{Schema: results.SchemaVersion, Suite: suite, RunID: fmt.Sprintf("run%03d", i), StartedAt: t0.Add(time.Duration(i) * 24 * time.Hour),
			Versions: map[string]string{"agent-sandbox": "v0.5.5"}, Cluster: results.Cluster{Provider: "lab", ServerVersion: "v1.37.2"}, Cells: cells,
			Summary: []results.Summary{
				{Name: "none", Reps: 3, Metrics: []results.Metric{metric(v), {Key: "claims.failed", Unit: "claims", Value: 0}}},
				{Name: "both", Reps: 3, Metrics: []results.Metric{metric(1000 * (1 + 0.03*rng.NormFloat64()))}},
			}}
		// As many more stationary series as a real run has (12 cells x 30 metrics), noisier.
		for c := 0; c < extraCells; c++ {
			s := results.Summary{Name: fmt.Sprintf("cell%02d", c), Reps: 3}
			for k := 0; k < 30; k++ {
				x := 500 * (1 + 0.1*rng.NormFloat64())
				s.Metrics = append(s.Metrics, results.Metric{Key: fmt.Sprintf("claim.m%02d_ms", k), Unit: "ms", Value: stats.Num(x), CI: stats.CI{Lo: stats.Num(x * 0.9), Hi: stats.Num(x * 1.1)}})
			}
			r.Summary = append(r.Summary, s)
		}
		raw, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("%s-%03d", suite, rng.IntN(1000)), "results.json")
		for _, err := os.Stat(p); err == nil; _, err = os.Stat(p) {
			p = filepath.Join(filepath.Dir(filepath.Dir(p)), fmt.Sprintf("%s-%03d", suite, rng.IntN(100000)), "results.json")
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

func stepAt(at int, factor float64, seed uint64) func(int) float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	noise := make([]float64, 1000)
	for i := range noise {
		noise[i] = 1 + 0.03*rng.NormFloat64()
	}
	return func(i int) float64 {
		v := 1000 * noise[i]
		if i >= at {
			v *= factor
		}
		return v
	}
}

func TestTrend(t *testing.T) {
	cells := cellsJSON(t, 2, 50)
	cases := []struct {
		name       string
		factor     float64
		regression bool
	}{{"latency up 20% at run 20: a regression", 1.2, true}, {"latency down 20% at run 20: a change, not a regression", 0.8, false}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeRuns(t, dir, "warmpool-burst", 30, cells, stepAt(20, c.factor, 1), 12)
			paths, err := trend.Expand([]string{dir})
			if err != nil || len(paths) != 30 {
				t.Fatalf("expand: %d paths, %v", len(paths), err)
			}
			runs, err := trend.Load(paths)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range runs {
				if r.RunID != fmt.Sprintf("run%03d", i) {
					t.Fatalf("runs not in start order: %d is %s", i, r.RunID)
				}
			}
			tr := trend.Build(runs, trend.DefaultOptions)
			var found bool
			for _, s := range tr.Series {
				switch {
				case s.Cell == "none" && s.Key == "claim.p99_ms":
					found = true
					if len(s.ChangePoints) != 1 || s.ChangePoints[0].Index != 20 || s.ChangePoints[0].Regression != c.regression {
						t.Errorf("none p99: %+v", s.ChangePoints)
					}
				case len(s.ChangePoints) > 0:
					t.Errorf("%s %s: unexpected change points %+v", s.Cell, s.Key, s.ChangePoints)
				}
			}
			if !found {
				t.Fatal("no none/claim.p99_ms series")
			}
			if regs := tr.Regressions(); (len(regs) == 1) != c.regression || (c.regression && !strings.Contains(regs[0], "since run run020")) {
				t.Errorf("regressions %q", regs)
			}
		})
	}
}

func TestTrendRefusesAndWarns(t *testing.T) {
	cells := cellsJSON(t, 1, 5)
	dir := t.TempDir()
	a := writeRuns(t, filepath.Join(dir, "a"), "warmpool-burst", 3, cells, stepAt(99, 1, 2), 0)
	b := writeRuns(t, filepath.Join(dir, "b"), "gang-quota", 1, cells, stepAt(99, 1, 3), 0)
	if _, err := trend.Load(append(a, b...)); err == nil || !strings.Contains(err.Error(), "a trend follows one suite") || !strings.Contains(err.Error(), b[0]) {
		t.Errorf("mixed suites: %v", err)
	}
	old := filepath.Join(dir, "old.json")
	_ = os.WriteFile(old, []byte(`{"schema":"brakebench.results/v0","suite":"warmpool-burst"}`), 0o644)
	if _, err := trend.Load([]string{a[0], old}); err == nil || !strings.Contains(err.Error(), `old.json: schema "brakebench.results/v0"`) {
		t.Errorf("old schema: %v", err)
	}
	if _, err := trend.Expand([]string{filepath.Join(dir, "none")}); err == nil {
		t.Error("a missing path must be an error")
	}
	runs, err := trend.Load(a)
	if err != nil {
		t.Fatal(err)
	}
	tr := trend.Build(runs, trend.DefaultOptions)
	if len(tr.Notes) != 1 || !strings.Contains(tr.Notes[0], "3 runs: change points need at least 10") || tr.Series[0].Note == "" {
		t.Errorf("notes %q, series note %q", tr.Notes, tr.Series[0].Note)
	}
	for _, s := range tr.Series {
		for _, p := range s.Points {
			if math.IsNaN(float64(p.Value)) && s.Cell == "none" && s.Key == "claim.p99_ms" {
				t.Errorf("missing value in %s", s.Key)
			}
		}
	}
}

// A trend refuses a results file without cells: it added a run with no values.
func TestTrendRefusesEmptyRuns(t *testing.T) {
	cells := cellsJSON(t, 1, 5)
	dir := t.TempDir()
	a := writeRuns(t, filepath.Join(dir, "runs"), "warmpool-burst", 3, cells, stepAt(99, 1, 2), 0)
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty := write("empty.json", `{"schema":"brakebench.results/v1","suite":"warmpool-burst"}`)
	stopped := write("stopped.json", `{"schema":"brakebench.results/v1","suite":"warmpool-burst","runID":"x","cells":[],"incomplete":"interrupted after 0 of 12 cells"}`)
	cases := []struct {
		name  string
		paths []string
		want  string
	}{
		{"a results file of only its schema", []string{a[0], empty}, empty + ": holds no cells, so no results"},
		{"a run stopped before its first cell", []string{stopped, a[1]}, stopped + ": holds no cells, so no results (the run stopped first: interrupted after 0 of 12 cells)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := trend.Load(c.paths); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant %q", err, c.want)
			}
		})
	}
}

// One run given twice counted as two runs: as the same file (twice, through its directory or a
// link) or as a copy (the same run id and start time).
func TestTrendRefusesDuplicateRuns(t *testing.T) {
	cells := cellsJSON(t, 1, 5)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	a := writeRuns(t, runs, "warmpool-burst", 3, cells, stepAt(99, 1, 2), 0)
	raw, err := os.ReadFile(a[0])
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(dir, "copy.json")
	if err := os.WriteFile(cp, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(a[0], link); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"the same file twice", []string{a[0], a[1], a[0]}, a[0] + " is given twice, by argument 1 (" + a[0] + ") and argument 3 (" + a[0] + "): a run counts once in a trend"},
		{"a directory and a file in it", []string{runs, a[2]}, a[2] + " is given twice, by argument 1 (" + runs + ") and argument 2 (" + a[2] + ")"},
		{"the same directory twice", []string{runs, runs + "/"}, "is given twice, by argument 1 (" + runs + ") and argument 2 (" + runs + "/)"},
		{"a file and a link to it", []string{a[0], link}, link + " is given twice, by argument 1 (" + a[0] + ") and argument 2 (" + link + ")"},
		{"a file and its copy", []string{a[0], cp}, a[0] + " and " + cp + " hold the same run (id "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			paths, err := trend.Expand(c.args)
			if err == nil {
				_, err = trend.Load(paths)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant %q", err, c.want)
			}
		})
	}
	// Each run once, through its directory: fine.
	if paths, err := trend.Expand([]string{runs}); err != nil || len(paths) != 3 {
		t.Errorf("expand: %d paths, %v", len(paths), err)
	} else if _, err := trend.Load(paths); err != nil {
		t.Error(err)
	}
}
