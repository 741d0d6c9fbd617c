package reports

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/results"
)

// An invariant's row in the run's table and report reads each cell's own verdict, not a p-value
// against the baseline.
func TestInvariantRows(t *testing.T) {
	r := &results.Results{Baseline: "none"}
	for _, name := range []string{"none", "max-refill-rate"} {
		for rep := 1; rep <= 3; rep++ {
			c := results.Cell{ID: fmt.Sprintf("%s#%d", name, rep), Name: name, Rep: rep}
			for i := 0; i < 10; i++ {
				l := 100 + float64(i)
				c.Claims = append(c.Claims, results.Claim{Name: fmt.Sprint(i), LatencyMS: &l, LaunchType: "warm"})
			}
			if name != "none" {
				engaged := rep != 2
				c.Stats.BrakeEngaged = &engaged
			}
			r.Cells = append(r.Cells, c)
		}
	}
	r.Summary = analysis.Summarize(r.Cells, []string{"none", "max-refill-rate"}, "none", 1)
	var table bytes.Buffer
	Table(&table, r)
	rows := map[string]string{} // key -> the table's line
	for _, l := range strings.Split(table.String(), "\n") {
		if k, _, ok := strings.Cut(l, " "); ok {
			rows[k] = l
		}
	}
	rep, err := Build(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	report := map[string][]string{} // key -> each cell's delta text
	for _, row := range rep.Rows {
		for _, v := range row.Values {
			report[row.Key] = append(report[row.Key], v.Delta+" | "+v.P)
		}
	}
	cases := []struct {
		source, key string
		got         string
		want        []string
		notWant     string
	}{
		{"table", "brake.engaged", rows["brake.engaged"], []string{"violated in 1 of 3 repetitions (0)"}, "~ (p="},
		{"table", "claim.p50_ms", rows["claim.p50_ms"], []string{"~ (p="}, "repetitions"},
		{"report", "correctness.pool_excess_max", strings.Join(report["correctness.pool_excess_max"], "; "),
			[]string{"held in 3 of 3 repetitions | invariant: ideal 0; held in 3 of 3 repetitions | invariant: ideal 0"}, "p="},
		{"report", "brake.engaged", strings.Join(report["brake.engaged"], "; "), []string{"violated in 1 of 3 repetitions (0) | invariant: ideal 1"}, "p="},
	}
	for _, c := range cases {
		for _, w := range c.want {
			if !strings.Contains(c.got, w) {
				t.Errorf("%s %s: %q lacks %q", c.source, c.key, c.got, w)
			}
		}
		if strings.Contains(c.got, c.notWant) {
			t.Errorf("%s %s: %q has %q", c.source, c.key, c.got, c.notWant)
		}
	}
}
