// Package karpenter knows Karpenter as the lab runs it: its CRDs from the pinned module, the
// repair policies brakebench's wrapped kwok provider carries (the ones Amazon publishes for the
// EKS node monitoring agent's conditions, tolerations scalable for lab runs), the GPU instance
// types it offers, and the NodePool and KWOKNodeClass a suite asks for.
package karpenter

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/brakebench/brakebench/internal/kube"
)

// Resources Karpenter serves.
var (
	NodePoolGVR      = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}
	NodeClaimGVR     = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}
	KWOKNodeClassGVR = schema.GroupVersionResource{Group: "karpenter.kwok.sh", Version: "v1alpha1", Resource: "kwoknodeclasses"}
	// CapacityBufferGVR is pre-provisioned headroom (behind the CapacityBuffer feature gate).
	CapacityBufferGVR = schema.GroupVersionResource{Group: "autoscaling.x-k8s.io", Version: "v1beta1", Resource: "capacitybuffers"}
)

// Labels and names Karpenter and its kwok provider use.
const (
	NodePoolLabel  = "karpenter.sh/nodepool"
	NodeClaimLabel = "karpenter.sh/nodeclaim"
	// ProviderIDPrefix marks a Node the kwok provider launched.
	ProviderIDPrefix = "kwok://"
	// TerminationFinalizer is what Karpenter puts on its NodeClaims and Nodes; a Karpenter that
	// no longer runs cannot remove it, so cleanup strips it.
	TerminationFinalizer = "karpenter.sh/termination"
	// RepairPoliciesEnv carries the repair policies to brakebench's wrapped provider (JSON).
	RepairPoliciesEnv = "REPAIR_POLICIES"
	// RepairBlockedReason is the Event reason of the node health controller's breaker.
	RepairBlockedReason = "NodeRepairBlocked"
	// GPUInstanceType is the instance type the lab's NodePools ask for.
	GPUInstanceType = "bb-gpu-8x-amd64-linux"
)

// RepairPolicy is one condition Karpenter's node health controller repairs: a node whose
// Condition has Status for longer than Toleration is replaced.
type RepairPolicy struct {
	Condition  string        `json:"condition"`
	Status     string        `json:"status"`
	Toleration time.Duration `json:"toleration"`
}

// EKSRepairPolicies are the repair policies of Karpenter's AWS provider (karpenter-provider-aws,
// pkg/cloudprovider/cloudprovider.go, RepairPolicies): the kubelet's Ready after 30 minutes, the
// node monitoring agent's AcceleratedHardwareReady after 10 and its other four conditions after
// 30. Karpenter v1.14.1's RepairPolicy has no reason field, so no policy is keyed by reason.
func EKSRepairPolicies() []RepairPolicy {
	return []RepairPolicy{
		{Condition: "Ready", Status: "False", Toleration: 30 * time.Minute},
		{Condition: "Ready", Status: "Unknown", Toleration: 30 * time.Minute},
		{Condition: "AcceleratedHardwareReady", Status: "False", Toleration: 10 * time.Minute},
		{Condition: "StorageReady", Status: "False", Toleration: 30 * time.Minute},
		{Condition: "NetworkingReady", Status: "False", Toleration: 30 * time.Minute},
		{Condition: "KernelReady", Status: "False", Toleration: 30 * time.Minute},
		{Condition: "ContainerRuntimeReady", Status: "False", Toleration: 30 * time.Minute},
	}
}

// ScalePolicies multiplies every toleration by factor (0 < factor <= 1; 1 is EKS as published),
// rounded to the millisecond and never below one.
func ScalePolicies(ps []RepairPolicy, factor float64) ([]RepairPolicy, error) {
	if !(factor > 0 && factor <= 1) || math.IsNaN(factor) {
		return nil, fmt.Errorf("toleration scale %v: want a factor in (0, 1] (1 = EKS's published tolerations)", factor)
	}
	out := make([]RepairPolicy, len(ps))
	for i, p := range ps {
		d := time.Duration(float64(p.Toleration) * factor).Round(time.Millisecond)
		if d < time.Millisecond {
			d = time.Millisecond
		}
		p.Toleration = d
		out[i] = p
	}
	return out, nil
}

// EncodePolicies is the RepairPoliciesEnv value for ps.
func EncodePolicies(ps []RepairPolicy) string {
	type wire struct {
		Condition  string `json:"condition"`
		Status     string `json:"status"`
		Toleration string `json:"toleration"`
	}
	w := make([]wire, len(ps))
	for i, p := range ps {
		w[i] = wire{p.Condition, p.Status, p.Toleration.String()}
	}
	raw, _ := json.Marshal(w)
	return string(raw)
}

// Toleration is the shortest toleration of a policy on condition/status, and whether one exists.
func Toleration(ps []RepairPolicy, condition, status string) (time.Duration, bool) {
	best, ok := time.Duration(0), false
	for _, p := range ps {
		if p.Condition == condition && p.Status == status && (!ok || p.Toleration < best) {
			best, ok = p.Toleration, true
		}
	}
	return best, ok
}

