// Package nodechain records, from watches, the chain an agent platform waits on when a pool
// needs a node: pod created (Pending) -> NodeClaim created -> NodeClaim Launched -> Node created
// -> Node Ready -> pod scheduled -> pod Ready; and what node repair does to it: NodeClaim deleted,
// its Node gone, a replacement chain, and Karpenter's NodeRepairBlocked events. Every time is the
// harness's clock when the watch delivered the change (as the claim recorder's).
package nodechain

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/sut/karpenter"
)

// ClaimTimes is one NodeClaim's chain.
type ClaimTimes struct {
	Name        string    `json:"name"`
	Node        string    `json:"node,omitempty"`
	Created     time.Time `json:"created"`
	Launched    time.Time `json:"launched,omitzero"`
	Registered  time.Time `json:"registered,omitzero"`
	Initialized time.Time `json:"initialized,omitzero"`
	Deleting    time.Time `json:"deleting,omitzero"` // deletionTimestamp seen
	Deleted     time.Time `json:"deleted,omitzero"`
}

// NodeTimes is one Node's chain.
type NodeTimes struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	Ready   time.Time `json:"ready,omitzero"`
	Deleted time.Time `json:"deleted,omitzero"`
	// Unhealthy is the agent condition (type=reason) that was False when last seen, if any.
	Unhealthy string `json:"unhealthy,omitempty"`
}

// PodTimes is one pod's chain.
type PodTimes struct {
	Name      string    `json:"name"`
	Node      string    `json:"node,omitempty"`
	Created   time.Time `json:"created"`
	Scheduled time.Time `json:"scheduled,omitzero"`
	Ready     time.Time `json:"ready,omitzero"`
	Deleted   time.Time `json:"deleted,omitzero"`
}

// Blocked is one NodeRepairBlocked event.
type Blocked struct {
	At      time.Time `json:"at"`
	Node    string    `json:"node"`
	Message string    `json:"message"`
}

// Timeline is a copy of what the tracker has seen.
type Timeline struct {
	Claims  map[string]ClaimTimes `json:"claims"`
	Nodes   map[string]NodeTimes  `json:"nodes"`
	Pods    map[string]PodTimes   `json:"pods"` // by UID (a pod recreated under its name is another pod)
	Blocked []Blocked             `json:"blocked,omitempty"`
}

// Tracker watches one NodePool's NodeClaims and Nodes, one namespace's pods and the cluster's
// NodeRepairBlocked events.
type Tracker struct {
	mu      sync.Mutex
	tl      Timeline
	changed chan struct{}
	now     func() time.Time
}

func newTracker(now func() time.Time) *Tracker {
	return &Tracker{tl: Timeline{Claims: map[string]ClaimTimes{}, Nodes: map[string]NodeTimes{}, Pods: map[string]PodTimes{}},
		changed: make(chan struct{}, 1), now: now}
}

// Start starts the watches and returns once their caches have synced; they stop with ctx.
func Start(ctx context.Context, c *kube.Clients, namespace, pool string) (*Tracker, error) {
	t := newTracker(time.Now)
	poolSel := func(o *metav1.ListOptions) { o.LabelSelector = karpenter.NodePoolLabel + "=" + pool }
	dyn := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.Dynamic, 0, "", poolSel)
	claims := dyn.ForResource(karpenter.NodeClaimGVR).Informer()
	nodesF := informers.NewSharedInformerFactoryWithOptions(c.Typed, 0, informers.WithTweakListOptions(poolSel))
	nodes := nodesF.Core().V1().Nodes().Informer()
	podsF := informers.NewSharedInformerFactoryWithOptions(c.Typed, 0, informers.WithNamespace(namespace))
	pods := podsF.Core().V1().Pods().Informer()
	evF := informers.NewSharedInformerFactoryWithOptions(c.Typed, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("reason", karpenter.RepairBlockedReason).String()
	}))
	events := evF.Core().V1().Events().Informer()
	for _, reg := range []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandlerFuncs
	}{
		{claims, cache.ResourceEventHandlerFuncs{AddFunc: t.claim, UpdateFunc: func(_, o any) { t.claim(o) }, DeleteFunc: t.claimGone}},
		{nodes, cache.ResourceEventHandlerFuncs{AddFunc: t.node, UpdateFunc: func(_, o any) { t.node(o) }, DeleteFunc: t.nodeGone}},
		{pods, cache.ResourceEventHandlerFuncs{AddFunc: t.pod, UpdateFunc: func(_, o any) { t.pod(o) }, DeleteFunc: t.podGone}},
		{events, cache.ResourceEventHandlerFuncs{AddFunc: t.event, UpdateFunc: func(_, o any) { t.event(o) }}},
	} {
		if _, err := reg.inf.AddEventHandler(reg.h); err != nil {
			return nil, fmt.Errorf("node chain: %w", err)
		}
	}
	dyn.Start(ctx.Done())
	nodesF.Start(ctx.Done())
	podsF.Start(ctx.Done())
	evF.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), claims.HasSynced, nodes.HasSynced, pods.HasSynced, events.HasSynced) {
		return nil, fmt.Errorf("node chain: watches did not sync: %w", ctx.Err())
	}
	return t, nil
}

