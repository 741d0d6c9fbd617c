package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/brakebench/brakebench/internal/undo"
)

// Names used by GPU faults.
const (
	AcceleratedHardwareReady corev1.NodeConditionType = "AcceleratedHardwareReady"
	GPUResource              corev1.ResourceName      = "nvidia.com/gpu"
	GPUErrorTaint                                     = "nvidia.com/gpu-error"
	kwokNodeAnnotation                                = "kwok.x-k8s.io/node"
)

// FatalXIDs are the XIDs the EKS node monitoring agent treats as fatal (a node condition);
// every other XID is warning-only (an Event on the node).
var FatalXIDs = map[int]bool{46: true, 48: true, 54: true, 62: true, 63: true, 64: true, 74: true, 79: true, 95: true, 109: true,
	110: true, 119: true, 120: true, 136: true, 140: true, 142: true, 143: true, 151: true, 155: true, 156: true, 158: true}

// Symptom is how a fault kind presents, the way the EKS node monitoring agent reports it: a fatal
// one sets Condition to False with Reason (repair-eligible), a warning one is only an Event.
type Symptom struct {
	Fatal     bool
	Reason    string
	Message   string
	Condition corev1.NodeConditionType
}

// The node monitoring agent's other four conditions (its pkg/conditions).
const (
	KernelReady           corev1.NodeConditionType = "KernelReady"
	NetworkingReady       corev1.NodeConditionType = "NetworkingReady"
	StorageReady          corev1.NodeConditionType = "StorageReady"
	ContainerRuntimeReady corev1.NodeConditionType = "ContainerRuntimeReady"
)

// NodeConditions are the agent's five conditions, in the order the faults name them.
var NodeConditions = []corev1.NodeConditionType{AcceleratedHardwareReady, KernelReady, NetworkingReady, StorageReady, ContainerRuntimeReady}

// FaultKinds are the fault kinds, GPU ones first: one per reason the lab simulates. The agent's
// reasons file (pkg/reasons/reasons.yaml) gives each reason's severity; the messages of the
// non-GPU reasons are brakebench's own wording, not the agent's.
var FaultKinds = []string{"xid", "ecc", "nvlink", "device-count", "kernel", "networking", "runtime", "storage"}

// SymptomOf maps a fault kind to its condition or event: the GPU kinds (xid, ecc, nvlink,
// device-count) to AcceleratedHardwareReady; kernel to KernelReady ForkFailedOutOfPIDs (fatal);
// networking to NetworkingReady InterfaceNotUp (fatal); runtime to ContainerRuntimeReady
// PodStuckTerminating (fatal); storage to StorageReady BlockDeviceIOError (every StorageReady
// reason is a warning in the agent's reasons file: an Event, no condition).
func SymptomOf(kind string, xid, gpus int) (Symptom, error) {
	switch kind {
	case "xid":
		if FatalXIDs[xid] {
			return Symptom{true, fmt.Sprintf("NvidiaXID%dError", xid), fmt.Sprintf("detected XID-%d on the instance, review kernel logs for additional information.", xid), AcceleratedHardwareReady}, nil
		}
		return Symptom{false, fmt.Sprintf("NvidiaXID%dWarning", xid), fmt.Sprintf("detected unknown XID-%d on the instance, review kernel logs for additional information.", xid), AcceleratedHardwareReady}, nil
	case "ecc":
		return Symptom{true, "NvidiaDoubleBitError", "detected 1 Nvidia Double Bit error(s) on location [0]", AcceleratedHardwareReady}, nil
	case "nvlink":
		return Symptom{true, "NvidiaNVLinkError", "detected 1 NVLink errors on fieldId [409]", AcceleratedHardwareReady}, nil
	case "device-count":
		return Symptom{true, "NvidiaDeviceCountMismatch", fmt.Sprintf("DCGM detected %d GPUs but %d nvidia device files were detected", gpus-1, gpus), AcceleratedHardwareReady}, nil
	case "kernel":
		return Symptom{true, "ForkFailedOutOfPIDs", "fork failed: the node has run out of process IDs (simulated by brakebench)", KernelReady}, nil
	case "networking":
		return Symptom{true, "InterfaceNotUp", "a network interface is not up (simulated by brakebench)", NetworkingReady}, nil
	case "runtime":
		return Symptom{true, "PodStuckTerminating", "a pod has been stuck terminating (simulated by brakebench)", ContainerRuntimeReady}, nil
	case "storage":
		return Symptom{false, "BlockDeviceIOError", "block device I/O errors (simulated by brakebench)", StorageReady}, nil
	}
	return Symptom{}, fmt.Errorf("unknown fault kind %q (%s)", kind, strings.Join(FaultKinds, ", "))
}

