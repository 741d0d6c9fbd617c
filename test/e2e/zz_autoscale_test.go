//go:build e2e

// This file's name starts with zz_ so that its tests run last (go test runs a package's tests in
// file-name order): they need KEDA, which TestMain builds in the background while the other
// tests run (waitOptionalBuild); sorted last, they give that build the whole run of the others.

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/sut/keda"
)

// kedaLeft lists what a pool-autoscaling run may leave behind: the APIService, KEDA's
// processes, HPAs and ScaledObjects, run namespaces, and a changed HPA sync period.
func kedaLeft(t *testing.T) []string {
	t.Helper()
	c := clients(t)
	ctx := context.Background()
	left := labelledLeft(t)
	if _, err := c.Dynamic.Resource(keda.APIServiceGVR).Get(ctx, keda.APIServiceName, metav1.GetOptions{}); err == nil {
		left = append(left, "apiservice/"+keda.APIServiceName)
	}
	if l, err := c.Dynamic.Resource(keda.HPAGVR).List(ctx, metav1.ListOptions{}); err == nil {
		for _, o := range l.Items {
			left = append(left, "horizontalpodautoscaler/"+o.GetNamespace()+"/"+o.GetName())
		}
	}
	if l, err := c.Dynamic.Resource(keda.ScaledObjectGVR).List(ctx, metav1.ListOptions{}); err == nil {
		for _, o := range l.Items {
			left = append(left, "scaledobject/"+o.GetNamespace()+"/"+o.GetName())
		}
	}
	if st, err := theLab.Load(); err == nil && st.KEDA != nil {
		left = append(left, "lab state still records KEDA processes")
	}
	for _, p := range theLab.Leftovers() {
		if raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); err == nil && strings.Contains(string(raw), "keda-") {
			left = append(left, "process "+strings.ReplaceAll(string(raw), "\x00", " "))
		}
	}
	if d, err := theLab.HPASyncPeriod(); err != nil || d != 15*time.Second {
		left = append(left, fmt.Sprintf("HPA sync period %s (want the lab's 15s back), %v", d, err))
	}
	return left
}

// TestPoolAutoscalingKEDAvsControl runs the blueprint's 0 -> 3 -> 0 profile with a real KEDA
// v2.21.0 (operator + metrics adapter through the aggregation layer) and without: with KEDA the
// pool's spec.replicas goes 1 -> 3 -> 1, without it stays 1; both readings are in the results.
func TestPoolAutoscalingKEDAvsControl(t *testing.T) {
	waitOptionalBuild(t)
	r := runSuite(t, "pool-autoscaling", "poolAutoscaling.profiles=0-3-0", "poolAutoscaling.stepDuration=15s", "poolAutoscaling.hpaSyncPeriod=2s")
	cells := map[string]*results.Cell{}
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.Error != "" || c.Autoscale == nil {
			t.Fatalf("cell %s: error %q autoscale %v", c.ID, c.Error, c.Autoscale != nil)
		}
		cells[c.Name] = c
	}
	kc, ctl := cells["keda"], cells["control"]
	if kc == nil || ctl == nil {
		t.Fatalf("want keda and control cells, got %v", r.CellOrder)
	}
	a := kc.Autoscale
	var specs []int
	for _, s := range a.Steps {
		specs = append(specs, s.Decision)
	}
	if fmt.Sprint(specs) != "[1 3 1]" {
		t.Errorf("with KEDA the decisions per step were %v, want [1 3 1] (samples %v)", specs, a.Samples)
	}
	if a.Steps[1].Capacity != 3 || a.Steps[1].CapacitySeconds == nil || a.Steps[1].DecisionSeconds == nil {
		t.Errorf("the up step records no capacity reading: %+v", a.Steps[1])
	}
	if a.HPASyncPeriod != "2s" || a.MetricReadSeconds == nil || len(a.ExporterHits) == 0 {
		t.Errorf("sync %q, metric read %v, exporter hits %d", a.HPASyncPeriod, a.MetricReadSeconds, len(a.ExporterHits))
	}
	if a.APIWrites["sandboxwarmpools/scale"] < 2 {
		t.Errorf("the HPA's writes of the pool's /scale were not counted: %v", a.APIWrites)
	}
	c := ctl.Autoscale
	if c.ReplicaChanges != 0 || c.MaxSpec != 1 || c.MinSpec != 1 {
		t.Errorf("control arm: %d changes, spec %d..%d; want flat at 1", c.ReplicaChanges, c.MinSpec, c.MaxSpec)
	}
	if len(c.Samples) < 2 || c.Steps[1].Demand != 3 {
		t.Errorf("control arm did not see the same demand: %+v", c.Steps)
	}
	for _, cell := range []*results.Cell{kc, ctl} {
		for _, line := range cell.Autoscale.Assertions {
			if strings.HasPrefix(line, "FAIL") {
				t.Errorf("%s: %s", cell.ID, line)
			}
		}
	}
	if left := kedaLeft(t); len(left) > 0 {
		t.Errorf("left after the run: %v", left)
	}
}

// TestPoolAutoscalingSIGKILLThenCleanup kills the harness while a KEDA cell runs; `brakebench
// cleanup --all` must remove the APIService, stop KEDA, restore the HPA sync period and delete
// the run's namespace (with its ScaledObject and HPA).
func TestPoolAutoscalingSIGKILLThenCleanup(t *testing.T) {
	waitOptionalBuild(t)
	c := clients(t)
	hpaExists := func() bool {
		l, err := c.Dynamic.Resource(keda.HPAGVR).List(context.Background(), metav1.ListOptions{})
		return err == nil && len(l.Items) > 0
	}
	killRunWhen(t, []string{"pool-autoscaling", "--set", "poolAutoscaling.arms=keda", "--set", "poolAutoscaling.profiles=0-3-0",
		"--set", "poolAutoscaling.stepDuration=60s", "--set", "poolAutoscaling.hpaSyncPeriod=3s"}, hpaExists, 5*time.Minute, kedaLeft, "restore KEDA")
}
