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
	// Annotations are the keys of the claim's agents.x-k8s.io/ annotations as last seen (the
	// controller's observability annotation among them, unless it is told not to write it).
	Annotations []string
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
	// The first informer event showing each step (harness clock, ms resolution; the server's
	// condition timestamps have 1 s): bound to a node, a container running, Ready.
	SeenScheduled, SeenRunning, SeenReady time.Time
}

// PoolSample is one observed pool status.
type PoolSample struct {
	At       time.Time
	Desired  int64
	Replicas int64
	Ready    int64
}

// Recorder holds the observations of one namespace. It keeps them in compact records of its own
// (claimRec, sandboxRec, podRec: times in 8 bytes, strings shared with the informers' stored
// records) and hands them out as Claim, Sandbox and Pod values: at 100,000 claims records of the
// exported types (times of 24 bytes, 9 of them in a Pod) took 46 MiB, a quarter of what it held.
type Recorder struct {
	mu sync.Mutex
	// epoch is where the harness-clock offsets in the records count from (harnessTime).
	epoch     time.Time
	claims    map[string]*claimRec
	sandboxes map[string]*sandboxRec
	pods      map[string]*podRec
	pools     map[string][]PoolSample
	// maxPoolMembers is the most sandboxes a pool controlled at once (live, not deleted);
	// livePoolMembers the current count, kept per event (a recount per event is quadratic).
	maxPoolMembers  map[string]int
	livePoolMembers map[string]int
	changed         chan struct{}
	cancel          context.CancelFunc
	done            chan struct{}
}

// harnessTime is a harness-clock time (time.Now when the recorder saw something) in 8 bytes: the
// nanoseconds since the recorder's epoch, 0 for the zero time. The epoch is taken before any
// observation, so an observation is never 0; times made from it keep its monotonic reading.
type harnessTime int64

func (r *Recorder) stamp(t time.Time) harnessTime { return harnessTime(t.Sub(r.epoch)) }

func (r *Recorder) harness(t harnessTime) time.Time {
	if t == 0 {
		return time.Time{}
	}
	return r.epoch.Add(time.Duration(t))
}

// claimRec is what the recorder keeps of a claim (Claim, compact).
type claimRec struct {
	bound, ready harnessTime
	serverReady  serverTime
	sandbox      string
	lastReason   string
	annotations  []string // shared with the stored claim, never changed
}

// sandboxRec is what the recorder keeps of a sandbox (Sandbox, compact).
type sandboxRec struct {
	created    serverTime
	observed   harnessTime
	countedIn  string // the pool whose live-member count includes this sandbox ("" = none)
	launchType string
	owner      string
	fromPool   bool
	deleted    bool
}

// podRec is what the recorder keeps of a pod (Pod, compact).
type podRec struct {
	name, node                            string
	created, scheduled, ready             serverTime
	observed, deleted                     harnessTime
	seenScheduled, seenRunning, seenReady harnessTime
}

func (r *Recorder) claim(c *claimRec) Claim {
	return Claim{Bound: r.harness(c.bound), Ready: r.harness(c.ready), ServerReady: c.serverReady.Time(),
		Sandbox: c.sandbox, LastReason: c.lastReason, Annotations: c.annotations}
}

func (r *Recorder) sandbox(s *sandboxRec) Sandbox {
	return Sandbox{Created: s.created.Time(), Observed: r.harness(s.observed), FromPool: s.fromPool,
		LaunchType: s.launchType, Owner: s.owner, Deleted: s.deleted}
}

func (r *Recorder) pod(p *podRec) Pod {
	return Pod{Name: p.name, Observed: r.harness(p.observed), Created: p.created.Time(), Scheduled: p.scheduled.Time(),
		Ready: p.ready.Time(), Node: p.node, Deleted: r.harness(p.deleted), SeenScheduled: r.harness(p.seenScheduled),
		SeenRunning: r.harness(p.seenRunning), SeenReady: r.harness(p.seenReady)}
}

// Informers are the four watches a recorder reads. Start builds them from the cluster's clients;
// the scale benchmark drives the same informer machinery from a synthetic event stream.
type Informers struct {
	Claims, Sandboxes, Pools, Pods cache.SharedIndexInformer
	// Run starts every informer (it must not block); Shutdown waits for them after stop closed.
	Run      func(stop <-chan struct{})
	Shutdown func()
}

// Start runs informers on namespace ns and returns once they have synced.
func Start(ctx context.Context, c *kube.Clients, ns string) (*Recorder, error) {
	dyn := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.Dynamic, 0, ns, nil)
	typed := informers.NewSharedInformerFactoryWithOptions(c.Typed, 0, informers.WithNamespace(ns))
	return StartInformers(ctx, Informers{
		Claims:    dyn.ForResource(agentsandbox.ClaimGVR).Informer(),
		Sandboxes: dyn.ForResource(agentsandbox.SandboxGVR).Informer(),
		Pools:     dyn.ForResource(agentsandbox.PoolGVR).Informer(),
		Pods:      typed.Core().V1().Pods().Informer(),
		Run:       func(stop <-chan struct{}) { dyn.Start(stop); typed.Start(stop) },
		Shutdown:  func() { dyn.Shutdown(); typed.Shutdown() },
	}, ns)
}