// GPUFault simulates a GPU failure on some nodes: the AcceleratedHardwareReady condition the
// EKS node monitoring agent would set (or a Warning Event for warning-only codes), the
// dcgm-exporter metrics, and optionally what a fatal fault does next: a NoExecute taint (real
// taint eviction by kube-controller-manager) or the node going NotReady.
type GPUFault struct {
	Client   kubernetes.Interface
	Journal  *undo.Journal
	Labels   map[string]string
	Nodes    []string
	Kind     string // xid | ecc | nvlink | device-count
	XID      int
	Escalate string // none | taint | notready
	Exporter *DCGMExporter
}

// Name implements Fault: gpu-<kind> for the GPU kinds, node-<kind> for the others.
func (f *GPUFault) Name() string {
	if slices.Index(FaultKinds, f.Kind) >= 4 {
		return "node-" + f.Kind
	}
	return "gpu-" + f.Kind
}

// nodeOriginal is what a GPU fault may change on a node, kept to restore it exactly.
type nodeOriginal struct {
	Taints         []corev1.Taint        `json:"taints"`
	Condition      *corev1.NodeCondition `json:"condition"` // AcceleratedHardwareReady before the fault
	Ready          *corev1.NodeCondition `json:"ready"`
	GPUCapacity    *resource.Quantity    `json:"gpuCapacity"`
	GPUAllocatable *resource.Quantity    `json:"gpuAllocatable"`
	KwokManaged    string                `json:"kwokManaged"`
	// Others are the agent's other four conditions before the fault (absent ones are not here).
	Others []corev1.NodeCondition `json:"others,omitempty"`
}

func originalOf(n *corev1.Node) nodeOriginal {
	o := nodeOriginal{Taints: n.Spec.Taints, KwokManaged: n.Annotations[kwokNodeAnnotation]}
	for i := range n.Status.Conditions {
		c := n.Status.Conditions[i]
		switch c.Type {
		case AcceleratedHardwareReady:
			o.Condition = &c
		case corev1.NodeReady:
			o.Ready = &c
		case KernelReady, NetworkingReady, StorageReady, ContainerRuntimeReady:
			o.Others = append(o.Others, c)
		}
	}
	if q, ok := n.Status.Capacity[GPUResource]; ok {
		o.GPUCapacity = &q
	}
	if q, ok := n.Status.Allocatable[GPUResource]; ok {
		o.GPUAllocatable = &q
	}
	return o
}

