package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/results"
)

// synthetic writes a warmpool-burst results.json with four repetitions of cell "none" whose
// claim latencies are scaled by f (and a little by repetition), and returns its path.
func synthetic(t *testing.T, dir string, f float64) string {
	t.Helper()
	r := &results.Results{Schema: results.SchemaVersion, Suite: "warmpool-burst", RunID: fmt.Sprintf("r%.1f", f), Seed: 1,
		StartedAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Versions: map[string]string{"agent-sandbox": "v0.5.5"},
		Cluster: results.Cluster{Provider: "lab"}, Baseline: "none"}
	for rep, k := range []float64{0.98, 1.0, 1.01, 1.03} {
		c := results.Cell{ID: fmt.Sprintf("none#%d", rep+1), Name: "none", Rep: rep + 1}
		for i := 0; i < 100; i++ {
			l := (500 + 5*float64(i)) * f * k
			c.Claims = append(c.Claims, results.Claim{Name: fmt.Sprintf("c%d", i), LatencyMS: &l, LaunchType: "warm"})
		}
		c.Stats.Total, c.Stats.Warm = 100, 100
		r.Cells = append(r.Cells, c)
	}
	r.Summary = analysis.Summarize(r.Cells, []string{"none"}, "none", 1)
	d := filepath.Join(dir, r.RunID)
	p, err := results.Write(d, r)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The exit codes of the commands that need no cluster: 0 ok, 2 bad input (before anything
// runs), 3 a gate or a regression.
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	a, same, slower := synthetic(t, dir, 1), synthetic(t, dir, 1.0001), synthetic(t, dir, 2)
	badGates := filepath.Join(dir, "bad.yaml")
	_ = os.WriteFile(badGates, []byte("gates:\n- expr: cell(none).claim.p99 <= 900\n"), 0o644)
	baseGates := filepath.Join(dir, "base.yaml")
	_ = os.WriteFile(baseGates, []byte("gates:\n- expr: cell(none).claim.p99 <= baseline.cell(none).claim.p99 * 1.5\n"), 0o644)
	out := t.TempDir()
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"compare identical runs", []string{"compare", a, same, "--out", out, "--gate"}, 0},
		{"compare --gate with a regression", []string{"compare", a, slower, "--out", out, "--gate"}, ExitGateFailed},
		{"compare a regression without --gate", []string{"compare", a, slower, "--out", out}, 0},
		{"compare a missing file", []string{"compare", a, filepath.Join(dir, "nope.json"), "--out", out}, ExitBadInput},
		{"report against a baseline, no regression", []string{"report", same, "--out", out, "--no-gates", "--baseline", a}, 0},
		{"report against a baseline, a regression", []string{"report", slower, "--out", out, "--no-gates", "--baseline", a}, ExitGateFailed},
		{"report with a baseline gate that fails", []string{"report", slower, "--out", out, "--gates", baseGates, "--baseline", a}, ExitGateFailed},
		{"report with a baseline gate that holds", []string{"report", same, "--out", out, "--gates", baseGates, "--baseline", a}, 0},
		{"report with a baseline gate but no baseline", []string{"report", same, "--out", out, "--gates", baseGates}, ExitBadInput},
		{"report with a missing baseline", []string{"report", same, "--out", out, "--baseline", filepath.Join(dir, "nope.json")}, ExitBadInput},
		{"report with a gate comparing ms to a number", []string{"report", same, "--out", out, "--gates", badGates}, ExitBadInput},
		{"report with --gates and --no-gates", []string{"report", same, "--out", out, "--gates", baseGates, "--no-gates"}, ExitBadInput},
		{"no command: help", []string{}, 0},
		{"unknown command", []string{"rnu"}, ExitBadInput},
		{"unknown subcommand", []string{"lab", "upp"}, ExitBadInput},
		{"unknown flag", []string{"report", same, "--colour"}, ExitBadInput},
		{"missing argument", []string{"report"}, ExitBadInput},
		{"too many arguments", []string{"suites", "a", "b", "c"}, ExitBadInput},
		{"trend of nothing", []string{"trend", filepath.Join(dir, "nope")}, ExitBadInput},
		{"report -f (reads no configuration)", []string{"report", same, "--out", out, "-f", baseGates}, ExitBadInput},
		{"compare --set", []string{"compare", a, same, "--out", out, "--set", "workload.claims=5"}, ExitBadInput},
		{"trend with a bad window", []string{"trend", dir, "--min-window", "0"}, ExitBadInput},
	}
	before, _ := os.ReadFile(same)
	defer func() {
		// report without --out writes report.html and junit.xml beside its input, and leaves the
		// input itself as it was.
		var stdout, stderr bytes.Buffer
		root := NewRoot(&stdout, &stderr)
		root.SetArgs([]string{"report", same, "--no-gates", "--baseline", a})
		if err := root.ExecuteContext(context.Background()); err != nil {
			t.Errorf("report in place: %v", err)
		}
		if after, _ := os.ReadFile(same); !bytes.Equal(before, after) {
			t.Error("report rewrote the results file it read")
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(same), "report.html")); err != nil {
			t.Error(err)
		}
	}()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			root := NewRoot(&stdout, &stderr)
			root.SetArgs(c.args)
			err := root.ExecuteContext(context.Background())
			code := 0
			var ee *ExitError
			switch {
			case errors.As(err, &ee):
				code = ee.Code
			case err != nil:
				code = 1
			}
			if code != c.code {
				t.Errorf("exit %d (%v), want %d\nstdout:\n%s\nstderr:\n%s", code, err, c.code, stdout.String(), stderr.String())
			}
		})
	}
}
