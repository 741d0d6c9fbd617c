package analysis

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/brakebench/brakebench/internal/results"
)

func TestSummarizeComparesWithBaseline(t *testing.T) {
	mk := func(name string, rep int, base float64) results.Cell {
		c := results.Cell{Name: name, Rep: rep}
		for i := 0; i < 50; i++ {
			l := base + float64(i)
			c.Claims = append(c.Claims, results.Claim{Name: fmt.Sprint(i), LatencyMS: &l, LaunchType: "warm"})
		}
		c.Stats.Ceilings.RefillCreate5s = base / 10
		return c
	}
	// Four repetitions a side, each with its own offset (the repetition is the unit of inference).
	var cells []results.Cell
	for rep := 1; rep <= 4; rep++ {
		cells = append(cells, mk("none", rep, 100+float64(rep)), mk("both", rep, 400+float64(rep)))
	}
	s := Summarize(cells, []string{"none", "both"}, "none", 1)
	if len(s) != 2 || s[0].Name != "none" || s[1].Name != "both" {
		t.Fatalf("summary order %+v", s)
	}
	var p50 *results.Metric
	for i := range s[1].Metrics {
		if s[1].Metrics[i].Key == "claim.p50_ms" {
			p50 = &s[1].Metrics[i]
		}
	}
	if p50 == nil || float64(p50.Value) != 427 || p50.Delta == nil || float64(p50.Delta.Abs) != 300 || !p50.Delta.Comparison.Significant ||
		p50.Delta.Comparison.Method != "permutation over repetitions" || float64(p50.Delta.Comparison.P) > 0.03 {
		t.Fatalf("p50 metric %+v delta %+v", p50, p50.Delta)
	}
	if lo, hi := float64(p50.Delta.CI.Lo), float64(p50.Delta.CI.Hi); lo > 300 || hi < 300 {
		t.Errorf("delta CI [%v,%v] should contain 300", lo, hi)
	}
	for _, m := range s[0].Metrics {
		if m.Delta != nil {
			t.Errorf("baseline compared with itself: %s", m.Key)
		}
	}
}

// Two repetitions a side, however many claims and however large the difference: no p-value, and
// the comparison says why (pooling the claims used to call this significant).
func TestSummarizeInsufficientRepetitions(t *testing.T) {
	mk := func(name string, rep int, base float64) results.Cell {
		c := results.Cell{Name: name, Rep: rep}
		for i := 0; i < 300; i++ {
			l := base + float64(i)
			c.Claims = append(c.Claims, results.Claim{Name: fmt.Sprint(i), LatencyMS: &l, LaunchType: "warm"})
		}
		c.Stats.Ceilings.RefillCreate5s = base / 10
		return c
	}
	cells := []results.Cell{mk("none", 1, 100), mk("none", 2, 110), mk("both", 1, 400), mk("both", 2, 410)}
	s := Summarize(cells, []string{"none", "both"}, "none", 1)
	for _, m := range s[1].Metrics {
		if m.Delta == nil || m.Delta.Comparison.Note == "no data" { // e.g. cold-claim latency: none here
			continue
		}
		c := m.Delta.Comparison
		if c.Significant || c.P == c.P || !strings.HasPrefix(c.Note, "insufficient repetitions") {
			t.Errorf("%s: significant %v, p %v, note %q; want no p-value and 'insufficient repetitions'", m.Key, c.Significant, c.P, c.Note)
		}
	}
}

func TestAAPairs(t *testing.T) {
	got := AAPairs([]string{"none", "none_2", "both", "both_2@v0.5.5", "both@v0.5.5", "none_3/apf-throttle", "none/apf-throttle", "replenish_x", "none_1"})
	want := []AAPair{{"none", "none_2"}, {"both@v0.5.5", "both_2@v0.5.5"}, {"none/apf-throttle", "none_3/apf-throttle"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("AAPairs = %v, want %v", got, want)
	}
}

// Drift: cells whose every repetition is 5% slower per 10 minutes than the last, whatever the
// cell's own level, read as about that over the run's 16.5 minutes; without drift the CI holds 0.
func TestDrift(t *testing.T) {
	mk := func(perTen float64) []results.Cell {
		t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		var cells []results.Cell
		levels := map[string]float64{"none": 5000, "both": 8000, "max-refill-rate": 6000}
		k := 0
		for rep := 1; rep <= 4; rep++ {
			for _, name := range []string{"none", "both", "max-refill-rate"} {
				minutes := float64(k) * 1.5
				noise := 1 + 0.01*float64((k*7)%5-2)
				c := results.Cell{Name: name, Rep: rep, T0: t0.Add(time.Duration(minutes * float64(time.Minute)))}
				c.Stats.Latency.All.P50 = levels[name] * math.Pow(1+perTen/100, minutes/10) * noise
				cells = append(cells, c)
				k++
			}
		}
		return cells
	}
	d := Drift(mk(5))
	want := (math.Pow(1.05, 16.5/10) - 1) * 100 // 12 repetitions 1.5 min apart: 16.5 min
	if d == nil || math.Abs(float64(d.PctOverRun)-want) > 2.5 || d.Minutes != 16.5 || d.Repetitions != 12 || float64(d.CI.Lo) > want || float64(d.CI.Hi) < want {
		t.Errorf("5%% drift read as %+v", d)
	}
	if d := Drift(mk(0)); d == nil || float64(d.CI.Lo) > 0 || float64(d.CI.Hi) < 0 {
		t.Errorf("no drift read as %+v", d)
	}
	if d := Drift(mk(5)[:5]); d != nil {
		t.Errorf("5 repetitions: %+v, want none", d)
	}
}