// StartInformers registers the recorder's handlers and trimming transforms on infs, starts them
// and returns once they have synced. The informers must not have been started.
func StartInformers(ctx context.Context, infs Informers, ns string) (*Recorder, error) {
	r := &Recorder{
		epoch:  time.Now().Add(-time.Millisecond), // before any observation: none is 0
		claims: map[string]*claimRec{}, sandboxes: map[string]*sandboxRec{}, pods: map[string]*podRec{},
		pools: map[string][]PoolSample{}, maxPoolMembers: map[string]int{}, livePoolMembers: map[string]int{},
		changed: make(chan struct{}, 1), done: make(chan struct{}),
	}
	ictx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	trim := newTrimmer()
	handlers := []struct {
		inf   cache.SharedIndexInformer
		trim  cache.TransformFunc
		fn    func(obj any)
		upd   func(old, obj any) // nil: fn(obj)
		del   func(obj any)
		label string
	}{
		{infs.Claims, trim.claim, r.onClaim, nil, nil, "claims"},
		{infs.Sandboxes, trim.sandbox, r.onSandbox, nil, r.onSandboxDelete, "sandboxes"},
		{infs.Pools, trim.pool, r.onPool, nil, nil, "pools"},
		{infs.Pods, trim.pod, r.onPod, r.onPodUpdate, r.onPodDelete, "pods"},
	}
	var synced []cache.InformerSynced
	for _, h := range handlers {
		fn, upd, del := h.fn, h.upd, h.del
		if upd == nil {
			upd = func(_, n any) { fn(n) }
		}
		// The informer's store keeps only what the handlers read: at 30,000 claims the full
		// objects (managedFields above all) would be most of the harness's memory.
		if err := h.inf.SetTransform(h.trim); err != nil {
			cancel()
			return nil, fmt.Errorf("recorder %s informer: %w", h.label, err)
		}
		if _, err := h.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    fn,
			UpdateFunc: upd,
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
			return nil, fmt.Errorf("recorder %s informer: %w", h.label, err)
		}
		synced = append(synced, h.inf.HasSynced)
	}
	infs.Run(ictx.Done())
	go func() {
		<-ictx.Done()
		if infs.Shutdown != nil {
			infs.Shutdown()
		}
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
	w, ok := obj.(*claimObj)
	if !ok {
		return
	}
	now := r.stamp(time.Now())
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.claims[w.Name]
	if c == nil {
		c = &claimRec{}
		r.claims[w.Name] = c
	}
	if w.Sandbox != "" && c.bound == 0 {
		c.bound = now
	}
	if w.Sandbox != "" {
		c.sandbox = w.Sandbox
	}
	if w.ReadyReason != "" {
		c.lastReason = w.ReadyReason
	}
	c.annotations = w.Annotations
	if w.Ready && c.ready == 0 {
		c.ready, c.serverReady = now, w.ReadySince
		if c.bound == 0 {
			c.bound = now
		}
	}
	r.notify()
}

func (r *Recorder) onSandbox(obj any) {
	w, ok := obj.(*sandboxObj)
	if !ok {
		return
	}
	now := r.stamp(time.Now())
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sandboxes[w.Name]
	if s == nil {
		s = &sandboxRec{created: w.Created, observed: now, fromPool: strings.HasPrefix(w.Owner, "SandboxWarmPool/")}
		r.sandboxes[w.Name] = s
	}
	if w.LaunchType != "" {
		s.launchType = w.LaunchType
	}
	s.owner = w.Owner
	if w.Deleting {
		s.deleted = true
	}
	r.countPoolMember(s)
	r.notify()
}

func (r *Recorder) onSandboxDelete(obj any) {
	w, ok := obj.(*sandboxObj)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.sandboxes[w.Name]; s != nil {
		s.deleted = true
		r.countPoolMember(s)
	}
	r.notify()
}

// countPoolMember moves s between the per-pool live-member counts after an event and updates the
// pools' maxima (caller holds mu). A sandbox is a live member while its controller owner is a
// SandboxWarmPool and it is not being deleted.
func (r *Recorder) countPoolMember(s *sandboxRec) {
	pool := ""
	if !s.deleted && strings.HasPrefix(s.owner, "SandboxWarmPool/") {
		pool = strings.TrimPrefix(s.owner, "SandboxWarmPool/")
	}
	if pool == s.countedIn {
		return
	}
	if s.countedIn != "" {
		r.livePoolMembers[s.countedIn]--
	}
	s.countedIn = pool
	if pool != "" {
		r.livePoolMembers[pool]++
		if n := r.livePoolMembers[pool]; n > r.maxPoolMembers[pool] {
			r.maxPoolMembers[pool] = n
		}
	}
}

