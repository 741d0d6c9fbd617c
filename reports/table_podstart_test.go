package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/stats"
)

// Pod start figures are labelled a real runtime's cold start only for cells placed on the real
// node; kwok's simulated boot is never called one.
func TestPodStartTextOnlyForTheRealNode(t *testing.T) {
	q := stats.Summarize([]float64{500, 700, 900})
	for _, tc := range []struct {
		placement string
		want      bool
	}{{"real-node", true}, {"simulated", false}, {"", false}} {
		r := &results.Results{Cells: []results.Cell{{ID: "none#1", Stats: results.CellStats{Cold: 3, PodStart: &results.PodStart{
			Node: "brakebench-real-0", Placement: tc.placement, Schedule: q, Run: q, Ready: q, CreateToReady: q}}}}}
		var buf bytes.Buffer
		podStartText(&buf, r)
		if got := strings.Contains(buf.String(), "cold start on this lab's runtime"); got != tc.want {
			t.Errorf("placement %q: labelled %v, want %v:\n%s", tc.placement, got, tc.want, buf.String())
		}
		if tc.want && !strings.Contains(buf.String(), "created->Ready p50 700ms") {
			t.Errorf("figures missing:\n%s", buf.String())
		}
	}
}

// A cell whose claims were all served warm shows its refill's pods, not a cold start.
func TestPodStartTextRefillIsNotACold(t *testing.T) {
	q := stats.Summarize([]float64{500})
	r := &results.Results{Cells: []results.Cell{{ID: "none#1", Stats: results.CellStats{Warm: 5, PodStart: &results.PodStart{
		Placement: "real-node", Schedule: q, Run: stats.Summarize(nil), Ready: q, CreateToReady: q}}}}}
	var buf bytes.Buffer
	podStartText(&buf, r)
	out := buf.String()
	if strings.Contains(out, "cold start") || !strings.Contains(out, "pod start (refill") || !strings.Contains(out, "scheduled->running p50 -,") {
		t.Errorf("refill line:\n%s", out)
	}
}
