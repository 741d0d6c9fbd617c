package trend_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	"github.com/brakebench/brakebench/internal/memwatch"
	"github.com/brakebench/brakebench/internal/trend"
	"github.com/brakebench/brakebench/reports"
)

// Targets for a year of nightly results (issue: trend over 365 results.json).
const (
	yearRuns        = 365
	yearTimeTarget  = 10 * time.Second
	yearMemoryLimit = 500 // MiB
)

// BenchmarkTrendYear runs `trend`'s work over 365 synthetic results.json files that carry
// per-claim data as real ones do (12 cells of 300 claims: the default matrix's size, ~0.9 MB a
// file): reading, series, change points, trend.html and trend.json. It reports the time and the
// process's peak memory above idle; it fails above 500 MiB, or above three times the 10 s target.
func BenchmarkTrendYear(b *testing.B) {
	dir := b.TempDir()
	cells := cellsJSON(b, 12, 300)
	paths := writeRuns(b, dir, "warmpool-burst", yearRuns, cells, stepAt(300, 1.2, 9), 12)
	var size int64
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			size += fi.Size()
		}
	}
	for i := 0; i < b.N; i++ {
		debug.FreeOSMemory() // the idle baseline: return what setting up left behind
		base := memwatch.Footprint()
		peak := memwatch.Watch()
		start := time.Now()
		ps, err := trend.Expand([]string{dir})
		if err != nil {
			b.Fatal(err)
		}
		runs, err := trend.Load(ps)
		if err != nil {
			b.Fatal(err)
		}
		tr := trend.Build(runs, trend.DefaultOptions)
		page, err := reports.TrendHTML(tr)
		if err != nil {
			b.Fatal(err)
		}
		raw, err := json.Marshal(tr)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "trend.html"), page, 0o644); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		p := peak.Stop()
		peakMiB := float64(p-min(base, p)) / memwatch.MiB
		cps := 0
		for _, s := range tr.Series {
			cps += len(s.ChangePoints)
		}
		// One planted step among 362 series (360 of them stationary with 10% noise): found, and
		// nothing else is.
		if cps != 1 || len(tr.Regressions()) != 1 {
			b.Errorf("planted +20%% step at run 300 among %d series: %d change points, regressions %q", len(tr.Series), cps, tr.Regressions())
		}
		b.ReportMetric(took.Seconds(), "trend-s")
		b.ReportMetric(peakMiB, "peak-MiB")
		fmt.Printf("trend over %d results.json (%.0f MiB of JSON with per-claim data): %s, peak memory %.0f MiB above idle; trend.html %.0f KiB, trend.json %.0f KiB\n",
			len(runs), float64(size)/memwatch.MiB, took.Round(time.Millisecond), peakMiB, float64(len(page))/1024, float64(len(raw))/1024)
		if peakMiB > yearMemoryLimit {
			b.Errorf("peak memory %.0f MiB above the %d MiB limit", peakMiB, yearMemoryLimit)
		}
		if took > yearTimeTarget {
			fmt.Printf("WARNING: trend took %s, above its %s target\n", took.Round(time.Millisecond), yearTimeTarget)
		}
		if took > 3*yearTimeTarget {
			b.Errorf("trend took %s, more than three times its %s target", took.Round(time.Millisecond), yearTimeTarget)
		}
	}
}