func (t *Tracker) signal() {
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

func tombstone(o any) any {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return o
}

func (t *Tracker) claim(o any) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return
	}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	ct, seen := t.tl.Claims[u.GetName()]
	if !seen {
		ct = ClaimTimes{Name: u.GetName(), Created: now}
	}
	if n, _, _ := unstructured.NestedString(u.Object, "status", "nodeName"); n != "" {
		ct.Node = n
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["status"] != "True" {
			continue
		}
		switch m["type"] {
		case "Launched":
			setOnce(&ct.Launched, now)
		case "Registered":
			setOnce(&ct.Registered, now)
		case "Initialized":
			setOnce(&ct.Initialized, now)
		}
	}
	if u.GetDeletionTimestamp() != nil {
		setOnce(&ct.Deleting, now)
	}
	t.tl.Claims[ct.Name] = ct
	t.signal()
}

func (t *Tracker) claimGone(o any) {
	u, ok := tombstone(o).(*unstructured.Unstructured)
	if !ok {
		return
	}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	ct := t.tl.Claims[u.GetName()]
	ct.Name = u.GetName()
	if ct.Created.IsZero() {
		ct.Created = now
	}
	setOnce(&ct.Deleting, now)
	ct.Deleted = now
	t.tl.Claims[ct.Name] = ct
	t.signal()
}

// AgentConditions are the node monitoring agent's conditions a Node may report False.
var AgentConditions = []corev1.NodeConditionType{"AcceleratedHardwareReady", "KernelReady", "NetworkingReady", "StorageReady", "ContainerRuntimeReady"}

func (t *Tracker) node(o any) {
	n, ok := o.(*corev1.Node)
	if !ok {
		return
	}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	nt, seen := t.tl.Nodes[n.Name]
	if !seen {
		nt = NodeTimes{Name: n.Name, Created: now}
	}
	nt.Unhealthy = ""
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			setOnce(&nt.Ready, now)
		}
		for _, a := range AgentConditions {
			if c.Type == a && c.Status == corev1.ConditionFalse {
				nt.Unhealthy = string(c.Type) + "=" + c.Reason
			}
		}
	}
	t.tl.Nodes[n.Name] = nt
	t.signal()
}

func (t *Tracker) nodeGone(o any) {
	n, ok := tombstone(o).(*corev1.Node)
	if !ok {
		return
	}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	nt := t.tl.Nodes[n.Name]
	nt.Name = n.Name
	if nt.Created.IsZero() {
		nt.Created = now
	}
	nt.Deleted = now
	t.tl.Nodes[n.Name] = nt
	t.signal()
}

func (t *Tracker) pod(o any) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	pt, seen := t.tl.Pods[podKey(p)]
	if !seen {
		pt = PodTimes{Name: p.Name, Created: now}
	}
	if p.Spec.NodeName != "" {
		pt.Node = p.Spec.NodeName
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case corev1.PodScheduled:
			setOnce(&pt.Scheduled, now)
		case corev1.PodReady:
			setOnce(&pt.Ready, now)
		}
	}
	t.tl.Pods[podKey(p)] = pt
	t.signal()
}

// podKey keys a pod by its UID: a controller that recreates a deleted pod under the same name
// (agent-sandbox names a sandbox's pod after the sandbox) makes a new pod with its own chain.
func podKey(p *corev1.Pod) string {
	if p.UID != "" {
		return string(p.UID)
	}
	return p.Name
}

func (t *Tracker) podGone(o any) {
	p, ok := tombstone(o).(*corev1.Pod)
	if !ok {
		return
	}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	pt := t.tl.Pods[podKey(p)]
	pt.Name = p.Name
	if pt.Created.IsZero() {
		pt.Created = now
	}
	pt.Deleted = now
	t.tl.Pods[podKey(p)] = pt
	t.signal()
}

