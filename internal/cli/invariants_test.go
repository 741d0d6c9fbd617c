package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/results"
)

// invariantCells are repetitions of a settled warm-pool cell whose pool over-filled by excess[i]
// (0: a correct controller); ratio sets the fill's creates per slot (nil: not measured).
func invariantCells(name string, ratio *float64, excess ...int) []results.Cell {
	var out []results.Cell
	for i, x := range excess {
		c := results.Cell{ID: fmt.Sprintf("%s#%d", name, i+1), Name: name, Rep: i + 1}
		for k := 0; k < 20; k++ {
			l := 500 + 3*float64(k) + float64(i)
			c.Claims = append(c.Claims, results.Claim{Name: fmt.Sprintf("c%d", k), LatencyMS: &l, LaunchType: "warm"})
		}
		c.Stats.Total, c.Stats.Warm = 20, 20
		c.Pool = []results.PoolSample{{T: 9, Desired: 20, Replicas: 20, Ready: 20}}
		c.Stats.Correctness.PoolExcessMax = x
		c.Stats.Correctness.FillCreatesPerSlot = ratio
		out = append(out, c)
	}
	return out
}

func invariantResults(id string, cells []results.Cell) *results.Results {
	r := &results.Results{Schema: results.SchemaVersion, Suite: "warmpool-burst", RunID: id, Seed: 1,
		StartedAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Versions: map[string]string{"agent-sandbox": "v0.5.5"},
		Cluster: results.Cluster{Provider: "lab"}, Cells: cells}
	var names []string
	for _, c := range cells {
		if len(names) == 0 || names[len(names)-1] != c.Name {
			names = append(names, c.Name)
		}
	}
	r.Baseline = names[0]
	r.Summary = analysis.Summarize(r.Cells, names, r.Baseline, 1)
	return r
}

func writeResults(t *testing.T, dir string, r *results.Results) string {
	t.Helper()
	p, err := results.Write(filepath.Join(dir, r.RunID), r)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Issue 22: v0.5.3 over-filled the pool in every repetition (45, 27, 4), v0.5.5 held 0; the
// rank test reads three repetitions a side as "~ (p=0.10)". The invariant is a verdict: compare
// --gate fails on it, leading with the line, and a run's built-in gate fails on a violation.
func TestInvariantExitCodes(t *testing.T) {
	dir := t.TempDir()
	one, overfill := 1.0, 1.15
	held := writeResults(t, dir, invariantResults("held", invariantCells("none", &one, 0, 0, 0)))
	heldAgain := writeResults(t, dir, invariantResults("held-again", invariantCells("none", &one, 0, 0, 0)))
	broken := writeResults(t, dir, invariantResults("broken", invariantCells("none", &overfill, 45, 27, 4)))
	unmeasured := writeResults(t, dir, invariantResults("unmeasured", invariantCells("none", nil, 0, 0, 0)))
	out := t.TempDir()
	cases := []struct {
		name    string
		args    []string
		code    int
		first   string   // the first line of stdout ("" when not checked)
		want    []string // in stdout or the error
		notWant []string
	}{
		{"compare --gate: violated in B, held in A", []string{"compare", held, broken, "--out", out, "--gate"}, ExitGateFailed,
			"regression: cell none: correctness.pool_excess_max violated in 3 of 3 repetitions (45, 27, 4) in B, held in 3 of 3 repetitions in A",
			[]string{"A held in 3 of 3 repetitions, B violated in 3 of 3 repetitions (45, 27, 4)",
				"regression: cell none: correctness.fill_creates_per_slot violated in 3 of 3 repetitions (1.15, 1.15, 1.15) in B, held in 3 of 3 repetitions in A",
				"REGRESSION none correctness.pool_excess_max violated in 3 of 3 repetitions (45, 27, 4) in B, held in 3 of 3 repetitions in A"},
			[]string{"~ (p=0.10)"}},
		{"compare --gate: violated only in A is fixed", []string{"compare", broken, held, "--out", out, "--gate"}, ExitOK,
			"fixed: cell none: correctness.pool_excess_max held in 3 of 3 repetitions in B, violated in 3 of 3 repetitions (45, 27, 4) in A",
			[]string{"fixed: cell none: correctness.fill_creates_per_slot held in 3 of 3 repetitions in B, violated in 3 of 3 repetitions (1.15, 1.15, 1.15) in A"},
			[]string{"regression:", "REGRESSION"}},
		{"compare --gate: held in both", []string{"compare", held, heldAgain, "--out", out, "--gate"}, ExitOK,
			"invariants: held in every repetition of every shared cell in every run", nil, []string{"REGRESSION"}},
		{"compare --gate: NaN ratios are not judged", []string{"compare", held, unmeasured, "--out", out, "--gate"}, ExitOK, "",
			[]string{"A held in 3 of 3 repetitions, B not judged"}, []string{"REGRESSION"}},
		{"the built-in gate fails on a violation", []string{"report", broken, "--out", out}, ExitGateFailed, "",
			[]string{"gate FAIL  " + analysis.InvariantGateName + ": none: correctness.pool_excess_max violated in 3 of 3 repetitions (45, 27, 4); none: correctness.fill_creates_per_slot violated in 3 of 3 repetitions (1.15, 1.15, 1.15)"}, nil},
		{"the built-in gate holds", []string{"report", held, "--out", out}, ExitOK, "",
			[]string{"gate PASS  " + analysis.InvariantGateName + ": passed: every repetition of 1 cell(s) held"}, nil},
		{"the built-in gate on NaN ratios", []string{"report", unmeasured, "--out", out}, ExitOK, "", []string{"gate PASS  " + analysis.InvariantGateName}, nil},
		{"--no-gates evaluates none", []string{"report", broken, "--out", out, "--no-gates"}, ExitOK, "", nil, []string{analysis.InvariantGateName}},
		{"a violation against --baseline", []string{"report", broken, "--out", out, "--no-gates", "--baseline", held}, ExitGateFailed, "",
			[]string{"none correctness.pool_excess_max violated in 3 of 3 repetitions (45, 27, 4) in B, held in 3 of 3 repetitions in A"}, nil},
		{"a violation fixed against --baseline", []string{"report", held, "--out", out, "--no-gates", "--baseline", broken}, ExitOK, "", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			root := NewRoot(&stdout, &stderr)
			root.SetArgs(c.args)
			err := root.ExecuteContext(context.Background())
			code := exitCode(err)
			got := stdout.String()
			if err != nil {
				got += "\nerror: " + err.Error()
			}
			if code != c.code {
				t.Errorf("exit %d (%v), want %d\n%s", code, err, c.code, got)
			}
			if first, _, _ := strings.Cut(stdout.String(), "\n"); c.first != "" && first != c.first {
				t.Errorf("first line %q, want %q", first, c.first)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(got, w) {
					t.Errorf("output has %q:\n%s", w, got)
				}
			}
		})
	}
}

