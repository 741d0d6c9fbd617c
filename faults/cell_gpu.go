package faults

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/brakebench/brakebench/internal/catalog"
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/recorder"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/scrape"
	"github.com/brakebench/brakebench/internal/scrape/fetch"
	"github.com/brakebench/brakebench/internal/stats"
)

// gpuFaultCell fails GPU nodes (DCGM-style XID/ECC/NVLink symptoms on the node and in a local
// dcgm-exporter) armAfter into the burst, and checks repair-safety invariants: how many GPU
// nodes were unavailable at once, and that none was removed.
type gpuFaultCell struct{}

func init() { registerCell(gpuFaultCell{}) }

func (gpuFaultCell) Name() string { return "gpu" }

// gpuSettings are the keys faults.gpu.*; their defaults are configs/faults/gpu.yaml.
type gpuSettings struct {
	GPU gpuKeys `mapstructure:"gpu"`
}

type gpuKeys struct {
	Nodes    int           `mapstructure:"nodes"`    // how many GPU nodes to fault
	Kind     string        `mapstructure:"kind"`     // one of FaultKinds: xid | ecc | nvlink | device-count | kernel | networking | runtime | storage
	XID      int           `mapstructure:"xid"`      // with kind xid
	Escalate string        `mapstructure:"escalate"` // none | taint | notready
	ArmAfter time.Duration `mapstructure:"armAfter"` // after the burst starts
	// Repair-safety invariants evaluated from what the cluster did.
	MaxUnavailableFraction float64 `mapstructure:"maxUnavailableFraction"`
}

func (gpuFaultCell) Settings() (string, any) { return "gpu", &gpuSettings{} }

func (st gpuSettings) checks() []check {
	g := st.GPU
	return []check{
		{bad: outside(g.Nodes, 1, maxObjects), key: "faults.gpu.nodes", want: "1 to 10000", got: g.Nodes},
		{bad: !oneOf(g.Kind, FaultKinds...), key: "faults.gpu.kind", want: "one of " + strings.Join(FaultKinds, ", "), got: g.Kind},
		{bad: g.Kind == "xid" && g.XID < 1, key: "faults.gpu.xid", want: "an XID code like 79", got: g.XID, also: []string{"faults.gpu.kind"}},
		{bad: !oneOf(g.Escalate, "none", "taint", "notready"), key: "faults.gpu.escalate", want: "one of none, taint, notready", got: g.Escalate},
		{bad: outside(g.ArmAfter, 0, maxDuration), key: "faults.gpu.armAfter", want: "a duration from 0s to 24h", got: g.ArmAfter},
		{bad: g.MaxUnavailableFraction < 0 || g.MaxUnavailableFraction > 1, key: "faults.gpu.maxUnavailableFraction", want: "a fraction between 0 and 1", got: g.MaxUnavailableFraction},
	}
}

func (gpuFaultCell) Change(cfg *config.Resolved) string {
	st, err := settingsOf[gpuSettings](cfg)
	if err != nil {
		return "gpu cells: " + err.Error()
	}
	g := st.GPU
	return fmt.Sprintf("gpu cells: %d GPU node(s) get AcceleratedHardwareReady=False (%s) %s after the burst starts, escalation %s; every node is restored exactly after the cell",
		g.Nodes, g.Kind, g.ArmAfter, g.Escalate)
}

func (gpuFaultCell) NotApplicable(*config.Resolved) string { return "" }

// Precheck: the settings, and on the lab the GPU capacity is configuration, so a lab without
// GPUs is bad input.
func (gpuFaultCell) Precheck(cfg *config.Resolved) error {
	if _, err := settingsOf[gpuSettings](cfg); err != nil {
		return err
	}
	if cfg.Cluster.Provider == "lab" && cfg.Lab.Nodes.GPUs < 1 {
		return &config.Error{Source: cfg.Source("lab.nodes.gpus"), Key: "lab.nodes.gpus",
			Msg: "expected GPU capacity on the lab's nodes (e.g. --set lab.nodes.gpus=8; a running lab must be brought down first) because matrix.faults has gpu"}
	}
	return nil
}