func (t *Tracker) event(o any) {
	e, ok := o.(*corev1.Event)
	if !ok || e.Reason != karpenter.RepairBlockedReason {
		return
	}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, b := range t.tl.Blocked {
		if b.Node == e.InvolvedObject.Name && b.Message == e.Message {
			return // a repeat (Karpenter dedupes, the API server counts): the first one counts
		}
	}
	node := e.InvolvedObject.Name
	if e.InvolvedObject.Kind != "Node" {
		node = e.InvolvedObject.Kind + "/" + node
	}
	t.tl.Blocked = append(t.tl.Blocked, Blocked{At: now, Node: node, Message: e.Message})
	t.signal()
}

func setOnce(t *time.Time, v time.Time) {
	if t.IsZero() {
		*t = v
	}
}

// Snapshot copies the timeline.
func (t *Tracker) Snapshot() Timeline {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := Timeline{Claims: make(map[string]ClaimTimes, len(t.tl.Claims)), Nodes: make(map[string]NodeTimes, len(t.tl.Nodes)),
		Pods: make(map[string]PodTimes, len(t.tl.Pods)), Blocked: append([]Blocked(nil), t.tl.Blocked...)}
	for k, v := range t.tl.Claims {
		out.Claims[k] = v
	}
	for k, v := range t.tl.Nodes {
		out.Nodes[k] = v
	}
	for k, v := range t.tl.Pods {
		out.Pods[k] = v
	}
	return out
}

// WaitFor returns when done holds for the timeline (checked after every change the watches
// deliver), or an error naming what when timeout passes or ctx ends.
func (t *Tracker) WaitFor(ctx context.Context, what string, timeout time.Duration, done func(Timeline) bool) (Timeline, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		tl := t.Snapshot()
		if done(tl) {
			return tl, nil
		}
		select {
		case <-t.changed:
		case <-deadline.C:
			return tl, fmt.Errorf("%s: not seen within %s", what, timeout)
		case <-ctx.Done():
			return tl, fmt.Errorf("%s: %w", what, ctx.Err())
		}
	}
}

// LiveNodes are the pool's Ready, undeleted nodes, sorted.
func (tl Timeline) LiveNodes() []string {
	var out []string
	for _, n := range tl.Nodes {
		if !n.Ready.IsZero() && n.Deleted.IsZero() {
			out = append(out, n.Name)
		}
	}
	sort.Strings(out)
	return out
}

// Live counts what exists now: NodeClaims not deleting, Nodes Ready and not deleted, pods Ready
// and not deleted.
func (tl Timeline) Live() (claims, readyNodes, readyPods int) {
	for _, c := range tl.Claims {
		if c.Deleting.IsZero() {
			claims++
		}
	}
	for _, n := range tl.Nodes {
		if !n.Ready.IsZero() && n.Deleted.IsZero() {
			readyNodes++
		}
	}
	for _, p := range tl.Pods {
		if !p.Ready.IsZero() && p.Deleted.IsZero() {
			readyPods++
		}
	}
	return claims, readyNodes, readyPods
}

// Step is one link of the provisioning chain for one pod: from the pod's creation to each
// later point, in seconds (NaN for a link not seen).
type Step struct {
	Pod                                      string
	NodeClaimCreated, Launched, NodeCreated  float64
	NodeReady, PodScheduled, PodReady, Total float64
}

// Chains follows each pod that ended Ready on a node of the pool back to its node and that
// node's NodeClaim (the claim whose status names the node), giving the chain's links measured
// from the pod's creation. Pods whose node or claim was not seen are skipped.
func (tl Timeline) Chains() []Step {
	claimOf := map[string]ClaimTimes{}
	for _, c := range tl.Claims {
		if c.Node != "" {
			claimOf[c.Node] = c
		}
	}
	var out []Step
	for _, p := range tl.Pods {
		if p.Ready.IsZero() || p.Node == "" {
			continue
		}
		n, okN := tl.Nodes[p.Node]
		c, okC := claimOf[p.Node]
		if !okN || !okC {
			continue
		}
		since := func(t time.Time) float64 {
			if t.IsZero() {
				return math.NaN()
			}
			return t.Sub(p.Created).Seconds()
		}
		out = append(out, Step{Pod: p.Name, NodeClaimCreated: since(c.Created), Launched: since(c.Launched), NodeCreated: since(n.Created),
			NodeReady: since(n.Ready), PodScheduled: since(p.Scheduled), PodReady: since(p.Ready), Total: since(p.Ready)})
	}
	return out
}
