package gates

import (
	"strings"
	"testing"
)

// Cells named by inline brake values (matrix.brakes=max-refill-rate=20,...) are selected by
// their quoted names or by brake axis; an unquoted name with '=' is not silently read as another
// cell; and brake.KEY in a run with two settings of that brake is an error that says why.
func TestInlineBrakeCells(t *testing.T) {
	cells := []string{"none", "max-refill-rate=20", "max-refill-rate=40", "replenish-delay=5s+max-refill-rate=40"}
	axes := map[string]map[string]string{}
	for _, c := range cells {
		axes[c] = map[string]string{"brake": c, "copy": "1", "version": "pinned", "fault": "none"}
	}
	s := Schema{Metrics: schema.Metrics, Brakes: schema.Brakes, Cells: cells, Axes: axes, Primary: "brake"}
	p99 := map[string]float64{"none": 900, "max-refill-rate=20": 800, "max-refill-rate=40": 1000, "replenish-delay=5s+max-refill-rate=40": 700}
	vals := Values{Cells: cells, Axes: axes, Brakes: map[string]float64{"replenish_delay": 5000}, Metric: func(cell, key string) (float64, bool) {
		v, ok := p99[cell]
		if key == "ceiling.refill_create_5s" {
			return 30, ok
		}
		return v, ok && key == "claim.p99_ms"
	}}
	cases := []struct {
		expr   string
		passed bool
		msg    string
	}{
		{`cell("max-refill-rate=20").claim.p99 <= cell(none).claim.p99`, true, ""},
		{`cell("max-refill-rate=40").claim.p99 <= cell(none).claim.p99`, false, "1000.0ms <= 900.0ms is false"},
		{`cell(brake="replenish-delay=5s+max-refill-rate=40").claim.p99 <= 750ms`, true, ""},
		{`cell("max-refill-rate=40").ceiling.refill_create_5s <= 1.4 * brake.max_refill_rate`, false, "set to more than one value"},
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
	if _, err := Parse("t.yaml", []byte("gates:\n- expr: 'cell(max-refill-rate=20).claim.p99 <= 1s'\n"), s); err == nil {
		t.Error("an unquoted name with '=' selected a cell; want an error (it reads as axis max-refill-rate=20)")
	}
}
