package reports

import (
	"fmt"
	"sort"
	"strings"

	"github.com/brakebench/brakebench/internal/results"
)

// LabOverRunText says in one line how the lab's own state moved over the run: etcd's database
// and revision, the lab processes' memory, the harness's goroutines and heap, and the
// housekeeping between cells ("" when the run did not record the lab's health).
func LabOverRunText(l *results.LabOverRun) string {
	if l == nil {
		return ""
	}
	mb := func(b float64) string {
		m := b / (1 << 20)
		if m < 10 {
			return fmt.Sprintf("%.1f", m) // a defragmented etcd holds well under 1 MB
		}
		return fmt.Sprintf("%.0f", m)
	}
	f, z := l.First, l.Last
	parts := []string{fmt.Sprintf("etcd db %s -> %s MB (in use %s -> %s MB, %d revisions)",
		mb(float64(f.EtcdDBBytes)), mb(float64(z.EtcdDBBytes)), mb(float64(f.EtcdDBInUseBytes)), mb(float64(z.EtcdDBInUseBytes)), z.EtcdRevision-f.EtcdRevision)}
	names := make([]string, 0, len(z.Processes))
	for n := range z.Processes {
		if _, ok := f.Processes[n]; ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var rss []string
	for _, n := range names {
		rss = append(rss, fmt.Sprintf("%s %s -> %s", n, mb(float64(f.Processes[n].RSSBytes)), mb(float64(z.Processes[n].RSSBytes))))
	}
	if len(rss) > 0 {
		parts = append(parts, "RSS MB: "+strings.Join(rss, ", "))
	}
	parts = append(parts, fmt.Sprintf("brakebench goroutines %d -> %d, heap %s -> %s MB", f.HarnessGoroutines, z.HarnessGoroutines, mb(float64(f.HarnessHeapBytes)), mb(float64(z.HarnessHeapBytes))))
	hk := "housekeeping: none"
	if l.Housekeeping != "none" {
		var what []string
		if strings.Contains(l.Housekeeping, "etcd-defrag") {
			what = append(what, mb(l.FreedBytes)+" MB freed")
		}
		if l.RestartSeconds > 0 {
			what = append(what, fmt.Sprintf("API server back in %.1f s", l.RestartSeconds))
		}
		hk = fmt.Sprintf("housekeeping before each cell: %s (median %.1f s", l.Housekeeping, l.HousekeepingSeconds)
		if len(what) > 0 {
			hk += ", " + strings.Join(what, ", ")
		}
		hk += ")"
	}
	parts = append(parts, hk)
	return fmt.Sprintf("lab over the run (%d cells, %.1f min): %s", l.Cells, l.Minutes, strings.Join(parts, "; "))
}

// WarmupText says which unmeasured cells ran before the measured ones (matrix.warmup) and how
// they went, so a reader sees what was discarded ("" when none ran).
func WarmupText(r *results.Results) string {
	if r == nil || len(r.Warmup) == 0 {
		return ""
	}
	var each []string
	for _, c := range r.Warmup {
		switch {
		case c.Error != "":
			each = append(each, "failed: "+c.Error)
		case c.Stats.Latency.All.N > 0:
			each = append(each, fmt.Sprintf("claim p50 %.0f ms", c.Stats.Latency.All.P50))
		default:
			each = append(each, "ran")
		}
	}
	return fmt.Sprintf("warm-up: %d unmeasured %s cell(s) before the measured ones, not analysed (%s)", len(r.Warmup), r.Warmup[0].Name, strings.Join(each, "; "))
}
