package brakes

import (
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/scrape"
)

func TestCacheLabelSelectors(t *testing.T) {
	checkFlagBrake(t, "cache-label-selectors", nil, []string{"--cache-label-selectors"})
	b, _ := Get("cache-label-selectors")
	c := &results.Cell{Metrics: map[string]results.Scrape{"agent-sandbox-controller": {Series: []scrape.Series{
		{Name: "process_resident_memory_bytes", Type: "gauge", Value: 64 << 20}}}}}
	if _, text, ok := b.(Evidencer).Evidence(c, "true"); ok || !strings.Contains(text, "controller memory here 64 MiB") {
		t.Errorf("evidence ok %v %q", ok, text)
	}
}