// RepairThreshold is how many of n nodes may be unhealthy while Karpenter v1.14.1's node health
// controller still repairs (pkg/controllers/node/health/controller.go: 20% of the NodePool's
// nodes, rounded up; repair proceeds while unhealthy <= threshold).
func RepairThreshold(n int) int {
	if n <= 0 {
		return 0
	}
	return int(math.Ceil(float64(n) * 20 / 100))
}

// RepairBlocked says whether the breaker blocks repair with unhealthy of n nodes unhealthy.
func RepairBlocked(unhealthy, n int) bool { return unhealthy > RepairThreshold(n) }

// CRDs reads Karpenter's CRDs from the pinned module: NodePool, NodeClaim, NodeOverlay and
// CapacityBuffer (pkg/apis/crds) and the kwok provider's KWOKNodeClass (kwok/apis/crds).
func CRDs(moduleDir string) ([]*unstructured.Unstructured, error) {
	var files []string
	for _, dir := range []string{filepath.Join(moduleDir, "pkg", "apis", "crds"), filepath.Join(moduleDir, "kwok", "apis", "crds")} {
		m, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("no Karpenter CRDs (*.yaml) in %s", dir)
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	var out []*unstructured.Unstructured
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read the Karpenter CRDs: %w", err)
		}
		objs, err := kube.DecodeYAML(raw)
		if err != nil {
			return nil, fmt.Errorf("the Karpenter CRD file %s: %w", f, err)
		}
		for _, o := range objs {
			if o.GetKind() == "CustomResourceDefinition" {
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// InstanceTypes is the kwok provider's instance-types file for the lab: one GPU instance type
// (8 nvidia.com/gpu, 32 CPU, 256 GiB, 110 pods), on-demand in one zone. Karpenter's own file has
// no GPU type.
func InstanceTypes() []byte {
	return []byte(`[
  {
    "name": "` + GPUInstanceType + `",
    "architecture": "amd64",
    "operatingSystems": ["linux"],
    "resources": {"cpu": "32", "memory": "256Gi", "ephemeral-storage": "100Gi", "pods": "110", "nvidia.com/gpu": "8"},
    "offerings": [
      {"Price": 12.0, "Available": true, "Requirements": [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["test-zone-a"]}
      ]}
    ]
  }
]
`)
}

// PoolSpec is what a suite asks of a NodePool.
type PoolSpec struct {
	Name string
	// RegistrationDelay is the KWOKNodeClass's nodeRegistrationDelay: the simulated instance
	// launch (0: the Node object appears as soon as Karpenter launches it).
	RegistrationDelay time.Duration
	// MaxNodes bounds the pool (limits on nvidia.com/gpu: 8 a node); 0 is unbounded.
	MaxNodes int
	// Consolidate: WhenEmptyOrUnderutilized after ConsolidateAfter; otherwise WhenEmpty after
	// ConsolidateAfter, or after 1h when it is 0 (consolidation effectively off for a cell's
	// length). WhenEmpty never moves a pod: only nodes without pods go.
	Consolidate      bool
	ConsolidateAfter time.Duration
	// Taint, when set, keeps every pod without a toleration for it off the pool's nodes.
	Taint string
}

// NodeClass is the KWOKNodeClass of a pool.
func NodeClass(p PoolSpec) *unstructured.Unstructured {
	spec := map[string]any{}
	if p.RegistrationDelay > 0 {
		spec["nodeRegistrationDelay"] = durationString(p.RegistrationDelay)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.kwok.sh/v1alpha1", "kind": "KWOKNodeClass",
		"metadata": map[string]any{"name": p.Name},
		"spec":     spec,
	}}
}

// durationString writes d in the form KWOKNodeClass's pattern accepts (^([0-9]+(s|m|h))+$):
// whole seconds, at least 1s.
func durationString(d time.Duration) string {
	s := int64(math.Ceil(d.Seconds()))
	if s < 1 {
		s = 1
	}
	return fmt.Sprintf("%ds", s)
}

// ReadyStatus is the KWOKNodeClass status a real provider's node class controller would write
// after validating the class against its cloud. The kwok provider has no such controller and
// Karpenter provisions only for a NodePool whose node class is Ready, so the lab writes it.
func ReadyStatus(generation int64, now time.Time) map[string]any {
	return map[string]any{"conditions": []any{map[string]any{
		"type": "Ready", "status": "True", "reason": "Ready", "message": "",
		"lastTransitionTime": now.UTC().Format(time.RFC3339), "observedGeneration": generation,
	}}}
}

// NodePool is the pool's NodePool: the lab's GPU instance type, on demand, nodes labelled
// brakebench.io/pool=<name>.
func NodePool(p PoolSpec, labels map[string]string) *unstructured.Unstructured {
	tmplLabels := map[string]any{PoolLabel: p.Name}
	for k, v := range labels {
		tmplLabels[k] = v
	}
	tmplSpec := map[string]any{
		"nodeClassRef": map[string]any{"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": p.Name},
		"requirements": []any{
			map[string]any{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": []any{GPUInstanceType}},
			map[string]any{"key": "karpenter.sh/capacity-type", "operator": "In", "values": []any{"on-demand"}},
		},
		"expireAfter": "Never",
	}
	if p.Taint != "" {
		tmplSpec["taints"] = []any{map[string]any{"key": p.Taint, "value": "true", "effect": "NoSchedule"}}
	}
	policy, after := "WhenEmpty", "1h"
	switch {
	case p.Consolidate:
		policy, after = "WhenEmptyOrUnderutilized", durationString(p.ConsolidateAfter)
	case p.ConsolidateAfter > 0:
		after = durationString(p.ConsolidateAfter)
	}
	spec := map[string]any{
		"template": map[string]any{
			"metadata": map[string]any{"labels": tmplLabels},
			"spec":     tmplSpec,
		},
		"disruption": map[string]any{"consolidationPolicy": policy, "consolidateAfter": after, "budgets": []any{map[string]any{"nodes": "100%"}}},
	}
	if p.MaxNodes > 0 {
		spec["limits"] = map[string]any{"nvidia.com/gpu": fmt.Sprint(8 * p.MaxNodes)}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
		"metadata": map[string]any{"name": p.Name},
		"spec":     spec,
	}}
}

// PoolLabel is on every node of a brakebench NodePool (its value the pool's name).
const PoolLabel = "brakebench.io/pool"

// FeatureGates is Karpenter's FEATURE_GATES value with NodeRepair and CapacityBuffer set as
// asked and the rest at v1.14.1's defaults.
func FeatureGates(nodeRepair, capacityBuffer bool) string {
	return strings.Join([]string{
		fmt.Sprintf("NodeRepair=%t", nodeRepair),
		"ReservedCapacity=true", "SpotToSpotConsolidation=false", "NodeOverlay=false", "StaticCapacity=false",
		fmt.Sprintf("CapacityBuffer=%t", capacityBuffer),
	}, ",")
}

// CapacityBuffer asks Karpenter for replicas chunks of headroom shaped like the pods of the
// PodTemplate podTemplate (in namespace): Karpenter's provisioner counts them as virtual pods, so
// it keeps nodes for them that no real pod uses until demand arrives.
func CapacityBuffer(namespace, name, podTemplate string, replicas int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     map[string]any{"podTemplateRef": map[string]any{"name": podTemplate}, "replicas": int64(replicas)},
	}}
}

