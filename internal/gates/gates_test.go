package gates

import (
	"strings"
	"testing"
)

var schema = Schema{
	Metrics: map[string]string{"claim.p99_ms": "ms", "claims.failed": "claims", "ceiling.refill_create_5s": "/s", "pool.refill_s": "s"},
	Cells:   []string{"none", "max-refill-rate", "both"},
	Brakes:  map[string]string{"max_refill_rate": "", "replenish_delay": "ms"},
}

var values = Values{
	Cells:  []string{"none", "max-refill-rate", "both"},
	Brakes: map[string]float64{"max_refill_rate": 10, "replenish_delay": 15000},
	Metric: func(cell, key string) (float64, bool) {
		m := map[string]map[string]float64{
			"none":            {"claim.p99_ms": 900, "claims.failed": 0, "ceiling.refill_create_5s": 42, "pool.refill_s": 6},
			"max-refill-rate": {"claim.p99_ms": 950, "claims.failed": 0, "ceiling.refill_create_5s": 11, "pool.refill_s": 31},
			"both":            {"claim.p99_ms": 1200, "claims.failed": 2, "ceiling.refill_create_5s": 10, "pool.refill_s": 40},
		}
		v, ok := m[cell][key]
		return v, ok
	},
}

func TestEvaluate(t *testing.T) {
	cases := []struct {
		expr   string
		passed bool
		msg    string
	}{
		{"cell(max-refill-rate).claim.p99 <= 1s", true, ""},
		{"cell(both).claim.p99 <= 1s", false, "1200.0ms <= 1000.0ms is false"},
		{"cell(both).claim.p99 <= cell(none).claim.p99 * 1.10", false, "1200.0ms <= 990.0ms is false"},
		{"cell(max-refill-rate).claim.p99 <= cell(none).claim.p99 * 1.10", true, ""},
		{"all.claims.failed == 0", false, "both: 2 == 0 is false"},
		{"cell(max-refill-rate).ceiling.refill_create_5s <= 1.15 * brake.max_refill_rate", true, ""},
		{"cell(none).ceiling.refill_create_5s <= 1.15 * brake.max_refill_rate", false, "42 <= 11.5 is false"},
		{"cell(both).pool.refill_s >= brake.replenish_delay", true, ""},
		{"cell(both).pool.refill_s - cell(none).pool.refill_s < 30s", false, "34000.0ms < 30000.0ms is false"},
		{`cell("both").claim.p99 <= 1s`, false, "1200.0ms <= 1000.0ms is false"},
	}
	for _, c := range cases {
		gs, err := Parse("t.yaml", []byte("gates:\n- expr: "+c.expr+"\n"), schema)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		v := Evaluate(gs, values)[0]
		if v.Passed != c.passed || (c.msg != "" && !strings.Contains(v.Message, c.msg)) {
			t.Errorf("%s: passed=%v message %q, want passed=%v containing %q", c.expr, v.Passed, v.Message, c.passed, c.msg)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		yaml string
		want string
	}{
		{"gates: [unclosed\n", "g.yaml:2: not valid YAML"},
		{"gates:\n  - name: a\n    expr: [unclosed\n  - name: b\n", `g.yaml:3: not valid YAML: did not find expected`},
		{"gates:\n  - name: a\n    expr: all.claims.failed == 0\n---\ngates: []\n", `g.yaml:4: a second YAML document starts here`},
		{"rules:\n- expr: a\n", `g.yaml:1: unknown key "rules"`},
		{"gates: {}\n", "g.yaml:1: `gates:` must be a list"},
		{"gates:\n- name: x\n", "g.yaml:2: gate has no expr"},
		{"gates:\n- exp: all.claims.failed == 0\n", `g.yaml:2: unknown gate key "exp"`},
		{"gates:\n- name: ok\n  expr: all.claims.failed == 0\n- expr: all.claims.failed\n", "g.yaml:4: expression \"all.claims.failed\" has no comparison"},
		{"gates:\n- expr: cell(none).claim.p98 <= 1s\n", `g.yaml:2: left of <=: unknown metric "claim.p98"`},
		{"gates:\n- expr: cell(turbo).claim.p99 <= 1s\n", `g.yaml:2: left of <=: cell turbo matches no cell of this run (cells: none, max-refill-rate, both)`},
		{"gates:\n- expr: cell(brake=turbo).claim.p99 <= 1s\n", `g.yaml:2: left of <=: cell (brake=turbo) matches no cell`},
		{"gates:\n- expr: cell(\"none@v1\").claim.p99 <= 1s\n", `g.yaml:2: left of <=: cell "none@v1" matches no cell`},
		{"gates:\n- expr: cell(brake=).claim.p99 <= 1s\n", `brake= needs a value`},
		{"gates:\n- expr: cell(none).claim.p99 <= 900\n", "g.yaml:2: compares a duration with a plain number"},
		{"gates:\n- expr: cell(none).claim.p99 + 2 <= 1s\n", "g.yaml:2: cannot add or subtract a duration and a plain number"},
		{"gates:\n- expr: all.claims.failed >= 1s\n", "g.yaml:2: compares a duration with a plain number"},
		{"gates: []\n", "g.yaml:1: `gates:` is empty"},
		{"", "g.yaml:1: expected a mapping with a `gates:` list"},
		{"gates:\n- expr: cell(none).claim.p99 <= 1 parsec\n", `g.yaml:2: right of <=: unexpected "parsec"`},
		{"gates:\n- expr: cell(none).claim.p99 <= 1x\n", `g.yaml:2: right of <=: "1x" is neither a number nor a duration`},
		{"gates:\n- expr: cell(none).claim.p99 <= (1s\n", `g.yaml:2: right of <=: missing )`},
		{"gates:\n- expr: cell(none).claim.p99 <= brake.speed\n", `g.yaml:2: right of <=: unknown operand "brake.speed"`},
		{"gates:\n- expr: cell(none) <= 1s\n", "g.yaml:2: left of <=: cell(...) must be followed by .METRIC"},
		{"gates:\n- expr: claims.failed == 0 $\n", `g.yaml:2: left of ==: unknown operand "claims.failed"`},
	}
	for _, c := range cases {
		_, err := Parse("g.yaml", []byte(c.yaml), schema)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want %q", c.yaml, err, c.want)
		}
	}
}

