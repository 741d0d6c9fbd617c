// Package recorder watches one namespace with informers (claims, sandboxes, pods, warm pools) and
// keeps what a cell needs: per-claim bound/Ready times on the harness clock, every sandbox and pod
// creation with its owner, scheduling and Ready transitions (server clock), and pool status samples.
package recorder

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
)

// Claim is what was seen of one claim.
type Claim struct {
	Bound       time.Time // status.sandbox.name first seen (harness clock)
	Ready       time.Time // Ready=True first seen (harness clock)
	ServerReady time.Time // the Ready condition's lastTransitionTime (server clock)
	Sandbox     string
	LastReason  string // last Ready condition reason seen
}

// Sandbox is one sandbox's creation.
type Sandbox struct {
	Created    time.Time // creationTimestamp (server clock, 1 s resolution)
	Observed   time.Time // first informer event (harness clock)
	FromPool   bool      // created by the warm-pool controller (refill or fill)
	LaunchType string    // agents.x-k8s.io/launch-type as last seen
	Owner      string    // current controller owner, "Kind/name" ("" = none)
	Deleted    bool
}

// Pod is one pod's lifecycle timestamps (server clock). Pods are kept by UID: the sandbox
// controller recreates an evicted sandbox's pod under the same name.
type Pod struct {
	Name      string
	Observed  time.Time // first informer event (harness clock)
	Created   time.Time
	Scheduled time.Time
	Ready     time.Time
	Node      string
	Deleted   time.Time // deletion first seen, harness clock
}

// PoolSample is one observed pool status.
type PoolSample struct {
	At       time.Time
	Desired  int64
	Replicas int64
	Ready    int64
}

// Recorder holds the observations of one namespace.
type Recorder struct {
	mu        sync.Mutex
	claims    map[string]*Claim
	sandboxes map[string]*Sandbox
	pods      map[string]*Pod
	pools     map[string][]PoolSample
	// maxPoolMembers is the most sandboxes a pool controlled at once (live, not deleted).
	maxPoolMembers map[string]int
	changed        chan struct{}
	cancel         context.CancelFunc
	done           chan struct{}
}

// Start runs informers on namespace ns and returns once they have synced.
func Start(ctx context.Context, c *kube.Clients, ns string) (*Recorder, error) {
	r := &Recorder{
		claims: map[string]*Claim{}, sandboxes: map[string]*Sandbox{}, pods: map[string]*Pod{},
		pools: map[string][]PoolSample{}, maxPoolMembers: map[string]int{}, changed: make(chan struct{}, 1), done: make(chan struct{}),
	}
	ictx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	dyn := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.Dynamic, 0, ns, nil)
	typed := informers.NewSharedInformerFactoryWithOptions(c.Typed, 0, informers.WithNamespace(ns))
	handlers := []struct {
		inf cache.SharedIndexInformer
		fn  func(obj any)
		del func(obj any)
	}{
		{dyn.ForResource(agentsandbox.ClaimGVR).Informer(), r.onClaim, nil},
		{dyn.ForResource(agentsandbox.SandboxGVR).Informer(), r.onSandbox, r.onSandboxDelete},
		{dyn.ForResource(agentsandbox.PoolGVR).Informer(), r.onPool, nil},
		{typed.Core().V1().Pods().Informer(), r.onPod, r.onPodDelete},
	}
	var synced []cache.InformerSynced
	for _, h := range handlers {
		fn, del := h.fn, h.del
		if _, err := h.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    fn,
			UpdateFunc: func(_, n any) { fn(n) },
			DeleteFunc: func(obj any) {
				if del == nil {
					return
				}
				if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = t.Obj
				}
				del(obj)
			},
		}); err != nil {
			cancel()
			return nil, err
		}
		synced = append(synced, h.inf.HasSynced)
	}
	dyn.Start(ictx.Done())
	typed.Start(ictx.Done())
	go func() {
		<-ictx.Done()
		dyn.Shutdown()
		typed.Shutdown()
		close(r.done)
	}()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		cancel()
		return nil, fmt.Errorf("recorder informers did not sync in namespace %s", ns)
	}
	return r, nil
}

// Stop ends the informers.
func (r *Recorder) Stop() {
	r.cancel()
	<-r.done
}

func (r *Recorder) notify() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// Changed is signalled (coalesced) after any observation.
func (r *Recorder) Changed() <-chan struct{} { return r.changed }

func (r *Recorder) onClaim(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	now := time.Now()
	name := u.GetName()
	sb, _, _ := unstructured.NestedString(u.Object, "status", "sandbox", "name")
	status, reason, ltt := readyCondition(u)
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.claims[name]
	if c == nil {
		c = &Claim{}
		r.claims[name] = c
	}
	if sb != "" && c.Bound.IsZero() {
		c.Bound, c.Sandbox = now, sb
	}
	if sb != "" {
		c.Sandbox = sb
	}
	if reason != "" {
		c.LastReason = reason
	}
	if status == "True" && c.Ready.IsZero() {
		c.Ready, c.ServerReady = now, ltt
		if c.Bound.IsZero() {
			c.Bound = now
		}
	}
	r.notify()
}

