package suites

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/brakebench/brakebench/faults"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/recorder"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/scrape"
	"github.com/brakebench/brakebench/internal/stats"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
)

// faultLog collects a cell's fault timeline on the harness clock.
type faultLog struct {
	mu     sync.Mutex
	events []struct {
		at                   time.Time
		fault, event, detail string
	}
}

func (l *faultLog) add(fault, event, detail string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, struct {
		at                   time.Time
		fault, event, detail string
	}{time.Now(), fault, event, detail})
}

func (l *faultLog) relative(t0 time.Time) []results.FaultEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []results.FaultEvent
	for _, e := range l.events {
		out = append(out, results.FaultEvent{T: e.at.Sub(t0).Seconds(), Fault: e.fault, Event: e.event, Detail: e.detail})
	}
	return out
}

// armAPF squeezes the target identity into a tiny priority level (before the burst).
func armAPF(ctx context.Context, env *Env, ns string, idx int, labels map[string]string, log *faultLog, reverts *faults.Stack) (string, error) {
	a := env.Config.Faults.APF
	f := &faults.APFThrottle{Client: env.Clients.Typed, Journal: env.Journal, Labels: labels,
		ObjectName: fmt.Sprintf("brakebench-throttle-%s-%02d", env.RunID, idx), Shares: int32(a.Shares), Queues: int32(a.Queues),
		QueueLength: int32(a.QueueLength), Precedence: 500}
	switch a.Target {
	case "controller":
		f.Namespace, f.ServiceAccount = agentsandbox.ControllerNamespace, agentsandbox.ControllerServiceAcount
	case "loadgen":
		if env.Config.Loadgen.Identity != "serviceaccount" {
			return "", fmt.Errorf("faults.apf.target=loadgen needs loadgen.identity=serviceaccount (the admin identity is exempt from APF)")
		}
		f.Namespace, f.ServiceAccount = ns, "brakebench-loadgen"
	}
	revert, err := f.Arm(ctx)
	reverts.Push("apf throttle", func(ctx context.Context) error {
		err := revert(ctx)
		log.add("apf-throttle", "reverted", f.ObjectName)
		return err
	})
	if err != nil {
		log.add("apf-throttle", "error", err.Error())
		return "", err
	}
	log.add("apf-throttle", "armed", fmt.Sprintf("priority level %s (%d shares, %d queue(s) of %d) for %s/%s", f.ObjectName, a.Shares, a.Queues, a.QueueLength, f.Namespace, f.ServiceAccount))
	return f.ObjectName, nil
}

// armControlPlane restarts the scheduler or the apiserver with the cell's limits (before the burst).
func armControlPlane(ctx context.Context, env *Env, fault string, log *faultLog, reverts *faults.Stack) error {
	r, ok := env.Cluster.(faults.Restarter)
	if !ok {
		return fmt.Errorf("%s needs a cluster whose control plane brakebench runs (the lab)", fault)
	}
	cp := env.Config.Faults.ControlPlane
	f := &faults.ControlPlaneFlags{Restarter: r, Journal: env.Journal}
	switch fault {
	case "scheduler-qps":
		f.Component, f.Flags = "kube-scheduler", []string{fmt.Sprintf("--kube-api-qps=%d", cp.SchedulerQPS), fmt.Sprintf("--kube-api-burst=%d", cp.SchedulerBurst)}
	case "apiserver-inflight":
		f.Component, f.Flags = "kube-apiserver", []string{fmt.Sprintf("--max-requests-inflight=%d", cp.MaxRequestsInflight), fmt.Sprintf("--max-mutating-requests-inflight=%d", cp.MaxMutatingRequestsInflight)}
	}
	revert, err := f.Arm(ctx)
	reverts.Push(fault, func(ctx context.Context) error {
		if revert == nil {
			return nil
		}
		err := revert(ctx)
		log.add(fault, "reverted", f.Component+" restarted with its original flags")
		return err
	})
	if err != nil {
		log.add(fault, "error", err.Error())
		return err
	}
	log.add(fault, "armed", fmt.Sprintf("%s restarted with %v", f.Component, f.Flags))
	return nil
}

// nodeWatch follows GPU nodes during a gpu cell: when each became unavailable, how many were
// unavailable at once, and whether any was deleted.
type nodeWatch struct {
	mu          sync.Mutex
	gpuNodes    map[string]bool
	unavailable map[string]time.Time
	maxFrac     float64
	deleted     int
	stop        chan struct{}
}