// A run over two versions (cells carry an @version suffix): quoted names select one cell, axis
// selectors and bare primary-axis words apply the gate per version, and the failure names the
// version it failed for.
func TestSelectorsPerVersion(t *testing.T) {
	cells := []string{"none@v0.5.3", "both@v0.5.3", "none@v0.5.5", "both@v0.5.5"}
	axes := map[string]map[string]string{}
	for _, c := range cells {
		b, v, _ := strings.Cut(c, "@")
		axes[c] = map[string]string{"brake": b, "version": v, "copy": "1", "fault": "none"}
	}
	s := Schema{Metrics: schema.Metrics, Brakes: schema.Brakes, Cells: cells, Axes: axes, Primary: "brake"}
	p99 := map[string]float64{"none@v0.5.3": 900, "both@v0.5.3": 950, "none@v0.5.5": 900, "both@v0.5.5": 1500}
	vals := Values{Cells: cells, Axes: axes, Metric: func(cell, key string) (float64, bool) {
		v, ok := p99[cell]
		return v, ok && key == "claim.p99_ms"
	}}
	cases := []struct {
		expr   string
		passed bool
		msg    string
	}{
		{`cell("both@v0.5.3").claim.p99 <= 1s`, true, ""},
		{`cell("both@v0.5.5").claim.p99 <= 1s`, false, "1500.0ms <= 1000.0ms is false"},
		{`cell(brake=both, version=v0.5.3).claim.p99 <= 1s`, true, ""},
		// Written once, held per version: fails for v0.5.5 only, and says so.
		{`cell(both).claim.p99 <= cell(none).claim.p99 * 1.1`, false, "[copy=1,fault=none,version=v0.5.5]: 1500.0ms <= 990.0ms is false"},
		{`cell(brake=both).claim.p99 <= 2s`, true, ""},
		{`cell(version=v0.5.5).claim.p99 <= 1s`, false, "[brake=both,copy=1,fault=none]: 1500.0ms <= 1000.0ms is false"},
	}
	for _, c := range cases {
		gs, err := Parse("t.yaml", []byte("gates:\n- expr: '"+c.expr+"'\n"), s)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		v := Evaluate(gs, vals)[0]
		if v.Passed != c.passed || (c.msg != "" && !strings.Contains(v.Message, c.msg)) {
			t.Errorf("%s: passed=%v message %q, want passed=%v containing %q", c.expr, v.Passed, v.Message, c.passed, c.msg)
		}
	}
	// The per-version pairing must not pair cells of different versions: with v0.5.5's both
	// missing, the gate holds for v0.5.3 and has nothing to judge for v0.5.5.
	vals.Cells = cells[:3]
	gs, _ := Parse("t.yaml", []byte("gates:\n- expr: cell(both).claim.p99 <= cell(none).claim.p99 * 1.1\n"), s)
	if v := Evaluate(gs, vals)[0]; !v.Passed {
		t.Errorf("v0.5.3 only: %s", v.Message)
	}
}

// Built-in gate files name every brake; ForCells keeps the gates the run can judge and says
// which it skipped.
func TestForCells(t *testing.T) {
	s := schema
	s.Lenient = true
	s.Cells = []string{"none", "both"}
	gs, err := Parse("d.yaml", []byte("gates:\n- expr: cell(none).claims.failed == 0\n- name: capped\n  expr: cell(max-refill-rate).ceiling.refill_create_5s <= 11\n"), s)
	if err != nil {
		t.Fatal(err)
	}
	kept, skipped := ForCells(gs, s)
	if len(kept) != 1 || len(skipped) != 1 || !strings.Contains(skipped[0], `d.yaml:4: gate "capped" skipped: this run has no cell max-refill-rate`) {
		t.Errorf("kept %d, skipped %q", len(kept), skipped)
	}
}

