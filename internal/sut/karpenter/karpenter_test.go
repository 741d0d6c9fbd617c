package karpenter

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRepairThreshold(t *testing.T) {
	// Karpenter's breaker: 20% of the pool's nodes, rounded up; repair while unhealthy <= it.
	for _, tc := range []struct {
		nodes, unhealthy int
		threshold        int
		blocked          bool
	}{
		{0, 0, 0, false},
		{1, 1, 1, false},
		{3, 1, 1, false},
		{5, 1, 1, false},
		{5, 2, 1, true},
		{6, 2, 2, false},
		{10, 2, 2, false},
		{10, 3, 2, true},
		{11, 3, 3, false},
	} {
		if got := RepairThreshold(tc.nodes); got != tc.threshold {
			t.Errorf("RepairThreshold(%d) = %d, want %d", tc.nodes, got, tc.threshold)
		}
		if got := RepairBlocked(tc.unhealthy, tc.nodes); got != tc.blocked {
			t.Errorf("RepairBlocked(%d of %d) = %v, want %v", tc.unhealthy, tc.nodes, got, tc.blocked)
		}
	}
}

func TestScalePolicies(t *testing.T) {
	eks := EKSRepairPolicies()
	if d, ok := Toleration(eks, "AcceleratedHardwareReady", "False"); !ok || d != 10*time.Minute {
		t.Errorf("AcceleratedHardwareReady toleration %v %v", d, ok)
	}
	for _, c := range []string{"StorageReady", "NetworkingReady", "KernelReady", "ContainerRuntimeReady"} {
		if d, ok := Toleration(eks, c, "False"); !ok || d != 30*time.Minute {
			t.Errorf("%s toleration %v %v", c, d, ok)
		}
	}
	if _, ok := Toleration(eks, "AcceleratedHardwareReady", "Unknown"); ok {
		t.Error("no policy repairs AcceleratedHardwareReady=Unknown")
	}
	for _, tc := range []struct {
		factor float64
		want   time.Duration // AcceleratedHardwareReady's
		err    bool
	}{
		{1, 10 * time.Minute, false},
		{0.01, 6 * time.Second, false},
		{1e-9, time.Millisecond, false},
		{0, 0, true},
		{-1, 0, true},
		{1.5, 0, true},
	} {
		got, err := ScalePolicies(eks, tc.factor)
		if (err != nil) != tc.err {
			t.Errorf("factor %v: err %v", tc.factor, err)
			continue
		}
		if tc.err {
			continue
		}
		if d, _ := Toleration(got, "AcceleratedHardwareReady", "False"); d != tc.want {
			t.Errorf("factor %v: %v, want %v", tc.factor, d, tc.want)
		}
		if d, _ := Toleration(eks, "AcceleratedHardwareReady", "False"); d != 10*time.Minute {
			t.Error("ScalePolicies changed its input")
		}
	}
}

func TestEncodePolicies(t *testing.T) {
	ps, _ := ScalePolicies(EKSRepairPolicies(), 0.01)
	var w []struct{ Condition, Status, Toleration string }
	if err := json.Unmarshal([]byte(EncodePolicies(ps)), &w); err != nil {
		t.Fatal(err)
	}
	if len(w) != 7 {
		t.Fatalf("%d policies", len(w))
	}
	for i, p := range w {
		d, err := time.ParseDuration(p.Toleration)
		if err != nil || d != ps[i].Toleration || p.Condition != ps[i].Condition || p.Status != ps[i].Status {
			t.Errorf("policy %d: %+v (%v) vs %+v", i, p, err, ps[i])
		}
	}
}

func TestNodePoolAndClass(t *testing.T) {
	p := NodePool(PoolSpec{Name: "gpu", MaxNodes: 4, Taint: "bb-gpu"}, map[string]string{"a": "b"})
	spec := p.Object["spec"].(map[string]any)
	if spec["limits"].(map[string]any)["nvidia.com/gpu"] != "32" {
		t.Errorf("limits %v", spec["limits"])
	}
	tmpl := spec["template"].(map[string]any)
	labels := tmpl["metadata"].(map[string]any)["labels"].(map[string]any)
	if labels[PoolLabel] != "gpu" || labels["a"] != "b" {
		t.Errorf("labels %v", labels)
	}
	ref := tmpl["spec"].(map[string]any)["nodeClassRef"].(map[string]any)
	if ref["kind"] != "KWOKNodeClass" || ref["name"] != "gpu" {
		t.Errorf("nodeClassRef %v", ref)
	}
	if d := spec["disruption"].(map[string]any); d["consolidationPolicy"] != "WhenEmpty" || d["consolidateAfter"] != "1h" {
		t.Errorf("disruption %v", d)
	}
	if d := NodePool(PoolSpec{Name: "x", ConsolidateAfter: 5 * time.Second}, nil).Object["spec"].(map[string]any)["disruption"].(map[string]any); d["consolidationPolicy"] != "WhenEmpty" || d["consolidateAfter"] != "5s" {
		t.Errorf("empty-only disruption %v", d)
	}
	if d := NodePool(PoolSpec{Name: "x", Consolidate: true, ConsolidateAfter: 1500 * time.Millisecond}, nil).Object["spec"].(map[string]any)["disruption"].(map[string]any); d["consolidationPolicy"] != "WhenEmptyOrUnderutilized" || d["consolidateAfter"] != "2s" {
		t.Errorf("consolidating disruption %v", d)
	}
	for d, want := range map[time.Duration]any{0: nil, 300 * time.Millisecond: "1s", 90 * time.Second: "90s"} {
		got := NodeClass(PoolSpec{Name: "gpu", RegistrationDelay: d}).Object["spec"].(map[string]any)["nodeRegistrationDelay"]
		if got != want {
			t.Errorf("delay %v: %v, want %v", d, got, want)
		}
	}
	var types []map[string]any
	if err := json.Unmarshal(InstanceTypes(), &types); err != nil || len(types) != 1 || types[0]["name"] != GPUInstanceType {
		t.Fatalf("instance types %v %v", types, err)
	}
	if types[0]["resources"].(map[string]any)["nvidia.com/gpu"] != "8" {
		t.Error("the lab's instance type has 8 GPUs")
	}
	if g := FeatureGates(true, false); !strings.Contains(g, "NodeRepair=true") || !strings.Contains(g, "CapacityBuffer=false") {
		t.Error(g)
	}
}

func TestCRDs(t *testing.T) {
	dir := t.TempDir()
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: %s\n"
	write := func(rel, name string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(crd, "%s", name)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := CRDs(dir); err == nil {
		t.Error("a module without CRDs must be an error")
	}
	write("pkg/apis/crds/karpenter.sh_nodepools.yaml", "nodepools.karpenter.sh")
	write("pkg/apis/crds/karpenter.sh_nodeclaims.yaml", "nodeclaims.karpenter.sh")
	write("kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml", "kwoknodeclasses.karpenter.kwok.sh")
	got, err := CRDs(dir)
	if err != nil || len(got) != 3 {
		t.Fatalf("%d CRDs, %v", len(got), err)
	}
}

func TestCapacityBuffer(t *testing.T) {
	b := CapacityBuffer("ns", "headroom", "chunk", 3)
	spec := b.Object["spec"].(map[string]any)
	if b.GetNamespace() != "ns" || spec["replicas"] != int64(3) || spec["podTemplateRef"].(map[string]any)["name"] != "chunk" {
		t.Errorf("%v", b.Object)
	}
}
