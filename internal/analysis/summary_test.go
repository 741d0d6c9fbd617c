package analysis

import (
	"fmt"
	"testing"

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
	cells := []results.Cell{mk("none", 1, 100), mk("none", 2, 100), mk("both", 1, 400), mk("both", 2, 400)}
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
	if p50 == nil || float64(p50.Value) != 424 || p50.Delta == nil || float64(p50.Delta.Abs) != 300 || !p50.Delta.Comparison.Significant {
		t.Fatalf("p50 metric %+v", p50)
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
