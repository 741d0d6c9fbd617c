package reports

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/results"
)

// How the lab moved over the run reaches both the text table and the HTML report, with every
// figure it was given; a run without the lab's health says nothing about it.
func TestLabOverRunInReports(t *testing.T) {
	const mb = 1 << 20
	l := &results.LabOverRun{Cells: 40, Minutes: 41.2, Housekeeping: "etcd-defrag", HousekeepingSeconds: 0.4, FreedBytes: 210 * mb,
		First: results.LabHealth{EtcdRevision: 1000, EtcdDBBytes: 12 * mb, EtcdDBInUseBytes: 10 * mb, HarnessGoroutines: 40, HarnessHeapBytes: 30 * mb,
			Processes: map[string]results.ProcessHealth{"kube-apiserver": {RSSBytes: 600 * mb}, "etcd": {RSSBytes: 80 * mb}, "gone": {RSSBytes: mb}}},
		Last: results.LabHealth{EtcdRevision: 901000, EtcdDBBytes: 15 * mb, EtcdDBInUseBytes: mb / 2, HarnessGoroutines: 42, HarnessHeapBytes: 60 * mb,
			// after a defragmentation: small figures keep a decimal instead of reading "0 MB"
			Processes: map[string]results.ProcessHealth{"kube-apiserver": {RSSBytes: 1400 * mb}, "etcd": {RSSBytes: 90 * mb}}},
	}
	want := []string{"lab over the run (40 cells, 41.2 min)", "etcd db 12 -> 15 MB (in use 10 -> 0.5 MB, 900000 revisions)",
		"RSS MB: etcd 80 -> 90, kube-apiserver 600 -> 1400", "brakebench goroutines 40 -> 42, heap 30 -> 60 MB",
		"housekeeping before each cell: etcd-defrag (median 0.4 s, 210 MB freed)"}
	got := LabOverRunText(l)
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%q lacks %q", got, w)
		}
	}
	if strings.Contains(got, "gone") {
		t.Errorf("%q names a process the last cell did not have", got)
	}
	if LabOverRunText(nil) != "" {
		t.Error("text for a run without the lab's health")
	}
	r := fixture(t)
	r.LabOverRun = l
	var buf bytes.Buffer
	Table(&buf, r)
	if !strings.Contains(buf.String(), want[0]) {
		t.Errorf("table lacks the lab line:\n%s", buf.String())
	}
	html, _, err := WriteAll(t.TempDir(), r, nil)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(html)
	if !strings.Contains(string(page), `id="lab-over-run"`) || !strings.Contains(string(page), "kube-apiserver 600 -&gt; 1400") {
		t.Error("report.html lacks the lab over the run")
	}
}

// A restart's time reaches the lab line (and no etcd figure when etcd was not tidied); the
// warm-up line names what was discarded, in the table and the report, and nothing without one.
func TestLabRestartAndWarmupText(t *testing.T) {
	l := &results.LabOverRun{Cells: 3, Minutes: 4, Housekeeping: "apiserver-restart", HousekeepingSeconds: 7.2, RestartSeconds: 7.1}
	got := LabOverRunText(l)
	if !strings.Contains(got, "housekeeping before each cell: apiserver-restart (median 7.2 s, API server back in 7.1 s)") || strings.Contains(got, "freed") {
		t.Errorf("%q", got)
	}
	r := fixture(t)
	if WarmupText(r) != "" {
		t.Error("warm-up text without warm-up cells")
	}
	w := r.Cells[0]
	w.ID, w.Rep = "warmup-1", 0
	w2 := w
	w2.ID, w2.Error = "warmup-2", "pool never filled"
	r.Warmup = []results.Cell{w, w2}
	want := fmt.Sprintf("warm-up: 2 unmeasured %s cell(s) before the measured ones, not analysed (claim p50 %.0f ms; failed: pool never filled)", w.Name, w.Stats.Latency.All.P50)
	if got := WarmupText(r); got != want {
		t.Errorf("%q, want %q", got, want)
	}
	var buf bytes.Buffer
	Table(&buf, r)
	if !strings.Contains(buf.String(), want) {
		t.Errorf("table lacks the warm-up line:\n%s", buf.String())
	}
	html, _, err := WriteAll(t.TempDir(), r, nil)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(html)
	if !strings.Contains(string(page), `id="warm-up"`) {
		t.Error("report.html lacks the warm-up line")
	}
}