// Arm faults every node; for each, the original is journaled and the revert registered first.
func (f *GPUFault) Arm(ctx context.Context) (undo.Revert, error) {
	var reverts []undo.Revert
	revertAll := func(ctx context.Context) error {
		var errs []string
		for i := len(reverts) - 1; i >= 0; i-- {
			if err := reverts[i](ctx); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("%s", strings.Join(errs, "; "))
		}
		return nil
	}
	for _, name := range f.Nodes {
		n, err := f.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return revertAll, fmt.Errorf("GPU fault: node %s: %w", name, err)
		}
		orig := originalOf(n)
		gpus := 0
		if orig.GPUCapacity != nil {
			gpus = int(orig.GPUCapacity.Value())
		}
		sym, err := SymptomOf(f.Kind, f.XID, gpus)
		if err != nil {
			return revertAll, err
		}
		ref := "node/" + name
		if err := f.Journal.Record(undo.Entry{Op: undo.OpChanged, Ref: ref, APIVersion: "v1", Kind: "Node", Resource: "nodes", Name: name, Original: marshal(orig)}); err != nil {
			return revertAll, err
		}
		reverts = append(reverts, func(ctx context.Context) error {
			if err := RestoreNode(ctx, f.Client, name, orig); err != nil {
				return err
			}
			if f.Exporter != nil {
				f.Exporter.Clear(name)
			}
			return f.Journal.Record(undo.Entry{Op: undo.OpReverted, Ref: ref})
		})
		if f.Exporter != nil && sym.Condition == AcceleratedHardwareReady {
			f.Exporter.Inject(name, f.Kind, f.XID)
		}
		if !sym.Fatal {
			if err := f.event(ctx, n, sym, &reverts); err != nil {
				return revertAll, err
			}
			continue
		}
		now := metav1.Now()
		cond := corev1.NodeCondition{Type: sym.Condition, Status: corev1.ConditionFalse, Reason: sym.Reason, Message: sym.Message,
			LastHeartbeatTime: now, LastTransitionTime: now}
		status := map[string]any{"conditions": []corev1.NodeCondition{cond}}
		if f.Kind == "device-count" && gpus > 0 {
			less := resource.NewQuantity(int64(gpus-1), resource.DecimalSI)
			status["capacity"] = map[string]any{string(GPUResource): less.String()}
			status["allocatable"] = map[string]any{string(GPUResource): less.String()}
		}
		if err := patchStatus(ctx, f.Client, name, map[string]any{"status": status}); err != nil {
			return revertAll, err
		}
		switch f.Escalate {
		case "taint":
			taints := append(append([]corev1.Taint(nil), n.Spec.Taints...), corev1.Taint{Key: GPUErrorTaint, Value: sym.Reason, Effect: corev1.TaintEffectNoExecute, TimeAdded: &now})
			if err := patchSpec(ctx, f.Client, name, map[string]any{"spec": map[string]any{"taints": taints}}); err != nil {
				return revertAll, err
			}
		case "notready":
			// kwok stops heartbeating a node without its annotation; Ready=False then stays, and
			// kube-controller-manager taints and, after the pods' toleration, evicts.
			patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{kwokNodeAnnotation: nil}}}
			if err := patchSpec(ctx, f.Client, name, patch); err != nil {
				return revertAll, err
			}
			ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "AcceleratedHardwareFailure", Message: sym.Message, LastHeartbeatTime: now, LastTransitionTime: now}
			if err := patchStatus(ctx, f.Client, name, map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{ready}}}); err != nil {
				return revertAll, err
			}
		}
	}
	return revertAll, nil
}

func (f *GPUFault) event(ctx context.Context, n *corev1.Node, sym Symptom, reverts *[]undo.Revert) error {
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: "brakebench-gpu-", Namespace: metav1.NamespaceDefault, Labels: f.Labels},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: n.Name, UID: n.UID, APIVersion: "v1"},
		Type:           corev1.EventTypeWarning, Reason: string(sym.Condition), Message: sym.Reason + ": " + sym.Message,
		Source: corev1.EventSource{Component: "brakebench-gpu-fault"}, FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
	}
	created, err := f.Client.CoreV1().Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("GPU fault event on %s: %w", n.Name, err)
	}
	if err := f.Journal.Record(undo.Entry{Op: undo.OpCreated, APIVersion: "v1", Kind: "Event", Resource: "events", Namespace: created.Namespace, Name: created.Name}); err != nil {
		return err
	}
	*reverts = append(*reverts, func(ctx context.Context) error {
		err := f.Client.CoreV1().Events(created.Namespace).Delete(ctx, created.Name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	return nil
}

func patchStatus(ctx context.Context, c kubernetes.Interface, node string, patch map[string]any) error {
	raw, _ := json.Marshal(patch)
	if _, err := c.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, raw, metav1.PatchOptions{FieldManager: "brakebench"}, "status"); err != nil {
		return fmt.Errorf("patch node %s status: %w", node, err)
	}
	return nil
}

func patchSpec(ctx context.Context, c kubernetes.Interface, node string, patch map[string]any) error {
	raw, _ := json.Marshal(patch)
	if _, err := c.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, raw, metav1.PatchOptions{FieldManager: "brakebench"}); err != nil {
		return fmt.Errorf("patch node %s: %w", node, err)
	}
	return nil
}

