//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/brakebench/brakebench/internal/results"
)

// TestAAOnTheLab runs identical cells (none listed twice) three times each: the latency deltas
// between them read "~" with the reason (3 vs 3 repetitions cannot reach p < 0.05), the report
// prints the A/A noise floor, and the run's drift is measured. With lab.housekeeping the lab's
// etcd is compacted and defragmented and its API server restarted before every cell, every cell
// records the lab's health, and one unmeasured warm-up cell runs first (matrix.warmup).
func TestAAOnTheLab(t *testing.T) {
	out := t.TempDir()
	if _, err := runCLI(t, "run", "warmpool-burst", "--out", out, "--set", "workload.pool=10", "--set", "workload.claims=10",
		"--set", "matrix.brakes=none,none", "--set", "matrix.repetitions=3", "--set", "matrix.warmup=1",
		"--set", "lab.housekeeping=etcd-defrag+apiserver-restart"); err != nil {
		t.Fatal(err)
	}
	r, dir := readRun(t, out, "warmpool-burst")
	if len(r.Warmup) != 1 || r.Warmup[0].Name != "none" || r.Warmup[0].Error != "" || r.Warmup[0].Stats.Latency.All.N != 10 || len(r.Cells) != 6 {
		t.Errorf("warm-up %+v, %d measured cells", r.Warmup, len(r.Cells))
	}
	// Each cell starts on a fresh API server: its CPU time when a cell starts is what its start
	// and the relists cost, not a running total that grows from cell to cell.
	var apiCPU []float64
	for _, c := range append(append([]results.Cell{}, r.Warmup...), r.Cells...) {
		h, hk := c.Lab, c.Housekeeping
		if h == nil || h.Error != "" || h.EtcdDBBytes <= 0 || h.EtcdRevision <= 0 || h.Processes["kube-apiserver"].RSSBytes <= 0 || h.Processes["etcd"].CPUSeconds <= 0 {
			t.Errorf("cell %s: lab health %+v", c.ID, h)
			continue
		}
		if hk == nil || hk.Error != "" || hk.DBBytesAfter <= 0 || hk.Revision <= 0 || strings.Join(hk.Steps, "+") != "etcd-defrag+apiserver-restart" || hk.RestartSeconds <= 0 {
			t.Errorf("cell %s: housekeeping %+v", c.ID, hk)
		}
		apiCPU = append(apiCPU, h.Processes["kube-apiserver"].CPUSeconds)
	}
	if sort.Float64sAreSorted(apiCPU) {
		t.Errorf("the API server's CPU seconds grow from cell to cell (%v): it was not restarted", apiCPU)
	}
	if l := r.LabOverRun; l == nil || l.Cells != 6 || l.Housekeeping != "etcd-defrag+apiserver-restart" || l.RestartSeconds <= 0 || l.Last.EtcdRevision <= l.First.EtcdRevision {
		t.Errorf("lab over the run: %+v", l)
	} else {
		t.Logf("lab over the A/A run: etcd db %d -> %d bytes, housekeeping median %.2f s (API server back in %.2f s); API server CPU at each cell's start %v",
			l.First.EtcdDBBytes, l.Last.EtcdDBBytes, l.HousekeepingSeconds, l.RestartSeconds, apiCPU)
	}
	// Every restart deletes the kube-controller-manager's Lease while it is stopped (it does not
	// release it on exit), so the next one takes a fresh Lease at once instead of waiting the old
	// holder's out: a Lease that passed between holders was waited out.
	lease, err := clients(t).Typed.CoordinationV1().Leases("kube-system").Get(context.Background(), "kube-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Errorf("the kube-controller-manager's Lease: %v", err)
	} else if n := lease.Spec.LeaseTransitions; n != nil && *n > 0 {
		t.Errorf("the kube-controller-manager's Lease passed between holders %d time(s) over 7 API server restarts: a restart waited out the old holder's lease", *n)
	}
	for _, key := range []string{"claim.p50_ms", "claim.p99_ms"} {
		m, ok := r.Find("none_2", key)
		if !ok || m.Delta == nil {
			t.Fatalf("none_2 %s: no delta against none", key)
		}
		c := m.Delta.Comparison
		if c.Significant || c.Delta != "~" || !strings.Contains(c.Note, "3 vs 3 repetitions cannot reach p < 0.05") || c.Method != "permutation over repetitions" {
			t.Errorf("A/A %s: %+v", key, c)
		}
	}
	if r.Drift == nil || r.Drift.Repetitions != 6 {
		t.Errorf("drift: %+v", r.Drift)
	} else {
		t.Logf("drift over the A/A run: %+.1f%% [%+.1f, %+.1f] over %.1f min", float64(r.Drift.PctOverRun), float64(r.Drift.CI.Lo), float64(r.Drift.CI.Hi), r.Drift.Minutes)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"A/A noise floor: none_2 vs none", "Drift of the cluster during the run", `id="lab-over-run"`, `id="warm-up"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
