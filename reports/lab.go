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
		hk = fmt.Sprintf("housekeeping before each cell: %s (median %.1f s, %s MB freed)", l.Housekeeping, l.HousekeepingSeconds, mb(l.FreedBytes))
	}
	parts = append(parts, hk)
	return fmt.Sprintf("lab over the run (%d cells, %.1f min): %s", l.Cells, l.Minutes, strings.Join(parts, "; "))
}
