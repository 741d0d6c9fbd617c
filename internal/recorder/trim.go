package recorder

import (
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
)

// watched is what the recorder's informers store of an object, and what its handlers read: the
// identity the informer machinery needs (name, namespace, UID, resourceVersion, creation and
// deletion timestamps) and the few fields the recorder uses. The informers' transforms turn every
// claim, sandbox, pool and pod into one before it is stored: at 30,000 claims the full objects
// (managedFields above all) would be most of the harness's memory.
type watched struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Sandbox       string    // claim: status.sandbox.name
	Annotations   []string  // claim: the keys of its agents.x-k8s.io/ annotations
	ReadyStatus   string    // claim: Ready condition status; pod: "True" when PodReady is
	ReadyReason   string    // claim: Ready condition reason
	ReadySince    time.Time // claim and pod: the Ready condition's lastTransitionTime
	Scheduled     time.Time // pod: PodScheduled=True lastTransitionTime
	Node          string    // pod: spec.nodeName
	Running       bool      // pod: a container is running
	Owner         string    // sandbox: controller owner "Kind/name" ("" = none)
	LaunchType    string    // sandbox: agents.x-k8s.io/launch-type label
	Desired       int64     // pool: spec.replicas
	Replicas      int64     // pool: status.replicas
	ReadyReplicas int64     // pool: status.readyReplicas
}

// DeepCopyObject implements runtime.Object (the kept metadata has no shared maps or slices).
func (w *watched) DeepCopyObject() runtime.Object {
	c := *w
	c.Annotations = append([]string(nil), w.Annotations...)
	if w.DeletionTimestamp != nil {
		t := *w.DeletionTimestamp
		c.DeletionTimestamp = &t
	}
	return &c
}

func newWatched(kind string, m metav1.Object) *watched {
	return &watched{TypeMeta: metav1.TypeMeta{Kind: kind}, ObjectMeta: metav1.ObjectMeta{
		Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(), ResourceVersion: m.GetResourceVersion(),
		CreationTimestamp: m.GetCreationTimestamp(), DeletionTimestamp: m.GetDeletionTimestamp(),
	}}
}

// The transforms pass through anything that is not the expected full object: the informer may
// hand them an object twice, or a DeletedFinalStateUnknown.

func trimClaim(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	w := newWatched("SandboxClaim", u)
	w.Sandbox, _, _ = unstructured.NestedString(u.Object, "status", "sandbox", "name")
	for k := range u.GetAnnotations() {
		if strings.HasPrefix(k, agentsandbox.AnnotationPrefix) {
			w.Annotations = append(w.Annotations, k)
		}
	}
	sort.Strings(w.Annotations)
	conds, _, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "conditions")
	list, _ := conds.([]any)
	for _, cd := range list {
		m, _ := cd.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		w.ReadyStatus, _ = m["status"].(string)
		w.ReadyReason, _ = m["reason"].(string)
		if s, ok := m["lastTransitionTime"].(string); ok {
			w.ReadySince, _ = time.Parse(time.RFC3339, s)
		}
	}
	return w, nil
}

func trimSandbox(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	w := newWatched("Sandbox", u)
	w.LaunchType = u.GetLabels()[agentsandbox.LaunchTypeLabel]
	for _, o := range u.GetOwnerReferences() {
		if o.Controller != nil && *o.Controller {
			w.Owner = o.Kind + "/" + o.Name
		}
	}
	return w, nil
}

func trimPool(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	w := newWatched("SandboxWarmPool", u)
	w.Desired, _, _ = unstructured.NestedInt64(u.Object, "spec", "replicas")
	w.Replicas, _, _ = unstructured.NestedInt64(u.Object, "status", "replicas")
	w.ReadyReplicas, _, _ = unstructured.NestedInt64(u.Object, "status", "readyReplicas")
	return w, nil
}

func trimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	w := newWatched("Pod", p)
	w.Node = p.Spec.NodeName
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil {
			w.Running = true
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case corev1.PodScheduled:
			w.Scheduled = c.LastTransitionTime.Time
		case corev1.PodReady:
			w.ReadyStatus, w.ReadySince = "True", c.LastTransitionTime.Time
		}
	}
	return w, nil
}
