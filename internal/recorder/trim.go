package recorder

import (
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
)

// What the recorder's informers store of an object, and what its handlers read: one record per
// kind (claimObj, sandboxObj, podObj, poolObj), each the identity the informer machinery needs
// (meta) and the few fields its handlers use. The informers' transforms turn every claim,
// sandbox, pool and pod into one before it is stored: at 30,000 claims the full objects
// (managedFields above all) would be most of the harness's memory, and at 100,000 one record for
// all kinds (320 bytes, most of it fields of other kinds) was still the largest thing the harness
// held (a heap profile of the scale replay). A record is never changed once stored.

// meta is what the informer machinery reads of a stored object: namespace and name for the key,
// resourceVersion to tell an update from a resync. It implements metav1.Object with every other
// field empty (a kind that keeps the UID overrides GetUID).
type meta struct {
	Name, Namespace, ResourceVersion string
}

var _ metav1.Object = &meta{}

func (m *meta) GetNamespace() string                          { return m.Namespace }
func (m *meta) SetNamespace(ns string)                        { m.Namespace = ns }
func (m *meta) GetName() string                               { return m.Name }
func (m *meta) SetName(name string)                           { m.Name = name }
func (m *meta) GetGenerateName() string                       { return "" }
func (m *meta) SetGenerateName(string)                        {}
func (m *meta) GetUID() types.UID                             { return "" }
func (m *meta) SetUID(types.UID)                              {}
func (m *meta) GetResourceVersion() string                    { return m.ResourceVersion }
func (m *meta) SetResourceVersion(rv string)                  { m.ResourceVersion = rv }
func (m *meta) GetGeneration() int64                          { return 0 }
func (m *meta) SetGeneration(int64)                           {}
func (m *meta) GetSelfLink() string                           { return "" }
func (m *meta) SetSelfLink(string)                            {}
func (m *meta) GetCreationTimestamp() metav1.Time             { return metav1.Time{} }
func (m *meta) SetCreationTimestamp(metav1.Time)              {}
func (m *meta) GetDeletionTimestamp() *metav1.Time            { return nil }
func (m *meta) SetDeletionTimestamp(*metav1.Time)             {}
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
func (m *meta) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// serverTime is a server-clock time (a timestamp the API server wrote) in 8 bytes instead of
// time.Time's 24: Unix nanoseconds, 0 for the zero time.
type serverTime int64

func toServerTime(t time.Time) serverTime {
	if t.IsZero() {
		return 0
	}
	return serverTime(t.UnixNano())
}

// Time is t in the local time zone, as metav1.Time decodes it (the zero time for 0).
func (t serverTime) Time() time.Time {
	if t == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(t))
}

// claimObj is a stored SandboxClaim.
type claimObj struct {
	meta
	Sandbox     string     // status.sandbox.name
	Annotations []string   // the keys of its agents.x-k8s.io/ annotations, sorted; shared, never changed
	ReadyReason string     // the Ready condition's reason
	ReadySince  serverTime // the Ready condition's lastTransitionTime
	Ready       bool       // the Ready condition's status is True
}

// sandboxObj is a stored Sandbox.
type sandboxObj struct {
	meta
	Owner      string // controller owner "Kind/name" ("" = none)
	LaunchType string // agents.x-k8s.io/launch-type label
	Created    serverTime
	Deleting   bool // deletionTimestamp set
}

// podObj is a stored Pod: the recorder keys pods by UID.
type podObj struct {
	meta
	UID        types.UID
	Node       string // spec.nodeName
	Created    serverTime
	Scheduled  serverTime // PodScheduled=True lastTransitionTime
	ReadySince serverTime // PodReady=True lastTransitionTime
	Ready      bool       // PodReady is True
	Running    bool       // a container is running
	Deleting   bool       // deletionTimestamp set
}

// GetUID is the pod's UID.
func (p *podObj) GetUID() types.UID { return p.UID }

// poolObj is a stored SandboxWarmPool.
type poolObj struct {
	meta
	Desired, Replicas, ReadyReplicas int64 // spec.replicas, status.replicas, status.readyReplicas
}

// DeepCopyObject implements runtime.Object: every field is a value, or (Annotations) a slice that
// is never changed.
func (c *claimObj) DeepCopyObject() runtime.Object   { d := *c; return &d }
func (s *sandboxObj) DeepCopyObject() runtime.Object { d := *s; return &d }
func (p *podObj) DeepCopyObject() runtime.Object     { d := *p; return &d }
func (p *poolObj) DeepCopyObject() runtime.Object    { d := *p; return &d }