// Prepare serves dcgm-exporter metrics for the cluster's GPU nodes while the run lasts.
func (gpuFaultCell) Prepare(ctx context.Context, r *Run) error {
	nodes, err := r.Clients.Typed.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	gpus := map[string]int{}
	for _, n := range nodes.Items {
		if q, ok := n.Status.Capacity[GPUResource]; ok && q.Value() > 0 {
			gpus[n.Name] = int(q.Value())
		}
	}
	if len(gpus) == 0 {
		return fmt.Errorf("gpu cells need GPU nodes (nvidia.com/gpu capacity); on the lab: brakebench lab down, then run again with --set lab.nodes.gpus=8")
	}
	r.DCGM = NewDCGMExporter(gpus)
	if err := r.DCGM.Start(); err != nil {
		return err
	}
	r.Printf("dcgm-exporter metrics for %d GPU nodes: %s", len(gpus), r.DCGM.URL())
	r.Reverts.Push("dcgm exporter", r.DCGM.Stop)
	return nil
}

func (gpuFaultCell) Arm(ctx context.Context, c *Cell) (Armed, error) {
	st, err := settingsOf[gpuSettings](c.Config)
	if err != nil {
		return nil, err
	}
	w, err := watchNodes(ctx, c.Clients)
	if err != nil {
		return nil, err
	}
	c.Reverts.Push("gpu node watch", func(context.Context) error { w.close(); return nil })
	return &gpuCell{c: c, cfg: st.GPU, watch: w}, nil
}

func (g *gpuCell) Fired(ctx context.Context, t0 time.Time) {
	g.armAt(ctx, t0.Add(g.cfg.ArmAfter))
}

func (g *gpuCell) Settle(ctx context.Context, timeout time.Duration) error {
	if g.done == nil {
		return nil
	}
	return g.wait(ctx, timeout)
}

func (g *gpuCell) Stats(c *results.Cell, snap recorder.Snapshot) *results.FaultStats {
	return g.stats(c, snap)
}

func (gpuFaultCell) Describe(fs *results.FaultStats) [][2]string {
	xid := "-"
	if fs.DCGMXID != nil {
		xid = fmt.Sprintf("%.0f", *fs.DCGMXID)
	}
	return [][2]string{
		{"faulted nodes", fmt.Sprint(fs.Nodes)},
		{"condition reason", fs.Condition},
		{"fault to node unavailable", results.FormatSecs(fs.TimeToUnavailableS)},
		{"warm sandboxes lost", fmt.Sprint(fs.SandboxesLost)},
		{"refill create ceiling from the fault on (5 s)", fmt.Sprintf("%.1f/s", fs.RefillCreate5sAfter)},
		{"GPU nodes unavailable at once (most)", fmt.Sprintf("%.0f%%", fs.UnavailableMaxFrac*100)},
		{"GPU nodes deleted", fmt.Sprint(fs.NodesDeleted)},
		{"DCGM_FI_DEV_XID_ERRORS after arming", xid},
	}
}

