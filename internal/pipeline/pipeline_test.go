package pipeline

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/gates"
	"github.com/brakebench/brakebench/internal/results"
)

// run is a warmpool-burst run of cell "none", three repetitions whose claim latencies are scaled
// by f; excess is each repetition's pool excess (an invariant violated where it is above 0).
func run(id string, f float64, excess ...int) *results.Results {
	r := &results.Results{Schema: results.SchemaVersion, Suite: "warmpool-burst", RunID: id, Seed: 1,
		StartedAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Versions: map[string]string{"agent-sandbox": "v0.5.5"},
		Cluster: results.Cluster{Provider: "lab"}, Baseline: "none"}
	for i, x := range excess {
		c := results.Cell{ID: fmt.Sprintf("none#%d", i+1), Name: "none", Rep: i + 1}
		for k := 0; k < 40; k++ {
			l := (500 + 5*float64(k) + float64(i)) * f
			c.Claims = append(c.Claims, results.Claim{Name: fmt.Sprintf("c%d", k), LatencyMS: &l, LaunchType: "warm"})
		}
		c.Stats.Total, c.Stats.Warm = 40, 40
		c.T0, c.Stats.Latency.All.P50 = r.StartedAt.Add(time.Duration(i)*time.Minute), 600*f
		c.Pool = []results.PoolSample{{T: 9, Desired: 40, Replicas: 40, Ready: 40}}
		c.Stats.Correctness.PoolExcessMax = x
		r.Cells = append(r.Cells, c)
	}
	r.Summary = analysis.Summarize(r.Cells, []string{"none"}, "none", 1)
	return r
}

func gate(t *testing.T, expr string) []gates.Gate {
	t.Helper()
	schema := gates.Schema{Cells: []string{"none"}, Baseline: []string{"none"}, Metrics: analysis.MetricUnits()}
	gs, err := gates.Parse("test.yaml", []byte("gates:\n- name: g\n  expr: "+expr+"\n"), schema)
	if err != nil {
		t.Fatal(err)
	}
	return gs
}

func names(vs []gates.Verdict) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return out
}

func TestFinish(t *testing.T) {
	const invariant = "every invariant holds in every repetition"
	const baseline = "no significant regression against the baseline"
	tests := []struct {
		name     string
		res      *results.Results
		gates    string // a gate expression ("" for none)
		noGates  bool
		base     *results.Results
		wantAll  []string // the verdicts' names, in order
		failed   []string
		errors   int
		warnings string // what Stderr must hold ("" for nothing)
	}{
		{"no gates: the invariant gate alone", run("a", 1, 0, 0, 0), "", false, nil, []string{invariant}, nil, 0, ""},
		{"--no-gates drops the invariant gate", run("a", 1, 0, 0, 0), "", true, nil, nil, nil, 0, ""},
		{"a gate that holds", run("a", 1, 0, 0, 0), "cell(none).claim.p99 <= 10s", false, nil, []string{"g", invariant}, nil, 0, ""},
		{"a gate that fails", run("a", 1, 0, 0, 0), "cell(none).claim.p99 <= 1ms", false, nil, []string{"g", invariant}, []string{"g"}, 0, ""},
		{"six repetitions: drift is analysed", run("a", 1, 0, 0, 0, 0, 0, 0), "", false, nil, []string{invariant}, nil, 0, ""},
		{"a violated invariant", run("a", 1, 0, 12, 0), "", false, nil, []string{invariant}, []string{invariant}, 0, ""},
		{"a baseline gate and the baseline verdict", run("b", 1.0001, 0, 0, 0), "cell(none).claim.p99 <= baseline.cell(none).claim.p99 * 1.5", false,
			run("a", 1, 0, 0, 0), []string{"g", invariant, baseline}, nil, 0, ""},
		{"a significant regression against the baseline", run("b", 2, 0, 0, 0, 0), "", true, run("a", 1, 0, 0, 0, 0), []string{baseline}, []string{baseline}, 0, ""},
		{"a baseline of another version warns", run("b", 1, 0, 0, 0), "", true,
			func() *results.Results { r := run("a", 1, 0, 0, 0); r.Versions["agent-sandbox"] = "v0.5.3"; return r }(),
			[]string{baseline}, nil, 0, "baseline: version differs (B vs A): agent-sandbox v0.5.3 -> v0.5.5\n"},
		{"cell errors are reported, not returned", func() *results.Results { r := run("a", 1, 0, 0, 0); r.Errors = []string{"none#2: boom"}; return r }(),
			"", true, nil, nil, nil, 1, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var gs []gates.Gate
			if tc.gates != "" {
				gs = gate(t, tc.gates)
			}
			var stdout, stderr bytes.Buffer
			dir := t.TempDir()
			out, err := Finish(tc.res, gs, Options{Dir: dir, NoGates: tc.noGates, Baseline: tc.base, BaselinePath: "base.json", Stdout: &stdout, Stderr: &stderr})
			if err != nil {
				t.Fatal(err)
			}
			if got := names(out.Gates); !slices.Equal(got, tc.wantAll) {
				t.Errorf("verdicts %q, want %q", got, tc.wantAll)
			}
			if got := names(out.Failed); !slices.Equal(got, tc.failed) {
				t.Errorf("failed %q, want %q", got, tc.failed)
			}
			if len(out.CellErrors) != tc.errors {
				t.Errorf("cell errors %q, want %d", out.CellErrors, tc.errors)
			}
			if stderr.String() != tc.warnings {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.warnings)
			}
			for _, p := range []string{out.Results, out.Report, out.JUnit} {
				if filepath.Dir(p) != dir {
					t.Errorf("%s written outside %s", p, dir)
				} else if _, err := os.Stat(p); err != nil {
					t.Error(err)
				}
			}
			if !strings.HasSuffix(stdout.String(), fmt.Sprintf("\nreport:  %s\nresults: %s\njunit:   %s\n", out.Report, out.Results, out.JUnit)) {
				t.Errorf("stdout does not end with the paths written:\n%s", stdout.String())
			}
			for _, v := range out.Gates {
				mark := "PASS"
				if !v.Passed {
					mark = "FAIL"
				}
				if line := fmt.Sprintf("gate %s  %s: %s\n", mark, v.Name, v.Message); !strings.Contains(stdout.String(), line) {
					t.Errorf("stdout lacks %q", line)
				}
			}
			// Drift needs six repetitions of cells repeated at least twice.
			if got, want := tc.res.Drift != nil, len(tc.res.Cells) >= 6; got != want {
				t.Errorf("drift analysed %v, want %v", got, want)
			}
		})
	}
}

