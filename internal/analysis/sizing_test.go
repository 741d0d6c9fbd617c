package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/brakebench/brakebench/internal/results"
)

func sizingRun(refill []float64, warm int, ceil []float64) *results.Results {
	r := &results.Results{RunID: "r1", Baseline: "none"}
	for i := range refill {
		s := refill[i]
		c := results.Cell{Name: "none", Rep: i + 1}
		c.Stats.Warm, c.Stats.Total, c.Stats.RefillSeconds = warm, warm, &s
		c.Stats.Ceilings.RefillCreate5s = ceil[i]
		r.Cells = append(r.Cells, c)
	}
	r.Summary = Summarize(r.Cells, []string{"none"}, "none", 1)
	return r
}

func TestSizing(t *testing.T) {
	r := sizingRun([]float64{5, 6, 10}, 300, []float64{60, 55, 65})
	cases := []struct {
		name   string
		cell   string
		target SizingTarget
		want   []string // substrings of "what = value (from)" lines, in order
		err    string
	}{
		{"rate", "none", SizingTarget{Rate: 130}, []string{"pools for 130 claims/s = 3 (interval's lower end), 3 (median) (refill create ceiling 60.0/s over 5 s, median of 3 repetitions of none"}, ""},
		{"rate and hold", "none", SizingTarget{Rate: 10, Hold: time.Minute}, []string{"pools for 10 claims/s = 1", "claimed sandboxes alive at 10 claims/s = 600"}, ""},
		// Slowest repetition: 300 warm slots in 10 s = 30/s; a burst of 600 refills in 20 s.
		{"burst", "none", SizingTarget{Burst: 600, Hold: 50 * time.Second}, []string{"pool replicas for a burst of 600 = 600", "time to refill 600 = 20 s (refill 30.0 warm slots/s, the slowest of 3 repetitions",
			"claimed sandboxes alive, bursts of 600 every 20 s held 50s = 1800"}, ""},
		{"unknown cell", "both", SizingTarget{Rate: 1}, nil, `no cell "both" in run r1 (cells: none)`},
		{"nothing asked", "none", SizingTarget{}, nil, "nothing asked"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines, err := Sizing(r, tc.cell, tc.target)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range lines {
				got = append(got, l.What+" = "+l.Value+" ("+l.From+")")
			}
			all := strings.Join(got, "\n")
			at := 0
			for _, w := range tc.want {
				i := strings.Index(all[at:], w)
				if i < 0 {
					t.Fatalf("lines lack %q (in order):\n%s", w, all)
				}
				at += i + len(w)
			}
		})
	}
	// Never a number without its measurement: a run whose pool never refilled says so.
	noRefill := sizingRun([]float64{5}, 300, []float64{0})
	noRefill.Cells[0].Stats.RefillSeconds = nil
	noRefill.Summary = Summarize(noRefill.Cells, []string{"none"}, "none", 1)
	lines, err := Sizing(noRefill, "none", SizingTarget{Rate: 10, Burst: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if strings.HasPrefix(l.What, "pools for") || strings.HasPrefix(l.What, "time to refill") {
			if l.Value != "not computed" {
				t.Errorf("%s = %s without a measurement (%s)", l.What, l.Value, l.From)
			}
		}
	}
}