func watchNodes(ctx context.Context, c *kube.Clients) (*nodeWatch, error) {
	w := &nodeWatch{gpuNodes: map[string]bool{}, unavailable: map[string]time.Time{}, stop: make(chan struct{})}
	f := informers.NewSharedInformerFactory(c.Typed, 0)
	inf := f.Core().V1().Nodes().Informer()
	update := func(obj any) {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if q, ok := n.Status.Capacity[faults.GPUResource]; ok && q.Value() > 0 {
			w.gpuNodes[n.Name] = true
		}
		if faults.Unavailable(n) {
			if _, seen := w.unavailable[n.Name]; !seen {
				w.unavailable[n.Name] = time.Now()
			}
		} else {
			delete(w.unavailable, n.Name)
		}
		if len(w.gpuNodes) > 0 {
			frac := float64(len(w.unavailable)) / float64(len(w.gpuNodes))
			if frac > w.maxFrac {
				w.maxFrac = frac
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: update, UpdateFunc: func(_, n any) { update(n) },
		DeleteFunc: func(any) { w.mu.Lock(); w.deleted++; w.mu.Unlock() },
	}); err != nil {
		return nil, err
	}
	f.Start(w.stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		close(w.stop)
		return nil, fmt.Errorf("node informer did not sync")
	}
	return w, nil
}

func (w *nodeWatch) close() { close(w.stop) }

func (w *nodeWatch) gpuNodeNames() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for n := range w.gpuNodes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (w *nodeWatch) unavailableSince(node string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.unavailable[node]
	return t, ok
}

// pickGPUNodes chooses the GPU nodes holding the most warm-pool pods (so the fault bites), ties
// by name: deterministic for a given cluster state.
func pickGPUNodes(gpuNodes []string, snap recorder.Snapshot, n int) []string {
	count := map[string]int{}
	for _, p := range snap.Pods {
		if sb, ok := snap.Sandboxes[p.Name]; ok && sb.FromPool && p.Deleted.IsZero() {
			count[p.Node]++
		}
	}
	nodes := append([]string(nil), gpuNodes...)
	sort.SliceStable(nodes, func(i, j int) bool {
		if count[nodes[i]] != count[nodes[j]] {
			return count[nodes[i]] > count[nodes[j]]
		}
		return nodes[i] < nodes[j]
	})
	if n > len(nodes) {
		n = len(nodes)
	}
	return nodes[:n]
}

// gpuCell arms the GPU fault at T0+armAfter (claims are then in flight) and reports what it did.
type gpuCell struct {
	env     *Env
	rec     *recorder.Recorder
	watch   *nodeWatch
	log     *faultLog
	reverts *faults.Stack
	labels  map[string]string

	mu     sync.Mutex
	nodes  []string
	armed  time.Time
	reason string
	xid    *float64
	err    error
	done   chan struct{}
}

func (g *gpuCell) armAt(ctx context.Context, at time.Time) {
	g.done = make(chan struct{})
	go func() {
		defer close(g.done)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(at)):
		}
		cfg := g.env.Config.Faults.GPU
		gpuNodes := g.watch.gpuNodeNames()
		if len(gpuNodes) == 0 {
			g.fail(fmt.Errorf("no GPU nodes (nvidia.com/gpu capacity) in the cluster: on the lab set lab.nodes.gpus"))
			return
		}
		nodes := pickGPUNodes(gpuNodes, g.rec.Snapshot(), cfg.Nodes)
		f := &faults.GPUFault{Client: g.env.Clients.Typed, Journal: g.env.Journal, Labels: g.labels, Nodes: nodes, Kind: cfg.Kind, XID: cfg.XID,
			Escalate: cfg.Escalate, Exporter: g.env.DCGM}
		g.mu.Lock()
		g.nodes, g.armed = nodes, time.Now()
		g.mu.Unlock()
		revert, err := f.Arm(ctx)
		g.reverts.Push("gpu fault", func(ctx context.Context) error {
			err := revert(ctx)
			g.log.add("gpu", "reverted", fmt.Sprint(nodes))
			return err
		})
		if err != nil {
			g.fail(err)
			return
		}
		sym, _ := faults.SymptomOf(f.Kind, f.XID, 8)
		detail := fmt.Sprintf("%s on %v: %s (escalation %s)", f.Kind, nodes, sym.Reason, f.Escalate)
		if g.env.DCGM != nil {
			detail += "; dcgm metrics at " + g.env.DCGM.URL()
			if ss, err := scrape.FetchAll(ctx, g.env.DCGM.URL()); err == nil {
				v := scrape.Sum(ss, "DCGM_FI_DEV_XID_ERRORS", map[string]string{"Hostname": nodes[0], "gpu": "0"})
				g.mu.Lock()
				g.xid = &v
				g.mu.Unlock()
			}
		}
		g.mu.Lock()
		g.reason = sym.Reason
		g.mu.Unlock()
		g.log.add("gpu", "armed", detail)
	}()
}