// CreatePool applies the pool's KWOKNodeClass and NodePool (labelled) and marks the node class
// Ready, as a real provider's node class controller would (the kwok provider has none, and
// Karpenter provisions only for a NodePool whose class is Ready).
func CreatePool(ctx context.Context, c *kube.Clients, p PoolSpec, labels map[string]string) error {
	if err := c.Apply(ctx, []*unstructured.Unstructured{NodeClass(p), NodePool(p, nil)}, labels); err != nil {
		return fmt.Errorf("apply NodePool %s: %w", p.Name, err)
	}
	got, err := c.Dynamic.Resource(KWOKNodeClassGVR).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read KWOKNodeClass %s: %w", p.Name, err)
	}
	got.Object["status"] = ReadyStatus(got.GetGeneration(), time.Now())
	if _, err := c.Dynamic.Resource(KWOKNodeClassGVR).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("mark KWOKNodeClass %s Ready: %w", p.Name, err)
	}
	return nil
}

// PlacePod puts a pod spec on a pool: the pool's node label selected, its taint (if any)
// tolerated, and gpus nvidia.com/gpu requested by the first container (limits equal), which is
// what makes Karpenter size the pool: 8/gpus pods a node of the lab's instance type.
func PlacePod(spec map[string]any, pool, taint string, gpus int) error {
	containers, _ := spec["containers"].([]any)
	if len(containers) == 0 {
		return fmt.Errorf("the pod spec has no container")
	}
	c0, ok := containers[0].(map[string]any)
	if !ok {
		return fmt.Errorf("the pod spec's first container is not an object")
	}
	sel, _ := spec["nodeSelector"].(map[string]any)
	if sel == nil {
		sel = map[string]any{}
	}
	sel[PoolLabel] = pool
	spec["nodeSelector"] = sel
	if taint != "" {
		tols, _ := spec["tolerations"].([]any)
		spec["tolerations"] = append(tols, map[string]any{"key": taint, "operator": "Exists", "effect": "NoSchedule"})
	}
	n := fmt.Sprint(gpus)
	c0["resources"] = map[string]any{"requests": map[string]any{"nvidia.com/gpu": n}, "limits": map[string]any{"nvidia.com/gpu": n}}
	return nil
}
