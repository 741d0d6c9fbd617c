//go:build e2e

// This file's name starts with zz_ so that its tests run last (go test runs a package's tests in
// file-name order): they need Kueue and LWS, which TestMain builds in the background while the
// other tests run (waitOptionalBuild); sorted last, they give that build the whole run of the
// others.

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/brakebench/brakebench/internal/lab"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/sut/kueuelws"
)

// gangLeft lists what a gang-quota run may leave behind: queues, flavors, webhook
// configurations, Kueue/LWS processes, Kueue's metrics certificate directory, run namespaces.
func gangLeft(t *testing.T) []string {
	t.Helper()
	c := clients(t)
	ctx := context.Background()
	left := labelledLeft(t)
	for kind, gvr := range map[string]schema.GroupVersionResource{
		"clusterqueue": kueuelws.ClusterQueueGVR, "resourceflavor": kueuelws.ResourceFlavorGVR,
		"validatingwebhookconfiguration": kueuelws.ValidatingGVR, "mutatingwebhookconfiguration": kueuelws.MutatingGVR,
	} {
		l, err := c.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue // the Kueue CRDs may not be installed yet
		}
		for _, o := range l.Items {
			left = append(left, kind+"/"+o.GetName())
		}
	}
	if st, err := theLab.Load(); err == nil && st.Gang != nil {
		left = append(left, "lab state still records Kueue/LWS processes")
	}
	for _, p := range theLab.Leftovers() {
		if raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); err == nil && (strings.Contains(string(raw), "kueue") || strings.Contains(string(raw), "lws-controller")) {
			left = append(left, "process "+strings.ReplaceAll(string(raw), "\x00", " "))
		}
	}
	if _, err := os.Stat(lab.KueueMetricsCertDir); err == nil {
		left = append(left, lab.KueueMetricsCertDir)
	}
	return left
}

// TestGangQuotaGateOnOff runs both arms of the gang-quota suite on real Kueue v0.19.1 and LWS
// v0.9.0 controllers (10 s watch windows) and checks what each arm must show, then that the run
// left nothing behind.
func TestGangQuotaGateOnOff(t *testing.T) {
	waitOptionalBuild(t)
	r := runSuite(t, "gang-quota", "gangQuota.observe=10s")
	cells := map[string]*results.Cell{}
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.Error != "" {
			t.Fatalf("cell %s: %s", c.ID, c.Error)
		}
		if c.Gang == nil {
			t.Fatalf("cell %s has no gang record", c.ID)
		}
		cells[c.Name] = c
	}
	on, off := cells["gate-on"], cells["gate-off"]
	if on == nil || off == nil {
		t.Fatalf("want gate-on and gate-off cells, got %v", r.CellOrder)
	}
	step := func(c *results.Cell, name string) results.GangStep {
		for _, s := range c.Gang.Steps {
			if s.Name == name {
				return s
			}
		}
		t.Fatalf("cell %s has no %s step", c.ID, name)
		return results.GangStep{}
	}
	// Gate on: Kueue's webhook refuses the resize with its immutability error; usage stays within quota.
	if s := step(on, "resize"); s.Accepted || !strings.Contains(s.Error, "spec.leaderWorkerTemplate.size") || !strings.Contains(s.Error, "field is immutable") {
		t.Errorf("gate on: resize accepted=%v error=%q; want Kueue's immutability error", s.Accepted, s.Error)
	}
	if on.Gang.PeakGPUsRunning > on.Gang.QuotaGPUs {
		t.Errorf("gate on: %d GPUs running, quota %d", on.Gang.PeakGPUsRunning, on.Gang.QuotaGPUs)
	}
	// Gate off: the resize is accepted; whether the extra pods overshoot is measured, not assumed,
	// and when they do not, the record says what happened instead.
	rs := step(off, "resize")
	if !rs.Accepted {
		t.Errorf("gate off: resize rejected: %s", rs.Error)
	}
	if off.Gang.OverQuotaGPUs == 0 && len(rs.Workloads) == 0 {
		t.Errorf("gate off: no overshoot and no record of the Workloads' state (outcome %q)", off.Gang.Outcome)
	}
	t.Logf("gate off outcome: %s", off.Gang.Outcome)
	// The safe path: raising replicas is accepted and Kueue never reserves beyond the quota.
	for _, c := range []*results.Cell{on, off} {
		if s := step(c, "scale-replicas"); !s.Accepted {
			t.Errorf("%s: raising replicas rejected: %s", c.ID, s.Error)
		}
		for _, s := range c.Gang.Samples {
			if s.ReservedGPUs > c.Gang.QuotaGPUs {
				t.Errorf("%s: Kueue reserved %d GPUs at t=%.1fs, quota %d", c.ID, s.ReservedGPUs, s.T, c.Gang.QuotaGPUs)
			}
		}
	}
	// Kueue's own metric agrees with the Workloads' admissions once the safe path settled.
	if s := step(on, "scale-replicas"); s.KueueUsageMetric == nil {
		t.Errorf("gate on: no kueue_cluster_queue_resource_usage: %s", s.KueueMetricError)
	} else if int(*s.KueueUsageMetric) != s.End.ReservedGPUs {
		t.Errorf("gate on: kueue_cluster_queue_resource_usage %v, Workloads' admissions %d", *s.KueueUsageMetric, s.End.ReservedGPUs)
	}
	if !strings.Contains(strings.Join(on.Gang.Gates, ","), kueuelws.Gate+"=true") || !strings.Contains(strings.Join(off.Gang.Gates, ","), kueuelws.Gate+"=false") {
		t.Errorf("gates recorded: on %v off %v", on.Gang.Gates, off.Gang.Gates)
	}
	if left := gangLeft(t); len(left) > 0 {
		t.Errorf("left after the run: %v", left)
	}
}

// TestGangQuotaSIGKILLThenCleanup kills the harness while a gang-quota cell runs (Kueue, LWS,
// their webhooks and the cell's queues are up); `brakebench cleanup --all` must stop Kueue and
// LWS, remove their webhooks and delete the queues and namespaces.
func TestGangQuotaSIGKILLThenCleanup(t *testing.T) {
	waitOptionalBuild(t)
	c := clients(t)
	lwsExists := func() bool {
		l, err := c.Dynamic.Resource(kueuelws.LWSGVR).Namespace(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{})
		return err == nil && len(l.Items) > 0
	}
	killRunWhen(t, []string{"gang-quota", "--set", "matrix.brakes=gate-off", "--set", "gangQuota.observe=60s"}, lwsExists, 4*time.Minute, gangLeft, "restore Kueue")
}