// The upgrade preset leads with the invariants and returns B's new violations (run exits 3 on
// them); a violation only the old version had is fixed, not a regression; the run's built-in
// invariant gate judges every version's cells, so an upgrade run whose --from version over-fills
// the pool still exits 3 (issue 22: the defect the check exists for must fail the run).
func TestUpgradeViewInvariants(t *testing.T) {
	cases := []struct {
		name       string
		from, to   []int
		regs, lead string
		finish     int // finish's exit code with the run's gate flags
	}{
		{"B regresses", []int{0, 0, 0}, []int{45, 27, 4}, "none correctness.pool_excess_max violated in 3 of 3 repetitions (45, 27, 4) in B, held in 3 of 3 repetitions in A",
			"regression: cell none: correctness.pool_excess_max violated in 3 of 3 repetitions (45, 27, 4) in B, held in 3 of 3 repetitions in A", ExitGateFailed},
		{"B fixes A", []int{45, 27, 4}, []int{0, 0, 0}, "",
			"fixed: cell none: correctness.pool_excess_max held in 3 of 3 repetitions in B, violated in 3 of 3 repetitions (45, 27, 4) in A", ExitGateFailed},
		{"both violate", []int{3, 0, 0}, []int{45, 27, 4}, "",
			"still violated: cell none: correctness.pool_excess_max violated in 3 of 3 repetitions (45, 27, 4) in B, violated in 1 of 3 repetitions (3) in A", ExitGateFailed},
		{"both hold", []int{0, 0, 0}, []int{0, 0, 0}, "", "invariants: held in every repetition of every shared cell in every run", ExitOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			one := 1.0
			res := invariantResults("up", append(invariantCells("none@v0.5.3", &one, c.from...), invariantCells("none@v0.5.5", &one, c.to...)...))
			var stdout bytes.Buffer
			a := &app{stdout: &stdout, stderr: io.Discard}
			regs, err := a.upgradeView(res, upgradeFlags{preset: "upgrade", from: "v0.5.3", to: "v0.5.5"}, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(regs, "\n"); got != c.regs {
				t.Errorf("regressions %q, want %q", got, c.regs)
			}
			lines := strings.Split(strings.TrimLeft(stdout.String(), "\n"), "\n")
			if len(lines) < 2 || lines[0] != "before you upgrade: v0.5.3 (A) -> v0.5.5 (B)" || lines[1] != c.lead {
				t.Errorf("the upgrade view does not lead with %q:\n%s", c.lead, stdout.String())
			}
			err = a.finish(res, nil, &gateFlags{}, t.TempDir())
			code := exitCode(err)
			if code != c.finish {
				t.Errorf("finish: exit %d (%v), want %d", code, err, c.finish)
			}
		})
	}
}