func (r *Recorder) onPod(obj any) {
	w, ok := obj.(*podObj)
	if !ok {
		return
	}
	now := r.stamp(time.Now())
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.pods[string(w.UID)]
	if rec == nil {
		rec = &podRec{name: w.Name, created: w.Created, observed: now}
		r.pods[string(w.UID)] = rec
	}
	rec.node = w.Node
	if w.Deleting && rec.deleted == 0 {
		rec.deleted = now // being deleted (evicted) is what matters, not when kwok finishes
	}
	if rec.scheduled == 0 {
		rec.scheduled = w.Scheduled
	}
	if rec.ready == 0 && w.Ready {
		rec.ready = w.ReadySince
	}
	if rec.seenScheduled == 0 && w.Node != "" {
		rec.seenScheduled = now
	}
	if rec.seenRunning == 0 && w.Running {
		rec.seenRunning = now
	}
	if rec.seenReady == 0 && w.Ready {
		rec.seenReady = now
	}
	r.notify()
}

// onPodUpdate handles a pod update. A pod deleted and re-created under its name while the watch
// was away (a relist replaces it in the store) arrives as an update whose UID changed: the old pod
// is gone, and is recorded as deleted when its replacement is seen.
func (r *Recorder) onPodUpdate(old, obj any) {
	o, ok1 := old.(*podObj)
	n, ok2 := obj.(*podObj)
	if ok1 && ok2 && o.UID != n.UID {
		r.onPodDelete(o)
	}
	r.onPod(obj)
}

func (r *Recorder) onPodDelete(obj any) {
	w, ok := obj.(*podObj)
	if !ok {
		return
	}
	now := r.stamp(time.Now())
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec := r.pods[string(w.UID)]; rec != nil && rec.deleted == 0 {
		rec.deleted = now
	}
	r.notify()
}

func (r *Recorder) onPool(obj any) {
	w, ok := obj.(*poolObj)
	if !ok {
		return
	}
	desired, replicas, ready := w.Desired, w.Replicas, w.ReadyReplicas
	r.mu.Lock()
	defer r.mu.Unlock()
	samples := r.pools[w.Name]
	if n := len(samples); n > 0 {
		last := samples[n-1]
		if last.Desired == desired && last.Replicas == replicas && last.Ready == ready {
			return
		}
	}
	r.pools[w.Name] = append(samples, PoolSample{At: time.Now(), Desired: desired, Replicas: replicas, Ready: ready})
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
	return r.snapshotLocked()
}

func (r *Recorder) snapshotLocked() Snapshot {
	s := Snapshot{Claims: make(map[string]Claim, len(r.claims)), Sandboxes: make(map[string]Sandbox, len(r.sandboxes)),
		Pods: make(map[string]Pod, len(r.pods)), Pools: make(map[string][]PoolSample, len(r.pools)),
		MaxPoolMembers: make(map[string]int, len(r.maxPoolMembers))}
	for k, v := range r.maxPoolMembers {
		s.MaxPoolMembers[k] = v
	}
	for k, v := range r.claims {
		s.Claims[k] = r.claim(v)
	}
	for k, v := range r.sandboxes {
		s.Sandboxes[k] = r.sandbox(v)
	}
	for k, v := range r.pods {
		s.Pods[k] = r.pod(v)
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

// Counts returns how many claims, sandboxes and pods (by UID) have been seen.
func (r *Recorder) Counts() (claims, sandboxes, pods int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.claims), len(r.sandboxes), len(r.pods)
}

// ReadyAmong counts the claims of names seen Ready (one lock for the whole list).
func (r *Recorder) ReadyAmong(names []string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, name := range names {
		if c := r.claims[name]; c != nil && c.ready != 0 {
			n++
		}
	}
	return n
}

// LiveSandboxesOf counts the sandboxes bound to the claims of names that are not yet seen
// deleted (one lock for the whole list): after their claims are deleted, what the garbage
// collector still has to remove.
func (r *Recorder) LiveSandboxesOf(names []string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, name := range names {
		if c := r.claims[name]; c != nil && c.sandbox != "" {
			if s := r.sandboxes[c.sandbox]; s != nil && !s.deleted {
				n++
			}
		}
	}
	return n
}

// Refill counts, around t0: the sandboxes the warm-pool controller created that were first seen
// at or after t0, and the claims bound to a sandbox first seen before t0 (the warm slots a refill
// must replace). A refill is complete only when created >= taken and the pool reports itself full
// again: the pool's status alone can still read "full" from before the burst.
func (r *Recorder) Refill(t0 time.Time) (created, taken int) {
	creates, taken := r.RefillCreates(t0)
	return len(creates), taken
}

// ClaimReady reports whether name has been seen Ready.
func (r *Recorder) ClaimReady(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.claims[name]
	return c != nil && c.ready != 0
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
