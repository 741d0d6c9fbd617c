package analysis

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/results"
)

// invCell is one settled repetition of a warm-pool cell (every claim Ready, the pool full at the
// end) with the correctness figures a correct controller measures; mod changes it.
func invCell(name string, rep int, mod func(c *results.Cell)) results.Cell {
	one := 1.0
	c := results.Cell{ID: fmt.Sprintf("%s#%d", name, rep), Name: name, Rep: rep}
	for i := 0; i < 20; i++ {
		l := 500 + float64(i)
		c.Claims = append(c.Claims, results.Claim{Name: fmt.Sprint(i), LatencyMS: &l, LaunchType: "warm"})
	}
	c.Stats.Total, c.Stats.Warm = 20, 20
	c.Pool = []results.PoolSample{{T: 0, Desired: 20, Replicas: 20, Ready: 0}, {T: 9, Desired: 20, Replicas: 20, Ready: 20}}
	c.Stats.Correctness = results.Correctness{FillCreatesPerSlot: &one, RefillCreatesPerSlot: &one, PodCreatesPerSandbox: &one}
	if mod != nil {
		mod(&c)
	}
	return c
}

func ptrs(cells []results.Cell) []*results.Cell {
	out := make([]*results.Cell, len(cells))
	for i := range cells {
		out[i] = &cells[i]
	}
	return out
}

func f64(v float64) *float64 { return &v }

// verdictOf finds key among verdicts.
func verdictOf(vs []results.InvariantVerdict, key string) (results.InvariantVerdict, bool) {
	for _, v := range vs {
		if v.Key == key {
			return v, true
		}
	}
	return results.InvariantVerdict{}, false
}

func TestInvariants(t *testing.T) {
	reps := func(n int, mod func(rep int, c *results.Cell)) []results.Cell {
		var out []results.Cell
		for rep := 1; rep <= n; rep++ {
			out = append(out, invCell("none", rep, func(c *results.Cell) {
				if mod != nil {
					mod(rep, c)
				}
			}))
		}
		return out
	}
	fill := func(vals ...*float64) func(rep int, c *results.Cell) {
		return func(rep int, c *results.Cell) { c.Stats.Correctness.FillCreatesPerSlot = vals[rep-1] }
	}
	cases := []struct {
		name  string
		cells []results.Cell
		key   string
		want  string // the verdict's text; "" when the key must have no verdict
		viol  int
	}{
		{"the pool over-filled in every repetition", reps(3, func(rep int, c *results.Cell) {
			c.Stats.Correctness.PoolExcessMax = []int{45, 27, 4}[rep-1]
		}), "correctness.pool_excess_max", "violated in 3 of 3 repetitions (45, 27, 4)", 3},
		{"exactly full in every repetition", reps(5, nil), "correctness.pool_excess_max", "held in 5 of 5 repetitions", 0},
		{"one repetition", reps(1, nil), "correctness.orphans", "held in 1 of 1 repetition", 0},
		{"one over-filling repetition of three", reps(3, func(rep int, c *results.Cell) {
			if rep == 2 {
				c.Stats.Correctness.DoubleBound = 1
			}
		}), "correctness.double_bound", "violated in 1 of 3 repetitions (1)", 1},
		{"over-creation ratios", reps(3, fill(f64(1.15), f64(1.09), f64(1.01))), "correctness.fill_creates_per_slot", "violated in 3 of 3 repetitions (1.15, 1.09, 1.01)", 3},
		// The tolerance edge: 0.001 holds on both sides, a little more does not; 1.02 (6 extra
		// creates in a 300-slot pool) is over-creation.
		{"at the tolerance", reps(3, fill(f64(1.001), f64(0.999), f64(1))), "correctness.fill_creates_per_slot", "held in 3 of 3 repetitions", 0},
		{"just past the tolerance", reps(3, fill(f64(1.0011), f64(1.02), f64(1.021))), "correctness.fill_creates_per_slot", "violated in 3 of 3 repetitions (1.0011, 1.02, 1.021)", 3},
		{"NaN repetitions are skipped", reps(3, fill(nil, f64(1.2), nil)), "correctness.fill_creates_per_slot", "violated in 1 of 1 repetition (1.2)", 1},
		{"never measured: no verdict", reps(3, fill(nil, nil, nil)), "correctness.fill_creates_per_slot", "", 0},
		{"no brake to judge: no verdict", reps(3, nil), "brake.engaged", "", 0},
		{"a brake that did not engage", reps(2, func(rep int, c *results.Cell) {
			engaged := rep == 1
			c.Stats.BrakeEngaged = &engaged
		}), "brake.engaged", "violated in 1 of 2 repetitions (0)", 1},
		// A refill that did not finish, a failed claim, a fault that took sandboxes away: the
		// refill ratio of that repetition is not judged.
		{"unsettled refills are not judged", reps(4, func(rep int, c *results.Cell) {
			c.Stats.Correctness.RefillCreatesPerSlot = f64(0.6)
			switch rep {
			case 1:
				c.Pool[len(c.Pool)-1].Ready = 12
			case 2:
				c.Stats.Failed = 1
			case 3:
				c.Stats.Fault = &results.FaultStats{Nodes: []string{"gpu-1"}, SandboxesLost: 3}
			case 4:
				c.Stats.Correctness.RefillCreatesPerSlot = f64(1.1)
			}
		}), "correctness.refill_creates_per_slot", "violated in 1 of 1 repetition (1.1)", 1},
		{"the GPU fault's invariants", reps(2, func(rep int, c *results.Cell) {
			c.Stats.Fault = &results.FaultStats{Invariants: []results.Invariant{{Name: "never all GPU nodes at once", Held: rep == 1}}}
		}), "fault.invariants_violated", "violated in 1 of 2 repetitions (1)", 1},
		{"gang cells have no warm-pool invariants", []results.Cell{{Name: "gate-on", Rep: 1, Gang: &results.Gang{}}}, "correctness.pool_excess_max", "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := verdictOf(Invariants(ptrs(c.cells)), c.key)
			if c.want == "" {
				if ok {
					t.Fatalf("%s judged: %+v", c.key, got)
				}
				return
			}
			if !ok {
				t.Fatalf("no verdict on %s", c.key)
			}
			if got.Text != c.want || got.Violated != c.viol || len(got.Values) != c.viol {
				t.Errorf("%s: %+v, want %q (%d violated)", c.key, got, c.want, c.viol)
			}
		})
	}
}

