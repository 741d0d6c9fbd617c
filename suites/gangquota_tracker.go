package suites

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/sut/kueuelws"
)

const (
	kueueAdmissionGate = "kueue.x-k8s.io/admission"
	lwsGroupIndexLabel = "leaderworkerset.sigs.k8s.io/group-index"
)

// gangTracker keeps the experiment's pods, Workloads, ClusterQueue and LeaderWorkerSet in
// informer caches and records a sample whenever the state it derives from them changes.
type gangTracker struct {
	pods, workloads, cq, lws cache.SharedIndexInformer
	cqName, lwsName          string
	stopCh                   chan struct{}

	mu      sync.Mutex
	t0      time.Time
	recs    []results.GangSample
	changed chan struct{}
}

func startGangTracker(ctx context.Context, c *kube.Clients, ns, cqName, lwsName string) (*gangTracker, error) {
	t := &gangTracker{cqName: cqName, lwsName: lwsName, stopCh: make(chan struct{}), changed: make(chan struct{}, 1)}
	pf := informers.NewSharedInformerFactoryWithOptions(c.Typed, 0, informers.WithNamespace(ns))
	t.pods = pf.Core().V1().Pods().Informer()
	df := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.Dynamic, 0, ns, nil)
	t.workloads = df.ForResource(kueuelws.WorkloadGVR).Informer()
	t.lws = df.ForResource(kueuelws.LWSGVR).Informer()
	cf := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.Dynamic, 0, metav1.NamespaceAll, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", cqName).String()
	})
	t.cq = cf.ForResource(kueuelws.ClusterQueueGVR).Informer()
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { t.record() },
		UpdateFunc: func(any, any) { t.record() },
		DeleteFunc: func(any) { t.record() },
	}
	for _, inf := range []cache.SharedIndexInformer{t.pods, t.workloads, t.lws, t.cq} {
		if _, err := inf.AddEventHandler(h); err != nil {
			return nil, err
		}
	}
	pf.Start(t.stopCh)
	df.Start(t.stopCh)
	cf.Start(t.stopCh)
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(sctx.Done(), t.pods.HasSynced, t.workloads.HasSynced, t.lws.HasSynced, t.cq.HasSynced) {
		t.stop()
		return nil, fmt.Errorf("gang-quota informers did not sync (are the Kueue and LWS CRDs installed?)")
	}
	return t, nil
}

func (t *gangTracker) stop() {
	select {
	case <-t.stopCh:
	default:
		close(t.stopCh)
	}
}

// start sets the time origin; samples are recorded from here on.
func (t *gangTracker) start(t0 time.Time) {
	t.mu.Lock()
	t.t0 = t0
	t.mu.Unlock()
	t.record()
}

// now derives the current state from the caches.
func (t *gangTracker) now() results.GangSample {
	var s results.GangSample
	for _, o := range t.pods.GetStore().List() {
		p, ok := o.(*corev1.Pod)
		if !ok {
			continue
		}
		s.Pods++
		for _, g := range p.Spec.SchedulingGates {
			if g.Name == kueueAdmissionGate {
				s.PodsGated++
			}
		}
		if p.Status.Phase == corev1.PodRunning {
			s.PodsRunning++
			s.GPUsRunning += podGPUs(p)
			if s.RunningByGroup == nil {
				s.RunningByGroup = map[string]int{}
			}
			s.RunningByGroup[p.Labels[lwsGroupIndexLabel]]++
		}
	}
	for _, o := range t.workloads.GetStore().List() {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		s.Workloads++
		if conditionTrue(u, "Admitted") {
			s.WorkloadsAdmitted++
		}
		// What Kueue holds for a Workload: its admission, while the quota is reserved and the
		// Workload is not finished (a finished Workload's quota is released).
		if conditionTrue(u, "QuotaReserved") && !conditionTrue(u, "Finished") {
			s.ReservedGPUs += admittedGPUs(u)
		}
	}
	for _, o := range t.cq.GetStore().List() {
		if u, ok := o.(*unstructured.Unstructured); ok && u.GetName() == t.cqName {
			s.CQReservedGPUs = flavorTotal(u, "flavorsReservation", kueuelws.GPUResource)
		}
	}
	for _, o := range t.lws.GetStore().List() {
		if u, ok := o.(*unstructured.Unstructured); ok && u.GetName() == t.lwsName {
			r, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
			z, _, _ := unstructured.NestedInt64(u.Object, "spec", "leaderWorkerTemplate", "size")
			s.LWSReplicas, s.LWSSize = int(r), int(z)
		}
	}
	return s
}