// RestoreNode puts back what a GPU fault changed: taints, the agent's five conditions and Ready, GPU capacity and kwok's management annotation.
func RestoreNode(ctx context.Context, c kubernetes.Interface, name string, o nodeOriginal) error {
	taints := o.Taints
	if taints == nil {
		taints = []corev1.Taint{}
	}
	ann := any(nil)
	if o.KwokManaged != "" {
		ann = o.KwokManaged
	}
	if err := patchSpec(ctx, c, name, map[string]any{"spec": map[string]any{"taints": taints},
		"metadata": map[string]any{"annotations": map[string]any{kwokNodeAnnotation: ann}}}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	conds := []any{}
	if o.Condition != nil {
		conds = append(conds, *o.Condition)
	} else {
		conds = append(conds, map[string]any{"type": string(AcceleratedHardwareReady), "$patch": "delete"})
	}
	for _, t := range NodeConditions[1:] {
		i := slices.IndexFunc(o.Others, func(c corev1.NodeCondition) bool { return c.Type == t })
		if i >= 0 {
			conds = append(conds, o.Others[i])
		} else {
			conds = append(conds, map[string]any{"type": string(t), "$patch": "delete"})
		}
	}
	if o.Ready != nil {
		ready := *o.Ready
		ready.LastHeartbeatTime = metav1.Now()
		conds = append(conds, ready)
	}
	status := map[string]any{"conditions": conds}
	if o.GPUCapacity != nil {
		status["capacity"] = map[string]any{string(GPUResource): o.GPUCapacity.String()}
	}
	if o.GPUAllocatable != nil {
		status["allocatable"] = map[string]any{string(GPUResource): o.GPUAllocatable.String()}
	}
	return patchStatus(ctx, c, name, map[string]any{"status": status})
}

// RestoreNodeFromJournal restores a node from a journal entry's Original.
func RestoreNodeFromJournal(ctx context.Context, c kubernetes.Interface, e undo.Entry) error {
	var o nodeOriginal
	if err := json.Unmarshal(e.Original, &o); err != nil {
		return fmt.Errorf("journal entry for node %s: %w", e.Name, err)
	}
	return RestoreNode(ctx, c, e.Name, o)
}

// NodeState is the part of a node a GPU fault may touch, in a comparable form (timestamps are
// left out: kwok's heartbeats move them all the time).
func NodeState(n *corev1.Node) string {
	var parts []string
	for _, t := range n.Spec.Taints {
		parts = append(parts, fmt.Sprintf("taint %s=%s:%s", t.Key, t.Value, t.Effect))
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady || slices.Contains(NodeConditions, c.Type) {
			parts = append(parts, fmt.Sprintf("condition %s=%s %s %s", c.Type, c.Status, c.Reason, c.Message))
		}
	}
	for _, rl := range []struct {
		n string
		l corev1.ResourceList
	}{{"capacity", n.Status.Capacity}, {"allocatable", n.Status.Allocatable}} {
		if q, ok := rl.l[GPUResource]; ok {
			parts = append(parts, fmt.Sprintf("%s gpu=%s", rl.n, q.String()))
		}
	}
	parts = append(parts, "kwok="+n.Annotations[kwokNodeAnnotation], fmt.Sprintf("unschedulable=%v", n.Spec.Unschedulable))
	sort.Strings(parts)
	return strings.Join(parts, "\n")
}

// Unavailable reports whether a node is tainted NoExecute/NoSchedule by a fault or NotReady.
func Unavailable(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == GPUErrorTaint || t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return true
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			return true
		}
	}
	return false
}
