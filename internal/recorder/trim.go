package recorder

import (
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
)

// watched is what the recorder's informers store of an object, and what its handlers read: the
// identity the informer machinery needs (name, namespace, UID, resourceVersion, creation and
// deletion timestamps) and the few fields the recorder uses. The informers' transforms turn every
// claim, sandbox, pool and pod into one before it is stored: at 30,000 claims the full objects
// (managedFields above all) would be most of the harness's memory.
type watched struct {
	meta
	Sandbox       string    // claim: status.sandbox.name
	Annotations   []string  // claim: the keys of its agents.x-k8s.io/ annotations
	ReadyStatus   string    // claim: Ready condition status; pod: "True" when PodReady is
	ReadyReason   string    // claim: Ready condition reason
	ReadySince    time.Time // claim and pod: the Ready condition's lastTransitionTime
	Scheduled     time.Time // pod: PodScheduled=True lastTransitionTime
	Node          string    // pod: spec.nodeName
	Owner         string    // sandbox: controller owner "Kind/name" ("" = none)
	LaunchType    string    // sandbox: agents.x-k8s.io/launch-type label
	Desired       int64     // pool: spec.replicas
	Replicas      int64     // pool: status.replicas
	ReadyReplicas int64     // pool: status.readyReplicas
	Running       bool      // pod: a container is running
}

// meta is the metadata a watched object keeps: what the informer machinery reads (namespace and
// name for the key, resourceVersion to tell an update from a resync) and what the handlers read.
// It implements metav1.Object with every other field empty, in 96 bytes where metav1.ObjectMeta
// and TypeMeta take 264: at 100,000 claims the informers store 303,000 objects, and the embedded
// ObjectMeta was half of what the recorder held (a heap profile of the scale replay).
type meta struct {
	Name, Namespace, ResourceVersion string
	UID                              types.UID // pods only: the recorder keys pods by UID
	CreationTimestamp                metav1.Time
	DeletionTimestamp                *metav1.Time
}

var _ metav1.Object = &meta{}

func (m *meta) GetNamespace() string                          { return m.Namespace }
func (m *meta) SetNamespace(ns string)                        { m.Namespace = ns }
func (m *meta) GetName() string                               { return m.Name }
func (m *meta) SetName(name string)                           { m.Name = name }
func (m *meta) GetGenerateName() string                       { return "" }
func (m *meta) SetGenerateName(string)                        {}
func (m *meta) GetUID() types.UID                             { return m.UID }
func (m *meta) SetUID(uid types.UID)                          { m.UID = uid }
func (m *meta) GetResourceVersion() string                    { return m.ResourceVersion }
func (m *meta) SetResourceVersion(rv string)                  { m.ResourceVersion = rv }
func (m *meta) GetGeneration() int64                          { return 0 }
func (m *meta) SetGeneration(int64)                           {}
func (m *meta) GetSelfLink() string                           { return "" }
func (m *meta) SetSelfLink(string)                            {}
func (m *meta) GetCreationTimestamp() metav1.Time             { return m.CreationTimestamp }
func (m *meta) SetCreationTimestamp(t metav1.Time)            { m.CreationTimestamp = t }
func (m *meta) GetDeletionTimestamp() *metav1.Time            { return m.DeletionTimestamp }
func (m *meta) SetDeletionTimestamp(t *metav1.Time)           { m.DeletionTimestamp = t }
func (m *meta) GetDeletionGracePeriodSeconds() *int64         { return nil }
func (m *meta) SetDeletionGracePeriodSeconds(*int64)          {}
func (m *meta) GetLabels() map[string]string                  { return nil }
func (m *meta) SetLabels(map[string]string)                   {}
func (m *meta) GetAnnotations() map[string]string             { return nil }
func (m *meta) SetAnnotations(map[string]string)              {}
func (m *meta) GetFinalizers() []string                       { return nil }
func (m *meta) SetFinalizers([]string)                        {}
func (m *meta) GetOwnerReferences() []metav1.OwnerReference   { return nil }
func (m *meta) SetOwnerReferences([]metav1.OwnerReference)    {}
func (m *meta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (m *meta) SetManagedFields([]metav1.ManagedFieldsEntry)  {}

// GetObjectKind implements runtime.Object: a stored object carries no type information.
func (w *watched) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

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

// newWatched keeps m's metadata; the UID only for pods (withUID), which the recorder keys by it.
func newWatched(m metav1.Object, withUID bool) *watched {
	w := &watched{meta: meta{
		Name: m.GetName(), Namespace: m.GetNamespace(), ResourceVersion: m.GetResourceVersion(),
		CreationTimestamp: m.GetCreationTimestamp(), DeletionTimestamp: m.GetDeletionTimestamp(),
	}}
	if withUID {
		w.UID = m.GetUID()
	}
	return w
}

// The transforms pass through anything that is not the expected full object: the informer may
// hand them an object twice, or a DeletedFinalStateUnknown.

func trimClaim(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	w := newWatched(u, false)
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
	w := newWatched(u, false)
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
	w := newWatched(u, false)
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
	w := newWatched(p, true)
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
