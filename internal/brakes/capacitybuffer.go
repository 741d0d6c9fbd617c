package brakes

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/brakebench/brakebench/internal/config"
)

// karpenterPoolLabel is the label brakebench's Karpenter NodePools put on their nodes (and the
// pods placed on them select): internal/sut/karpenter.PoolLabel, repeated here because this
// package stays free of client-go.
const karpenterPoolLabel = "brakebench.io/pool"

// headroomName names the cell's PodTemplate and CapacityBuffer.
const headroomName = "bb-headroom"

// capacityBuffer is Karpenter's CapacityBuffer (autoscaling.x-k8s.io/v1beta1, behind Karpenter's
// CapacityBuffer gate) as a brake: pre-provisioned headroom of N chunks shaped like the pool's
// pods, which Karpenter counts as pending pods and keeps nodes for until real pods take them. It
// acts where the pool's pods need Karpenter nodes (the node-repair faults' NodePool,
// poolAutoscaling.nodes=karpenter); anywhere else the cell fails and says so.
type capacityBuffer struct{}

func init() { register(capacityBuffer{}) }

func (capacityBuffer) Name() string { return "capacity-buffer" }

type capacityBufferSettings struct {
	Replicas int `mapstructure:"capacityBuffer"`
}

func (capacityBuffer) Settings() any { return &capacityBufferSettings{} }

func (capacityBuffer) Setting(s config.Section) (string, string, error) {
	return setting(s, "brakes.capacityBuffer", func(st capacityBufferSettings) (string, error) {
		if st.Replicas < 1 || st.Replicas > 10000 {
			return "", fmt.Errorf("expected 1 to 10000 chunks of headroom (each the size of one pool pod)")
		}
		return strconv.Itoa(st.Replicas), nil
	})
}

func (capacityBuffer) Flags(string) []string { return nil }

// PodShaped marks a brake that needs the pool's pod spec (Cell.PodSpec) rather than controller
// flags: suites that place the pool on Karpenter nodes accept it.
func (capacityBuffer) PodShaped() {}

// Apply installs a PodTemplate with the pool's pod spec and a CapacityBuffer of value replicas
// referring to it, in the cell's namespace (deleted with the cell).
func (capacityBuffer) Apply(ctx context.Context, cell *Cell, value string) error {
	if cell.Install == nil || cell.Namespace == "" || cell.PodSpec == nil {
		return fmt.Errorf("capacity-buffer needs the cell's namespace and the pool's pod spec")
	}
	sel, _ := cell.PodSpec["nodeSelector"].(map[string]any)
	if _, ok := sel[karpenterPoolLabel]; !ok {
		return fmt.Errorf("capacity-buffer is headroom on a Karpenter NodePool, and this cell's pool is not on one (use it with matrix.faults node-repair or node-repair-blocked, or poolAutoscaling.nodes=karpenter)")
	}
	n, err := strconv.Atoi(value)
	if err != nil {
		return fmt.Errorf("capacity-buffer replicas %q: %w", value, err)
	}
	tmpl := map[string]any{"apiVersion": "v1", "kind": "PodTemplate",
		"metadata": map[string]any{"name": headroomName, "namespace": cell.Namespace},
		"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": headroomName}}, "spec": cell.PodSpec}}
	buf := map[string]any{"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer",
		"metadata": map[string]any{"name": headroomName, "namespace": cell.Namespace},
		"spec":     map[string]any{"podTemplateRef": map[string]any{"name": headroomName}, "replicas": n}}
	var manifest []byte
	for _, o := range []map[string]any{tmpl, buf} {
		raw, err := json.Marshal(o) // JSON is YAML
		if err != nil {
			return err
		}
		manifest = append(append(manifest, "---\n"...), raw...)
		manifest = append(manifest, '\n')
	}
	if _, err := cell.Install(ctx, "capacity buffer", manifest); err != nil {
		return err
	}
	cell.Log("capacity-buffer", "armed", fmt.Sprintf("CapacityBuffer %s/%s: %d chunk(s) of headroom shaped like the pool's pods", cell.Namespace, headroomName, n))
	return nil
}