// Re-rendering never rewrites the results file it read; another directory gets results.json.
func TestFinishKeepsItsInput(t *testing.T) {
	tests := []struct {
		name    string
		inPlace bool
	}{
		{"in place", true},
		{"into another directory", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, err := results.Write(t.TempDir(), run("a", 1, 0, 0, 0))
			if err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(in)
			dir := t.TempDir()
			if tc.inPlace {
				dir = filepath.Dir(in)
			}
			r, err := results.Read(in)
			if err != nil {
				t.Fatal(err)
			}
			out, err := Finish(r, nil, Options{Dir: dir, Input: in, Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}})
			if err != nil {
				t.Fatal(err)
			}
			after, _ := os.ReadFile(in)
			if !bytes.Equal(before, after) {
				t.Error("the input was rewritten")
			}
			if want := filepath.Join(dir, "results.json"); out.Results != want {
				t.Errorf("results %s, want %s", out.Results, want)
			}
			written, err := os.ReadFile(out.Results)
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.Equal(written, before); got != tc.inPlace {
				t.Errorf("results.json equals the input: %v, want %v", got, tc.inPlace)
			}
		})
	}
}

// A directory that cannot be written to is an error that names what failed.
func TestFinishUnwritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Finish(run("a", 1, 0, 0, 0), nil, Options{Dir: filepath.Join(file, "sub"), Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}})
	if err == nil || !strings.HasPrefix(err.Error(), "write results: ") {
		t.Errorf("err = %v, want a write results error", err)
	}
}

// The upgrade view prints the comparison headed by the two versions, writes compare.html and
// returns B's new invariant violations.
func TestUpgradeView(t *testing.T) {
	tests := []struct {
		name     string
		from, to []int
		regs     int
	}{
		{"B holds", []int{0, 0, 0}, []int{0, 0, 0}, 0},
		{"B regresses", []int{0, 0, 0}, []int{9, 8, 7}, 1},
		{"B fixes A", []int{9, 8, 7}, []int{0, 0, 0}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, from, to := run("x", 1), run("x", 1, tc.from...), run("x", 1, tc.to...)
			for v, cells := range map[string][]results.Cell{"v0.5.3": from.Cells, "v0.5.5": to.Cells} {
				for _, c := range cells {
					c.Name, c.ID = "none@"+v, fmt.Sprintf("none@%s#%d", v, c.Rep)
					res.Cells = append(res.Cells, c)
				}
			}
			res.Baseline = "none@v0.5.3"
			res.Summary = analysis.Summarize(res.Cells, []string{"none@v0.5.3", "none@v0.5.5"}, res.Baseline, 1)
			var w bytes.Buffer
			dir := t.TempDir()
			regs, err := UpgradeView(res, "v0.5.3", "v0.5.5", dir, &w)
			if err != nil {
				t.Fatal(err)
			}
			if len(regs) != tc.regs {
				t.Errorf("regressions %q, want %d", regs, tc.regs)
			}
			if !strings.HasPrefix(w.String(), "\nbefore you upgrade: v0.5.3 (A) -> v0.5.5 (B)\n") {
				t.Errorf("output does not lead with the versions:\n%s", w.String())
			}
			path := filepath.Join(dir, "compare.html")
			if !strings.HasSuffix(w.String(), "\ncompare: "+path+"\n") {
				t.Errorf("output does not end with compare.html's path:\n%s", w.String())
			}
			if _, err := os.Stat(path); err != nil {
				t.Error(err)
			}
		})
	}
}
