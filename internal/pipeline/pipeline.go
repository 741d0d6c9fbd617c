// Package pipeline is what happens to a suite's results once its cells have run, or when saved
// results are re-rendered: the gates are evaluated with the built-in invariant gate and the
// verdict against a baseline run, the run's drift and the lab's movement over it are analysed,
// and results.json, report.html and junit.xml are written, the table and the verdicts printed.
// It decides no exit code: Finish says what was written, which gates failed and which cells had
// errors, and its caller (the run and report commands) maps that to the process's exit status.
package pipeline

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/brakes"
	"github.com/brakebench/brakebench/internal/gates"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/reports"
)

// Options say how Finish judges a run and where it writes and prints.
type Options struct {
	// Dir is where results.json, report.html and junit.xml are written.
	Dir string
	// NoGates leaves out the built-in invariant gate as well (--no-gates); the gates given to
	// Finish are evaluated either way.
	NoGates bool
	// Baseline is an earlier run of the suite (nil: none): gates may refer to it, and the run is
	// checked against it for significant regressions. BaselinePath names it in that verdict.
	Baseline     *results.Results
	BaselinePath string
	// Input is the results file the run was read from (report); it is never rewritten, so
	// results.json is written only when Dir holds another file.
	Input string
	// Stdout receives the table, the verdicts and the paths written; Stderr the warnings about
	// the baseline (a run on another version or cluster).
	Stdout, Stderr io.Writer
}

// Outcome is what Finish wrote and found.
type Outcome struct {
	Results, Report, JUnit string // the files (Results is Input's path when it was not rewritten)
	// Gates are every verdict, in the order printed (also in the results' Gates); Failed are
	// those that did not pass.
	Gates, Failed []gates.Verdict
	// CellErrors are the run's errors (cells that failed to run), as in the results' Errors.
	CellErrors []string
}

// Finish evaluates gs and the built-in gates on res (into res.Gates), fills in its drift and
// lab-over-run analyses where missing, writes results.json, report.html and junit.xml into
// opts.Dir, and prints the table, the verdicts and the paths. An error is a file that could not
// be written; failed gates and cell errors are in the Outcome.
func Finish(res *results.Results, gs []gates.Gate, opts Options) (Outcome, error) {
	vals := values(res)
	if b := opts.Baseline; b != nil {
		bv := values(b)
		vals.Baseline, vals.BaselineCells, vals.BaselineAxes = bv.Metric, bv.Cells, b.CellAxes
	}
	res.Gates = gates.Evaluate(gs, vals)
	if !opts.NoGates {
		if v, ok := analysis.InvariantGate(res, nil); ok {
			res.Gates = append(res.Gates, v)
		}
	}
	if res.Drift == nil {
		res.Drift = analysis.Drift(res.Cells)
	}
	if res.LabOverRun == nil {
		res.LabOverRun = analysis.LabOverRun(res.Cells)
	}
	if b := opts.Baseline; b != nil {
		if c, err := reports.NewComparison([]string{opts.BaselinePath, "this run"}, []*results.Results{b, res}); err == nil {
			for _, w := range c.Warnings {
				fmt.Fprintln(opts.Stderr, "baseline:", w)
			}
		}
		res.Gates = append(res.Gates, baselineVerdict(b, opts.BaselinePath, res))
	}
	var out Outcome
	// A re-rendered report never rewrites the results file it read: it writes results.json
	// (with the re-evaluated gates) only into another directory.
	out.Results = filepath.Join(opts.Dir, "results.json")
	if opts.Input == "" || !SameFile(opts.Input, out.Results) {
		var err error
		if out.Results, err = results.Write(opts.Dir, res); err != nil {
			return Outcome{}, fmt.Errorf("write results: %w", err)
		}
	}
	var err error
	if out.Report, out.JUnit, err = reports.WriteAll(opts.Dir, res, res.Gates); err != nil {
		return Outcome{}, fmt.Errorf("render report: %w", err)
	}
	fmt.Fprintln(opts.Stdout)
	reports.Table(opts.Stdout, res)
	incomplete := reports.IncompleteText(res) != ""
	for _, v := range res.Gates {
		mark := "PASS"
		if incomplete {
			mark = "held (on the cells that ran)"
		}
		if !v.Passed {
			mark = "FAIL"
			out.Failed = append(out.Failed, v)
		}
		fmt.Fprintf(opts.Stdout, "gate %s  %s: %s\n", mark, v.Name, v.Message)
	}
	fmt.Fprintf(opts.Stdout, "\nreport:  %s\nresults: %s\njunit:   %s\n", out.Report, out.Results, out.JUnit)
	out.Gates, out.CellErrors = res.Gates, res.Errors
	return out, nil
}

// values exposes a run's summary and brake settings to gate expressions.
func values(r *results.Results) gates.Values {
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

// baselineVerdict is the built-in check against a baseline run (path names it): no metric with
// a direction got significantly worse in a cell both runs have (repetition-level inference, as
// compare).
func baselineVerdict(base *results.Results, path string, res *results.Results) gates.Verdict {
	v := gates.Verdict{Name: "no significant regression against the baseline", Expr: "baseline " + path, Passed: true}
	runs := []*results.Results{base, res}
	cmp := analysis.CompareRuns(runs, res.Seed)
	regs := analysis.RunRegressions(cmp, analysis.CompareInvariants(runs, cmp))
	switch {
	case len(cmp) == 0:
		v.Passed, v.Message = false, "the run shares no cell name with the baseline: nothing was compared"
	case len(regs) > 0:
		v.Passed, v.Message = false, strings.Join(regs, "; ")
		v.Measured = float64(len(regs))
	default:
		v.Message = fmt.Sprintf("passed: %d shared cells, no invariant newly violated, no latency, failure or correctness metric significantly worse", len(cmp))
	}
	return v
}

// UpgradeView compares the to-version cells of one run with its from-version cells (the
// pre-upgrade preset): it prints the comparison to w, the invariants' verdicts first, writes
// compare.html into dir, and returns the invariants violated in B (to) that held in A (from).
func UpgradeView(res *results.Results, from, to, dir string, w io.Writer) ([]string, error) {
	runs := analysis.SplitByVersion(res, []string{from, to})
	c, err := reports.NewComparison([]string{filepath.Join(from, "results.json"), filepath.Join(to, "results.json")}, runs)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "\nbefore you upgrade: %s (A) -> %s (B)\n", from, to)
	c.Text(w)
	path, err := WriteComparison(c, dir)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "\ncompare: %s\n", path)
	return analysis.InvariantRegressions(c.Invariants), nil
}

// WriteComparison renders c as compare.html in dir and returns its path.
func WriteComparison(c *reports.Comparison, dir string) (string, error) {
	page, err := c.HTML()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "compare.html")
	if err := os.WriteFile(path, page, 0o644); err != nil {
		return "", err
	}
	return path, nil
}

// SameFile reports whether a and b are one file (links resolved).
func SameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}