func readyCondition(u *unstructured.Unstructured) (status, reason string, ltt time.Time) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, cd := range conds {
		m, _ := cd.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		status, _ = m["status"].(string)
		reason, _ = m["reason"].(string)
		if s, ok := m["lastTransitionTime"].(string); ok {
			ltt, _ = time.Parse(time.RFC3339, s)
		}
	}
	return status, reason, ltt
}

func (r *Recorder) onSandbox(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sandboxes[u.GetName()]
	if s == nil {
		s = &Sandbox{Created: u.GetCreationTimestamp().Time, Observed: time.Now()}
		for _, o := range u.GetOwnerReferences() {
			if o.Kind == "SandboxWarmPool" && o.Controller != nil && *o.Controller {
				s.FromPool = true
			}
		}
		r.sandboxes[u.GetName()] = s
	}
	if lt := u.GetLabels()[agentsandbox.LaunchTypeLabel]; lt != "" {
		s.LaunchType = lt
	}
	s.Owner = ""
	for _, o := range u.GetOwnerReferences() {
		if o.Controller != nil && *o.Controller {
			s.Owner = o.Kind + "/" + o.Name
		}
	}
	if u.GetDeletionTimestamp() != nil {
		s.Deleted = true
	}
	r.countPoolMembers()
	r.notify()
}

func (r *Recorder) onSandboxDelete(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.sandboxes[u.GetName()]; s != nil {
		s.Deleted = true
	}
	r.notify()
}

// countPoolMembers updates the per-pool maximum of live members (caller holds mu).
func (r *Recorder) countPoolMembers() {
	live := map[string]int{}
	for _, s := range r.sandboxes {
		if !s.Deleted && strings.HasPrefix(s.Owner, "SandboxWarmPool/") {
			live[strings.TrimPrefix(s.Owner, "SandboxWarmPool/")]++
		}
	}
	for p, n := range live {
		if n > r.maxPoolMembers[p] {
			r.maxPoolMembers[p] = n
		}
	}
}

func (r *Recorder) onPod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.pods[string(p.UID)]
	if rec == nil {
		rec = &Pod{Name: p.Name, Created: p.CreationTimestamp.Time, Observed: time.Now()}
		r.pods[string(p.UID)] = rec
	}
	rec.Node = p.Spec.NodeName
	if p.DeletionTimestamp != nil && rec.Deleted.IsZero() {
		rec.Deleted = time.Now() // being deleted (evicted) is what matters, not when kwok finishes
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case corev1.PodScheduled:
			if rec.Scheduled.IsZero() {
				rec.Scheduled = c.LastTransitionTime.Time
			}
		case corev1.PodReady:
			if rec.Ready.IsZero() {
				rec.Ready = c.LastTransitionTime.Time
			}
		}
	}
	r.notify()
}

func (r *Recorder) onPodDelete(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec := r.pods[string(p.UID)]; rec != nil && rec.Deleted.IsZero() {
		rec.Deleted = time.Now()
	}
	r.notify()
}

func (r *Recorder) onPool(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	desired, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	replicas, _, _ := unstructured.NestedInt64(u.Object, "status", "replicas")
	ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
	r.mu.Lock()
	defer r.mu.Unlock()
	samples := r.pools[u.GetName()]
	if n := len(samples); n > 0 {
		last := samples[n-1]
		if last.Desired == desired && last.Replicas == replicas && last.Ready == ready {
			return
		}
	}
	r.pools[u.GetName()] = append(samples, PoolSample{At: time.Now(), Desired: desired, Replicas: replicas, Ready: ready})
	r.notify()
}

// Snapshot is a consistent copy of everything observed.
type Snapshot struct {
	MaxPoolMembers map[string]int
	Claims         map[string]Claim
	Sandboxes      map[string]Sandbox
	Pods           map[string]Pod
	Pools          map[string][]PoolSample
}

// Snapshot copies the observations.
func (r *Recorder) Snapshot() Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Snapshot{Claims: map[string]Claim{}, Sandboxes: map[string]Sandbox{}, Pods: map[string]Pod{}, Pools: map[string][]PoolSample{}, MaxPoolMembers: map[string]int{}}
	for k, v := range r.maxPoolMembers {
		s.MaxPoolMembers[k] = v
	}
	for k, v := range r.claims {
		s.Claims[k] = *v
	}
	for k, v := range r.sandboxes {
		s.Sandboxes[k] = *v
	}
	for k, v := range r.pods {
		s.Pods[k] = *v
	}
	for k, v := range r.pools {
		s.Pools[k] = append([]PoolSample(nil), v...)
	}
	return s
}

// PoolReady returns the last observed ready count of pool.
func (r *Recorder) PoolReady(pool string) (ready, replicas int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.pools[pool]
	if len(s) == 0 {
		return 0, 0
	}
	return s[len(s)-1].Ready, s[len(s)-1].Replicas
}

// ClaimReady reports whether name has been seen Ready.
func (r *Recorder) ClaimReady(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.claims[name]
	return c != nil && !c.Ready.IsZero()
}

// WaitFor blocks until cond() is true (checked after every observation and every second),
// or until timeout/ctx. It never polls the API: cond reads the recorder's memory.
func (r *Recorder) WaitFor(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return cond()
		case <-r.changed:
		case <-tick.C:
		}
	}
}