// Metrics: the repair-safety invariants and the numbers behind them, gateable per repetition.
func (gpuFaultCell) Metrics() []catalog.Metric {
	gpu := func(f func(fs *results.FaultStats) float64) func(c *results.Cell) float64 {
		return func(c *results.Cell) float64 {
			if c.Stats.Fault == nil || len(c.Stats.Fault.Invariants) == 0 {
				return results.OrNaN(nil)
			}
			return f(c.Stats.Fault)
		}
	}
	return []catalog.Metric{
		{Key: "fault.invariants_violated", Unit: "checks", Value: gpu(func(fs *results.FaultStats) float64 {
			n := 0
			for _, inv := range fs.Invariants {
				if !inv.Held {
					n++
				}
			}
			return float64(n)
		})},
		{Key: "fault.unavailable_max_fraction", Unit: "ratio", Value: gpu(func(fs *results.FaultStats) float64 { return fs.UnavailableMaxFrac })},
		{Key: "fault.nodes_deleted", Unit: "nodes", Value: gpu(func(fs *results.FaultStats) float64 { return float64(fs.NodesDeleted) })},
		{Key: "fault.sandboxes_lost", Unit: "sandboxes", Value: gpu(func(fs *results.FaultStats) float64 { return float64(fs.SandboxesLost) })},
		{Key: "fault.time_to_unavailable_s", Unit: "s", Value: gpu(func(fs *results.FaultStats) float64 { return results.OrNaN(fs.TimeToUnavailableS) })},
	}
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
		if q, ok := n.Status.Capacity[GPUResource]; ok && q.Value() > 0 {
			w.gpuNodes[n.Name] = true
		}
		if Unavailable(n) {
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
	return mostLoaded(gpuNodes, count, n)
}

// mostLoaded are the n nodes with the highest count (so a fault bites), ties by name:
// deterministic for a given cluster state.
func mostLoaded(nodes []string, count map[string]int, n int) []string {
	nodes = append([]string(nil), nodes...)
	sort.SliceStable(nodes, func(i, j int) bool {
		if count[nodes[i]] != count[nodes[j]] {
			return count[nodes[i]] > count[nodes[j]]
		}
		return nodes[i] < nodes[j]
	})
	return nodes[:min(n, len(nodes))]
}

// gpuCell arms the GPU fault at T0+armAfter (claims are then in flight) and reports what it did.
type gpuCell struct {
	c     *Cell
	cfg   gpuKeys // the cell's settings, decoded when it was armed
	watch *nodeWatch

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
		cfg := g.cfg
		gpuNodes := g.watch.gpuNodeNames()
		if len(gpuNodes) == 0 {
			g.fail(fmt.Errorf("no GPU nodes (nvidia.com/gpu capacity) in the cluster: on the lab set lab.nodes.gpus"))
			return
		}
		nodes := pickGPUNodes(gpuNodes, g.c.Rec.Snapshot(), cfg.Nodes)
		f := &GPUFault{Client: g.c.Clients.Typed, Journal: g.c.Journal, Labels: g.c.Labels, Nodes: nodes, Kind: cfg.Kind, XID: cfg.XID,
			Escalate: cfg.Escalate, Exporter: g.c.DCGM}
		g.mu.Lock()
		g.nodes, g.armed = nodes, time.Now()
		g.mu.Unlock()
		revert, err := f.Arm(ctx)
		g.c.Reverts.Push("gpu fault", func(ctx context.Context) error {
			err := revert(ctx)
			g.c.Timeline.Add("gpu", "reverted", fmt.Sprint(nodes))
			return err
		})
		if err != nil {
			g.fail(err)
			return
		}
		sym, _ := SymptomOf(f.Kind, f.XID, 8)
		detail := fmt.Sprintf("%s on %v: %s (escalation %s)", f.Kind, nodes, sym.Reason, f.Escalate)
		if g.c.DCGM != nil {
			detail += "; dcgm metrics at " + g.c.DCGM.URL()
			if ss, err := fetch.All(ctx, g.c.DCGM.URL()); err == nil {
				v := scrape.Sum(ss, "DCGM_FI_DEV_XID_ERRORS", map[string]string{"Hostname": nodes[0], "gpu": "0"})
				g.mu.Lock()
				g.xid = &v
				g.mu.Unlock()
			}
		}
		g.mu.Lock()
		g.reason = sym.Reason
		g.mu.Unlock()
		g.c.Timeline.Add("gpu", "armed", detail)
	}()
}

func (g *gpuCell) fail(err error) {
	g.mu.Lock()
	g.err = err
	g.mu.Unlock()
	g.c.Timeline.Add("gpu", "error", err.Error())
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
	if err != nil || g.cfg.Escalate == "none" {
		return err
	}
	deadline := time.Now().Add(timeout)
	for _, n := range nodes {
		for {
			if t, ok := g.watch.unavailableSince(n); ok {
				g.c.Timeline.Add("gpu", "effective", fmt.Sprintf("%s unavailable (seen %s)", n, t.Format(time.RFC3339Nano)))
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("node %s never became unavailable", n)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if g.cfg.Escalate != "taint" {
		return nil
	}
	// Taint eviction: wait until the pods on the faulted nodes are being deleted.
	faulted := map[string]bool{}
	for _, n := range nodes {
		faulted[n] = true
	}
	left := func() int {
		n := 0
		for _, p := range g.c.Rec.Snapshot().Pods {
			if faulted[p.Node] && p.Deleted.IsZero() {
				n++
			}
		}
		return n
	}
	if g.c.Rec.WaitFor(ctx, timeout, func() bool { return left() == 0 }) {
		g.c.Timeline.Add("gpu", "effective", fmt.Sprintf("every pod on %v evicted", nodes))
	} else {
		g.c.Timeline.Add("gpu", "effective", fmt.Sprintf("%d pod(s) still on %v after %s", left(), nodes, timeout))
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
	limit := g.cfg.MaxUnavailableFraction
	fs.Invariants = []results.Invariant{
		{Name: fmt.Sprintf("at most %.0f%% of GPU nodes unavailable at once", limit*100), Held: fs.UnavailableMaxFrac <= limit+1e-9,
			Detail: fmt.Sprintf("most unavailable at once: %.0f%%", fs.UnavailableMaxFrac*100)},
		{Name: "no GPU node removed before its toleration window (10m, the AWS repair policy for AcceleratedHardwareReady)", Held: fs.NodesDeleted == 0,
			Detail: fmt.Sprintf("%d node(s) deleted during the cell", fs.NodesDeleted)},
	}
	return fs
}