func TestIsInvariant(t *testing.T) {
	for key, want := range map[string]bool{
		"correctness.pool_excess_max": true, "correctness.refill_creates_per_slot": true, "brake.engaged": true,
		"correctness.fill_api_deletes": false, "claim.p99_ms": false, "": false,
	} {
		if got := IsInvariant(key); got != want {
			t.Errorf("IsInvariant(%q) = %v", key, got)
		}
	}
	// Every invariant is a summary metric (a typo would judge nothing, silently).
	units := MetricUnits()
	for _, d := range invariantTable() {
		if _, ok := units[d.key]; !ok {
			t.Errorf("invariant %s is no summary metric", d.key)
		}
	}
}

// Summaries carry each cell's invariants.
func TestSummarizeInvariants(t *testing.T) {
	var cells []results.Cell
	for rep := 1; rep <= 3; rep++ {
		cells = append(cells, invCell("none", rep, nil), invCell("both", rep, func(c *results.Cell) {
			c.Stats.Correctness.PoolExcessMax = 2 * rep
		}))
	}
	s := Summarize(cells, []string{"none", "both"}, "none", 1)
	if v, ok := verdictOf(s[0].Invariants, "correctness.pool_excess_max"); !ok || v.Text != "held in 3 of 3 repetitions" {
		t.Errorf("none: %+v", s[0].Invariants)
	}
	if v, ok := verdictOf(s[1].Invariants, "correctness.pool_excess_max"); !ok || v.Text != "violated in 3 of 3 repetitions (2, 4, 6)" {
		t.Errorf("both: %+v", s[1].Invariants)
	}
}

func TestInvariantGate(t *testing.T) {
	excess := func(name string, vals ...int) []results.Cell {
		var out []results.Cell
		for i, v := range vals {
			out = append(out, invCell(name, i+1, func(c *results.Cell) { c.Stats.Correctness.PoolExcessMax = v }))
		}
		return out
	}
	unmeasured := excess("none", 0, 0)
	for i := range unmeasured {
		unmeasured[i].Stats.Correctness = results.Correctness{} // ratios NaN, counts 0
	}
	errored := excess("none", 0, 45)
	errored[1].Error = "lab broke"
	cases := []struct {
		name   string
		cells  []results.Cell
		skip   func(string) bool
		ok     bool
		passed bool
		msg    string
	}{
		{"a violation in one cell", append(excess("none@v0.5.3", 45, 27, 4), excess("none@v0.5.5", 0, 0, 0)...), nil, true, false,
			"none@v0.5.3: correctness.pool_excess_max violated in 3 of 3 repetitions (45, 27, 4)"},
		{"the skipped cells are not judged", append(excess("none@v0.5.3", 45, 27, 4), excess("none@v0.5.5", 0, 0, 0)...),
			func(c string) bool { return strings.HasSuffix(c, "@v0.5.3") }, true, true, "passed: every repetition of 1 cell(s) held"},
		{"all held", append(excess("none", 0, 0, 0), excess("both", 0, 0, 0)...), nil, true, true,
			"passed: every repetition of 2 cell(s) held correctness.double_bound, correctness.fill_creates_per_slot"},
		{"NaN ratios do not fail", unmeasured, nil, true, true, "passed:"},
		{"a cell with an error is not measured", errored, nil, true, true, "passed:"},
		{"no invariant to judge", []results.Cell{{Name: "gate-on", Rep: 1, Gang: &results.Gang{}}}, nil, false, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, ok := InvariantGate(&results.Results{Cells: c.cells}, c.skip)
			if ok != c.ok || v.Passed != c.passed || !strings.Contains(v.Message, c.msg) {
				t.Errorf("ok %v, verdict %+v; want ok %v, passed %v, message containing %q", ok, v, c.ok, c.passed, c.msg)
			}
		})
	}
}