// Gates against a baseline run: baseline.cell(...) pairs with the current cell of the same open
// axes (per version here), and naming it without a baseline is an error before the run.
func TestBaselineOperands(t *testing.T) {
	cells := []string{"none@v1", "none@v2"}
	axes := map[string]map[string]string{"none@v1": {"brake": "none", "version": "v1"}, "none@v2": {"brake": "none", "version": "v2"}}
	s := Schema{Metrics: schema.Metrics, Brakes: schema.Brakes, Cells: cells, Axes: axes, Primary: "brake", Baseline: cells, BaselineAxes: axes}
	now := map[string]float64{"none@v1": 1000, "none@v2": 1300}
	before := map[string]float64{"none@v1": 950, "none@v2": 1000}
	vals := Values{Cells: cells, Axes: axes, BaselineCells: cells, BaselineAxes: axes,
		Metric:   func(c, k string) (float64, bool) { v, ok := now[c]; return v, ok },
		Baseline: func(c, k string) (float64, bool) { v, ok := before[c]; return v, ok }}
	gs, err := Parse("b.yaml", []byte("gates:\n- expr: cell(none).claim.p99 <= baseline.cell(none).claim.p99 * 1.1\n"), s)
	if err != nil {
		t.Fatal(err)
	}
	if v := Evaluate(gs, vals)[0]; v.Passed || !strings.Contains(v.Message, "version=v2]: 1300.0ms <= 1100.0ms is false") || strings.Contains(v.Message, "v1]") {
		t.Errorf("per-version baseline gate: %+v", v)
	}
	noBase := s
	noBase.Baseline = nil
	if _, err := Parse("b.yaml", []byte("gates:\n- expr: cell(none).claim.p99 <= baseline.cell(none).claim.p99\n"), noBase); err == nil || !strings.Contains(err.Error(), "b.yaml:2: right of <=: baseline.cell(...) needs a baseline run (--baseline OLD.json)") {
		t.Errorf("no baseline: %v", err)
	}
	if _, err := Parse("b.yaml", []byte("gates:\n- expr: cell(none).claim.p99 <= baseline.cell(both).claim.p99\n"), s); err == nil || !strings.Contains(err.Error(), "matches no cell of the baseline run") {
		t.Errorf("unknown baseline cell: %v", err)
	}
}

// An expression nested or long enough to overflow the parser's or the evaluator's stack is an
// error naming the file, the line and the gate (it was a Go fatal error); the limits themselves
// still parse.
func TestExpressionBounds(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("(", n) + "1s" + strings.Repeat(")", n) }
	cases := []struct {
		name, gate string
		want       string // "" when it parses
	}{
		{"100 levels", "- expr: cell(none).claim.p99 <= " + nest(MaxExprDepth), ""},
		{"101 levels", "- name: deep\n  expr: cell(none).claim.p99 <= " + nest(MaxExprDepth+1),
			`g.yaml:3: gate "deep": right of <=: parentheses nest more than 100 deep; expected at most 100 levels`},
		{"100000 levels", "- name: deep\n  expr: " + nest(100000) + " <= 2s",
			`g.yaml:3: gate "deep": expression is 200008 bytes long; expected at most 4096`},
		{"4000 levels, within the length", "- expr: cell(none).claim.p99 <= " + strings.Repeat("(", 4000),
			`g.yaml:2: gate "cell(none).claim.p99 <= (((((((((((((((("...: right of <=: parentheses nest more than 100 deep`},
		{"a long chain of sums", "- name: chain\n  expr: " + strings.Repeat("1+", 3000000) + "1 <= 2",
			`g.yaml:3: gate "chain": expression is 6000006 bytes long; expected at most 4096`},
		{"a name of 200 bytes", "- name: " + strings.Repeat("n", MaxNameLen) + "\n  expr: all.claims.failed <= 0", ""},
		{"a name of 100000 bytes", "- name: " + strings.Repeat("n", 100000) + "\n  expr: all.claims.failed <= 0",
			`g.yaml:2: gate name "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"... (100000 bytes): expected one line of at most 200 bytes`},
		{"a name of two lines", "- name: \"first\\nsecond\"\n  expr: all.claims.failed <= 0",
			`g.yaml:2: gate name "first\nsecond" (12 bytes): expected one line of at most 200 bytes`},
		{"the longest expression", "- expr: all.claims.failed <= " + strings.Repeat("1+", (MaxExprLen-len("all.claims.failed <= 1"))/2) + "1", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("g.yaml", []byte("gates:\n"+c.gate+"\n"), schema)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
				t.Errorf("error %v\nwant      %s", err, c.want)
			}
		})
	}
}