// interner hands out one shared copy of each of a bounded number of distinct strings, or string
// lists: the values many objects repeat (namespace, condition reasons, launch types, node names,
// annotation keys) arrive as a fresh copy in every decoded object, and the stores would keep one
// per object. Past max distinct values a value is kept as it came. Safe for concurrent use (each
// informer transforms on a goroutine of its own).
type interner struct {
	mu    sync.Mutex
	max   int
	strs  map[string]string
	lists map[string][]string
}

func newInterner(max int) *interner {
	return &interner{max: max, strs: map[string]string{}, lists: map[string][]string{}}
}

func (in *interner) str(s string) string {
	if s == "" {
		return ""
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if v, ok := in.strs[s]; ok {
		return v
	}
	if len(in.strs) >= in.max {
		return s
	}
	v := strings.Clone(s)
	in.strs[v] = v
	return v
}

// list returns the shared copy of l (nil when empty); l must not be changed afterwards.
func (in *interner) list(l []string) []string {
	if len(l) == 0 {
		return nil
	}
	key := strings.Join(l, "\x00")
	in.mu.Lock()
	defer in.mu.Unlock()
	if v, ok := in.lists[key]; ok {
		return v
	}
	if len(in.lists) >= in.max {
		return l
	}
	for i := range l {
		l[i] = strings.Clone(l[i])
	}
	in.lists[key] = l
	return l
}

// trimmer holds the informers' transforms and the values they share between stored objects.
type trimmer struct{ in *interner }

func newTrimmer() *trimmer { return &trimmer{in: newInterner(4096)} }

func (t *trimmer) meta(m metav1.Object) meta {
	return meta{Name: m.GetName(), Namespace: t.in.str(m.GetNamespace()), ResourceVersion: m.GetResourceVersion()}
}

// The transforms turn each informer's full objects into the records it stores. They pass through
// anything that is not the expected full object: the informer may hand them an object twice, or a
// DeletedFinalStateUnknown.

func (t *trimmer) claim(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	c := &claimObj{meta: t.meta(u)}
	c.Sandbox, _, _ = unstructured.NestedString(u.Object, "status", "sandbox", "name")
	var keys []string
	for k := range u.GetAnnotations() {
		if strings.HasPrefix(k, agentsandbox.AnnotationPrefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	c.Annotations = t.in.list(keys)
	conds, _, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "conditions")
	list, _ := conds.([]any)
	for _, cd := range list {
		m, _ := cd.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		status, _ := m["status"].(string)
		c.Ready = status == "True"
		reason, _ := m["reason"].(string)
		c.ReadyReason = t.in.str(reason)
		if s, ok := m["lastTransitionTime"].(string); ok {
			since, _ := time.Parse(time.RFC3339, s)
			c.ReadySince = toServerTime(since)
		}
	}
	return c, nil
}

func (t *trimmer) sandbox(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	s := &sandboxObj{meta: t.meta(u), LaunchType: t.in.str(u.GetLabels()[agentsandbox.LaunchTypeLabel]),
		Created: toServerTime(u.GetCreationTimestamp().Time), Deleting: u.GetDeletionTimestamp() != nil}
	for _, o := range u.GetOwnerReferences() {
		if o.Controller != nil && *o.Controller {
			s.Owner = o.Kind + "/" + o.Name
		}
	}
	return s, nil
}

func (t *trimmer) pool(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	p := &poolObj{meta: t.meta(u)}
	p.Desired, _, _ = unstructured.NestedInt64(u.Object, "spec", "replicas")
	p.Replicas, _, _ = unstructured.NestedInt64(u.Object, "status", "replicas")
	p.ReadyReplicas, _, _ = unstructured.NestedInt64(u.Object, "status", "readyReplicas")
	return p, nil
}

func (t *trimmer) pod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	w := &podObj{meta: t.meta(p), UID: p.UID, Node: t.in.str(p.Spec.NodeName),
		Created: toServerTime(p.CreationTimestamp.Time), Deleting: p.DeletionTimestamp != nil}
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
			w.Scheduled = toServerTime(c.LastTransitionTime.Time)
		case corev1.PodReady:
			w.Ready, w.ReadySince = true, toServerTime(c.LastTransitionTime.Time)
		}
	}
	return w, nil
}