func TestInvariantChanges(t *testing.T) {
	run := func(excess ...int) *results.Results {
		r := &results.Results{Seed: 1}
		for i, v := range excess {
			r.Cells = append(r.Cells, invCell("none", i+1, func(c *results.Cell) { c.Stats.Correctness.PoolExcessMax = v }))
		}
		r.Summary = Summarize(r.Cells, []string{"none"}, "none", 1)
		return r
	}
	held, broken, other := run(0, 0, 0), run(45, 27, 4), run(3, 0, 0)
	cases := []struct {
		name  string
		runs  []*results.Results
		lines []string // InvariantChanges' texts
		regs  []string // RunRegressions
	}{
		{"violated in B, held in A: a regression", []*results.Results{held, broken},
			[]string{"regression: cell none: correctness.pool_excess_max violated in 3 of 3 repetitions (45, 27, 4) in B, held in 3 of 3 repetitions in A"},
			[]string{"none correctness.pool_excess_max violated in 3 of 3 repetitions (45, 27, 4) in B, held in 3 of 3 repetitions in A"}},
		{"violated in A, held in B: fixed", []*results.Results{broken, held},
			[]string{"fixed: cell none: correctness.pool_excess_max held in 3 of 3 repetitions in B, violated in 3 of 3 repetitions (45, 27, 4) in A"}, nil},
		{"violated in both: not a regression", []*results.Results{other, broken},
			[]string{"still violated: cell none: correctness.pool_excess_max violated in 3 of 3 repetitions (45, 27, 4) in B, violated in 1 of 3 repetitions (3) in A"}, nil},
		{"held in both", []*results.Results{held, held}, nil, nil},
		// Five repetitions a side make 0 -> 12 significant: the invariant's line, not also a p-value's.
		{"listed once", []*results.Results{run(0, 0, 0, 0, 0), run(45, 27, 4, 12, 9)},
			[]string{"regression: cell none: correctness.pool_excess_max violated in 5 of 5 repetitions (45, 27, 4, 12, 9) in B, held in 5 of 5 repetitions in A"},
			[]string{"none correctness.pool_excess_max violated in 5 of 5 repetitions (45, 27, 4, 12, 9) in B, held in 5 of 5 repetitions in A"}},
		{"regressions first", []*results.Results{other, held, broken},
			[]string{"still violated: cell none: correctness.pool_excess_max violated in 3 of 3 repetitions (45, 27, 4) in C, violated in 1 of 3 repetitions (3) in A",
				"fixed: cell none: correctness.pool_excess_max held in 3 of 3 repetitions in B, violated in 1 of 3 repetitions (3) in A"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmp := CompareRuns(c.runs, 1)
			invs := CompareInvariants(c.runs, cmp)
			var lines []string
			for _, ch := range InvariantChanges(invs) {
				lines = append(lines, ch.Text)
			}
			if !reflect.DeepEqual(lines, c.lines) {
				t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(c.lines, "\n"))
			}
			if regs := RunRegressions(cmp, invs); !reflect.DeepEqual(regs, c.regs) {
				t.Errorf("regressions %q, want %q", regs, c.regs)
			}
		})
	}
	// The row's "vs A" is both verdicts, not a p-value.
	invs := CompareInvariants([]*results.Results{held, broken}, CompareRuns([]*results.Results{held, broken}, 1))
	for _, ia := range invs {
		if ia.Key == "correctness.pool_excess_max" {
			if got := ia.VsA(1); got != "A held in 3 of 3 repetitions, B violated in 3 of 3 repetitions (45, 27, 4)" {
				t.Errorf("VsA = %q", got)
			}
		}
	}
}