func (g *gpuCell) fail(err error) {
	g.mu.Lock()
	g.err = err
	g.mu.Unlock()
	g.log.add("gpu", "error", err.Error())
}

// wait blocks until the fault was armed (or failed) and, with an escalation, until the faulted
// nodes are seen unavailable (recorded as "effective").
func (g *gpuCell) wait(ctx context.Context, timeout time.Duration) error {
	select {
	case <-g.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	g.mu.Lock()
	err, nodes := g.err, g.nodes
	g.mu.Unlock()
	if err != nil || g.env.Config.Faults.GPU.Escalate == "none" {
		return err
	}
	deadline := time.Now().Add(timeout)
	for _, n := range nodes {
		for {
			if t, ok := g.watch.unavailableSince(n); ok {
				g.log.add("gpu", "effective", fmt.Sprintf("%s unavailable (seen %s)", n, t.Format(time.RFC3339Nano)))
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("node %s never became unavailable", n)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if g.env.Config.Faults.GPU.Escalate != "taint" {
		return nil
	}
	// Taint eviction: wait until the pods on the faulted nodes are being deleted.
	faulted := map[string]bool{}
	for _, n := range nodes {
		faulted[n] = true
	}
	left := func() int {
		n := 0
		for _, p := range g.rec.Snapshot().Pods {
			if faulted[p.Node] && p.Deleted.IsZero() {
				n++
			}
		}
		return n
	}
	if g.rec.WaitFor(ctx, timeout, func() bool { return left() == 0 }) {
		g.log.add("gpu", "effective", fmt.Sprintf("every pod on %v evicted", nodes))
	} else {
		g.log.add("gpu", "effective", fmt.Sprintf("%d pod(s) still on %v after %s", left(), nodes, timeout))
	}
	return nil
}

// stats measures what the GPU fault did in this cell.
func (g *gpuCell) stats(c *results.Cell, snap recorder.Snapshot) *results.FaultStats {
	g.mu.Lock()
	nodes, armed := g.nodes, g.armed
	fs := &results.FaultStats{Nodes: nodes, Condition: g.reason, DCGMXID: g.xid}
	g.mu.Unlock()
	faulted := map[string]bool{}
	first := time.Time{}
	for _, n := range nodes {
		faulted[n] = true
		if t, ok := g.watch.unavailableSince(n); ok && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	if !first.IsZero() && !armed.IsZero() {
		v := first.Sub(armed).Seconds()
		fs.TimeToUnavailableS = &v
	}
	for _, p := range snap.Pods {
		if sb, ok := snap.Sandboxes[p.Name]; ok && sb.FromPool && faulted[p.Node] && !p.Deleted.IsZero() && p.Deleted.After(armed) {
			fs.SandboxesLost++
		}
	}
	if !armed.IsZero() {
		i := int(armed.Unix() - c.T0.Unix())
		if i >= 0 && i < len(c.Timeline.RefillCreates) {
			fs.RefillCreate5sAfter = stats.Ceiling(c.Timeline.RefillCreates[i:], 5)
		}
	}
	g.watch.mu.Lock()
	fs.UnavailableMaxFrac, fs.NodesDeleted = g.watch.maxFrac, g.watch.deleted
	g.watch.mu.Unlock()
	limit := g.env.Config.Faults.GPU.MaxUnavailableFraction
	fs.Invariants = []results.Invariant{
		{Name: fmt.Sprintf("at most %.0f%% of GPU nodes unavailable at once", limit*100), Held: fs.UnavailableMaxFrac <= limit+1e-9,
			Detail: fmt.Sprintf("most unavailable at once: %.0f%%", fs.UnavailableMaxFrac*100)},
		{Name: "no GPU node removed before its toleration window (10m, the AWS repair policy for AcceleratedHardwareReady)", Held: fs.NodesDeleted == 0,
			Detail: fmt.Sprintf("%d node(s) deleted during the cell", fs.NodesDeleted)},
	}
	return fs
}

// apfStats reads the throttled level's wait and rejections from the apiserver deltas.
func apfStats(level string, m map[string]results.Scrape) *results.FaultStats {
	fs := &results.FaultStats{APFLevel: level}
	api, ok := m["kube-apiserver"]
	if !ok || api.Error != "" {
		return fs
	}
	h := scrape.Merge(api.Series, "apiserver_flowcontrol_request_wait_duration_seconds", map[string]string{"priority_level": level})
	if h.Count > 0 {
		v := scrape.HistogramQuantile(h, 0.99)
		fs.APFWaitP99S = &v
	}
	fs.APFRejected = scrape.Sum(api.Series, "apiserver_flowcontrol_rejected_requests_total", map[string]string{"priority_level": level})
	return fs
}