// workloadConditions lists every Workload's true conditions, for the record of a step.
func (t *gangTracker) workloadConditions() []string {
	var out []string
	for _, o := range t.workloads.GetStore().List() {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		var parts []string
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["status"] != "True" {
				continue
			}
			parts = append(parts, fmt.Sprintf("%v (%v: %v)", m["type"], m["reason"], m["message"]))
		}
		if len(parts) == 0 {
			parts = []string{"no condition true (pending)"}
		}
		out = append(out, u.GetName()+": "+strings.Join(parts, "; "))
	}
	sort.Strings(out)
	return out
}

func (t *gangTracker) record() {
	t.mu.Lock()
	if t.t0.IsZero() {
		t.mu.Unlock()
		return
	}
	s := t.now()
	s.T = time.Since(t.t0).Seconds()
	if n := len(t.recs); n > 0 {
		last := t.recs[n-1]
		last.T = s.T
		if reflect.DeepEqual(last, s) {
			t.mu.Unlock()
			return
		}
	}
	t.recs = append(t.recs, s)
	t.mu.Unlock()
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

func (t *gangTracker) samples() []results.GangSample {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]results.GangSample(nil), t.recs...)
}

// waitFor waits until pred holds for the current state (re-checked on every change).
func (t *gangTracker) waitFor(ctx context.Context, timeout time.Duration, pred func(results.GangSample) bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if pred(t.now()) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return pred(t.now())
		case <-t.changed:
		}
	}
}

// sleep waits d (or until ctx ends) while the informers keep recording.
func (t *gangTracker) sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func podGPUs(p *corev1.Pod) int {
	n := int64(0)
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Requests[corev1.ResourceName(kueuelws.GPUResource)]; ok {
			n += q.Value()
		}
	}
	return int(n)
}

func conditionTrue(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}

// admittedGPUs sums the GPUs of a Workload's admission (status.admission.podSetAssignments[].resourceUsage).
func admittedGPUs(u *unstructured.Unstructured) int {
	psas, _, _ := unstructured.NestedSlice(u.Object, "status", "admission", "podSetAssignments")
	total := int64(0)
	for _, p := range psas {
		pm, _ := p.(map[string]any)
		usage, _ := pm["resourceUsage"].(map[string]any)
		if v, ok := usage[kueuelws.GPUResource].(string); ok {
			if q, err := resource.ParseQuantity(v); err == nil {
				total += q.Value()
			}
		}
	}
	return int(total)
}

// flavorTotal sums a resource's total over a ClusterQueue's status.<field> (flavorsReservation
// or flavorsUsage).
func flavorTotal(u *unstructured.Unstructured, field, res string) int {
	flavors, _, _ := unstructured.NestedSlice(u.Object, "status", field)
	total := int64(0)
	for _, f := range flavors {
		fm, _ := f.(map[string]any)
		rs, _ := fm["resources"].([]any)
		for _, r := range rs {
			rm, _ := r.(map[string]any)
			if rm["name"] != res {
				continue
			}
			if s, ok := rm["total"].(string); ok {
				if q, err := resource.ParseQuantity(s); err == nil {
					total += q.Value()
				}
			}
		}
	}
	return int(total)
}
