package faults

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/brakebench/brakebench/internal/catalog"
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/karpool"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/nodechain"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/recorder"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/scrape"
	"github.com/brakebench/brakebench/internal/scrape/fetch"
	"github.com/brakebench/brakebench/internal/sut/karpenter"
)

// nodeRepairCell puts the warm pool on a Karpenter NodePool of GPU nodes and, armAfter into the
// burst, gives some of its nodes an agent condition (AcceleratedHardwareReady=False for an XID,
// as EKS's node monitoring agent does), with Karpenter's NodeRepair on. node-repair faults as many
// nodes as Karpenter's breaker still repairs (20% of the NodePool, rounded up): Karpenter must
// replace them, no earlier than the toleration. node-repair-blocked faults one more: the breaker
// must hold (NodeRepairBlocked) and nothing is replaced. The cell measures the chain fault ->
// NodeClaim deleted -> new node Ready -> pool refilled, and judges the repair-safety rules.
type nodeRepairCell struct {
	name    string
	blocked bool
}

func init() {
	registerCell(nodeRepairCell{name: "node-repair"})
	registerCell(nodeRepairCell{name: "node-repair-blocked", blocked: true})
}

// Names of what the node-repair cells create: one NodePool per run (a lab runs one run at a
// time), tainted so that only the warm pool's pods land on it.
const (
	repairPool  = "bb-node-repair"
	repairTaint = "brakebench.io/node-repair"
	// karpenterRepairs is Karpenter's counter of nodes it repaired (v1.14: the node health
	// controller).
	karpenterRepairs = "karpenter_nodeclaims_unhealthy_disrupted_total"
)

func (f nodeRepairCell) Name() string { return f.name }

// nodeRepairSettings are the keys faults.nodeRepair.*, shared by both node-repair fault types;
// their defaults are configs/faults/node-repair.yaml.
type nodeRepairSettings struct {
	NodeRepair nodeRepairKeys `mapstructure:"nodeRepair"`
}

type nodeRepairKeys struct {
	// GPUsPerSandbox is each sandbox pod's nvidia.com/gpu request: with the lab's 8-GPU
	// instance type, 8/GPUsPerSandbox sandboxes share a node, so workload.pool sizes the NodePool.
	GPUsPerSandbox int `mapstructure:"gpusPerSandbox"`
	// TolerationScale multiplies EKS's published repair tolerations (10 min for
	// AcceleratedHardwareReady, 30 min for the others) for lab runs.
	TolerationScale   float64       `mapstructure:"tolerationScale"`
	Kind              string        `mapstructure:"kind"`
	XID               int           `mapstructure:"xid"`
	ArmAfter          time.Duration `mapstructure:"armAfter"`
	RegistrationDelay time.Duration `mapstructure:"registrationDelay"` // KWOKNodeClass nodeRegistrationDelay: a simulated instance launch
	// SettleTimeout bounds the wait for Karpenter's answer (the replacement, or NodeRepairBlocked).
	SettleTimeout time.Duration `mapstructure:"settleTimeout"`
}

func (nodeRepairCell) Settings() (string, any) { return "node-repair", &nodeRepairSettings{} }

func (st nodeRepairSettings) checks() []check {
	r := st.NodeRepair
	return []check{
		{bad: outside(r.GPUsPerSandbox, 1, 8), key: "faults.nodeRepair.gpusPerSandbox", want: "1 to 8 (the lab's GPU instance type has 8)", got: r.GPUsPerSandbox},
		{bad: r.TolerationScale <= 0 || r.TolerationScale > 1, key: "faults.nodeRepair.tolerationScale", want: "a factor in (0, 1]", got: r.TolerationScale},
		{bad: !oneOf(r.Kind, FaultKinds...) || r.Kind == "storage", key: "faults.nodeRepair.kind", want: "one of " + strings.Join(repairKinds(), ", ") + " (storage is warning-only: nothing to repair)", got: r.Kind},
		{bad: r.Kind == "xid" && r.XID < 1, key: "faults.nodeRepair.xid", want: "an XID code like 79", got: r.XID, also: []string{"faults.nodeRepair.kind"}},
		{bad: outside(r.ArmAfter, 0, maxDuration), key: "faults.nodeRepair.armAfter", want: "a duration from 0s to 24h", got: r.ArmAfter},
		{bad: outside(r.RegistrationDelay, 0, maxDuration), key: "faults.nodeRepair.registrationDelay", want: "a duration from 0s to 24h", got: r.RegistrationDelay},
		{bad: outside(r.SettleTimeout, time.Second, maxDuration), key: "faults.nodeRepair.settleTimeout", want: "a duration from 1s to 24h", got: r.SettleTimeout},
	}
}

func repairKinds() []string {
	var out []string
	for _, k := range FaultKinds {
		if k != "storage" {
			out = append(out, k)
		}
	}
	return out
}

// Precheck: the settings.
func (nodeRepairCell) Precheck(cfg *config.Resolved) error {
	_, err := settingsOf[nodeRepairSettings](cfg)
	return err
}

func (f nodeRepairCell) Change(cfg *config.Resolved) string {
	st, err := settingsOf[nodeRepairSettings](cfg)
	if err != nil {
		return f.name + " cells: " + err.Error()
	}
	r := st.NodeRepair
	which := "as many nodes as Karpenter's breaker repairs (20% of the NodePool, rounded up)"
	if f.blocked {
		which = "one node more than Karpenter's breaker repairs (20% of the NodePool, rounded up, plus one)"
	}
	return fmt.Sprintf("%s cells (lab): the warm pool on a Karpenter NodePool of 8-GPU nodes (%d GPU(s) a sandbox), Karpenter with NodeRepair and EKS's repair tolerations x%g; %s get the %s condition %s after the burst starts; Karpenter, its NodePool, NodeClaims and nodes are removed after the run",
		f.name, r.GPUsPerSandbox, r.TolerationScale, which, r.Kind, r.ArmAfter)
}

func (f nodeRepairCell) NotApplicable(cfg *config.Resolved) string {
	if cfg.Cluster.Provider != "lab" {
		return f.name + " needs Karpenter with brakebench's repair policies, which only the lab runs"
	}
	return ""
}

// PlacePod puts the pool's pods on the repair NodePool: its label, its taint tolerated, and a
// GPU request that makes Karpenter size the pool.
func (nodeRepairCell) PlacePod(cfg *config.Resolved, spec map[string]any) error {
	st, err := settingsOf[nodeRepairSettings](cfg)
	if err != nil {
		return err
	}
	return karpenter.PlacePod(spec, repairPool, repairTaint, st.NodeRepair.GPUsPerSandbox)
}

// Prepare starts the cluster's Karpenter with NodeRepair (journaled, so `cleanup` can stop it
// after a crash) and creates the repair NodePool; both node-repair fault types share them.
func (nodeRepairCell) Prepare(ctx context.Context, r *Run) error {
	if r.Karpenter != nil {
		return nil // prepared by the other node-repair fault type
	}
	st, err := settingsOf[nodeRepairSettings](r.Config)
	if err != nil {
		return err
	}
	// The CapacityBuffer gate too: the capacity-buffer brake's cells need it, and without a
	// CapacityBuffer object it changes nothing. Empty nodes go after 5 s: the nodes of one cell
	// (its namespace deleted) are gone before the next cell's pool fills, so every cell starts
	// from a NodePool sized by its own pool.
	r.Printf("starting Karpenter with NodeRepair and CapacityBuffer (repair tolerations x%g)", st.NodeRepair.TolerationScale)
	labels := map[string]string{kube.ManagedByKey: kube.ManagedByValue}
	if r.RunID != "" {
		labels[kube.RunIDKey] = r.RunID
	}
	pool := karpenter.PoolSpec{Name: repairPool, RegistrationDelay: st.NodeRepair.RegistrationDelay, Taint: repairTaint, ConsolidateAfter: 5 * time.Second}
	k, err := karpool.Start(ctx, r.Cluster, r.Clients, r.Journal, r.Reverts,
		provider.KarpenterOptions{NodeRepair: true, CapacityBuffer: true, TolerationScale: st.NodeRepair.TolerationScale}, pool, labels)
	if err != nil {
		return err
	}
	r.Karpenter = k
	r.Printf("Karpenter %s: NodePool %s (nodes tainted %s; the node-repair cells' pool pods tolerate it)", k.Version, repairPool, repairTaint)
	return nil
}

func (f nodeRepairCell) Arm(ctx context.Context, c *Cell) (Armed, error) {
	st, err := settingsOf[nodeRepairSettings](c.Config)
	if err != nil {
		return nil, err
	}
	if c.Karpenter == nil {
		return nil, fmt.Errorf("no Karpenter was prepared for this run")
	}
	sym, err := SymptomOf(st.NodeRepair.Kind, st.NodeRepair.XID, 8)
	if err != nil {
		return nil, err
	}
	tol, ok := karpenter.Toleration(c.Karpenter.Policies, string(sym.Condition), "False")
	if !ok {
		return nil, fmt.Errorf("no repair policy of Karpenter's for %s=False", sym.Condition)
	}
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	tr, err := nodechain.Start(tctx, c.Clients, c.Namespace, repairPool)
	if err != nil {
		cancel()
		return nil, err
	}
	c.Reverts.Push("node-repair watches", func(context.Context) error { cancel(); return nil })
	r := &repairCell{f: f, c: c, cfg: st.NodeRepair, sym: sym, tol: tol, tr: tr}
	r.counter0 = r.counter(ctx)
	return r, nil
}

// repairCell is one armed node-repair cell.
type repairCell struct {
	f   nodeRepairCell
	c   *Cell
	cfg nodeRepairKeys
	sym Symptom
	tol time.Duration
	tr  *nodechain.Tracker

	counter0 *float64

	mu        sync.Mutex
	armed     time.Time
	since     time.Time // the faulted nodes' earliest condition lastTransitionTime (zero: unread)
	nodes     []string
	poolNodes int
	threshold int
	// thresholdFor is the node count threshold is Karpenter's allowance for.
	thresholdFor int
	err          error
	done         chan struct{}
	counterEnd   *float64
}

// counter reads Karpenter's repair counter for the pool (nil when it cannot be read).
func (r *repairCell) counter(ctx context.Context) *float64 {
	if r.c.Karpenter.MetricsURL == "" {
		return nil
	}
	ss, err := fetch.All(ctx, r.c.Karpenter.MetricsURL)
	if err != nil {
		return nil
	}
	v := scrape.Sum(ss, karpenterRepairs, map[string]string{"nodepool": repairPool})
	return &v
}

func (r *repairCell) Fired(ctx context.Context, t0 time.Time) {
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(t0.Add(r.cfg.ArmAfter))):
		}
		// Karpenter's breaker counts the NodePool's Node objects (Ready or not) when it decides,
		// a toleration after the fault, and a burst's refill may still be adding nodes then. So
		// node-repair faults the breaker's allowance for the nodes there are now (the pool only
		// grows during a burst, so the allowance only grows), and node-repair-blocked one more
		// than the allowance for the most nodes the pool and its claims can need.
		tl := r.tr.Snapshot()
		live := tl.LiveNodes()
		n := poolNodesAt(tl, time.Now())
		forNodes := n
		if r.f.blocked {
			wl, per := r.c.Config.Workload, 8/r.cfg.GPUsPerSandbox
			forNodes = max(n, (wl.Pool+wl.Claims+per-1)/per)
		}
		threshold := karpenter.RepairThreshold(forNodes)
		k := threshold
		if r.f.blocked {
			k++
		}
		if len(live) == 0 || k > len(live) {
			r.fail(fmt.Errorf("the NodePool has %d Ready node(s): %s needs %d faulted; raise workload.pool (each node holds %d sandboxes)", len(live), r.f.name, k, 8/r.cfg.GPUsPerSandbox))
			return
		}
		nodes := pickRepairNodes(live, tl, k)
		f := &GPUFault{Client: r.c.Clients.Typed, Journal: r.c.Journal, Labels: r.c.Labels, Nodes: nodes, Kind: r.cfg.Kind, XID: r.cfg.XID, Escalate: "none"}
		r.mu.Lock()
		r.armed, r.nodes, r.poolNodes, r.threshold, r.thresholdFor = time.Now(), nodes, n, threshold, forNodes
		r.mu.Unlock()
		revert, err := f.Arm(ctx)
		r.c.Reverts.Push(r.f.name+" fault", func(ctx context.Context) error {
			err := revert(ctx) // a node Karpenter replaced is gone: nothing to restore on it
			r.c.Timeline.Add(r.f.name, "reverted", fmt.Sprint(nodes))
			return err
		})
		if err != nil {
			r.fail(err)
			return
		}
		// The condition's lastTransitionTime as the API server stores it (one-second
		// resolution): what Karpenter adds the toleration to.
		var since time.Time
		for _, nd := range nodes {
			if t, ok := conditionSince(ctx, r.c, nd, r.sym.Condition); ok && (since.IsZero() || t.Before(since)) {
				since = t
			}
		}
		r.mu.Lock()
		r.since = since
		r.mu.Unlock()
		r.c.Timeline.Add(r.f.name, "armed", fmt.Sprintf("%s=False (%s) on %d of %d NodePool nodes %v (Karpenter repairs up to %d; toleration %s)",
			r.sym.Condition, r.sym.Reason, k, n, nodes, threshold, r.tol))
	}()
}

func (r *repairCell) fail(err error) {
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
	r.c.Timeline.Add(r.f.name, "error", err.Error())
}

// Settle waits for Karpenter's answer: below the breaker, every faulted node's NodeClaim deleted
// and as many Ready nodes as before; above it, a NodeRepairBlocked event, then twice the
// toleration more (at least 10 s) in which nothing may be replaced. Karpenter not answering
// within settleTimeout is not an error of the cell: the invariants say what did not happen.
func (r *repairCell) Settle(ctx context.Context, _ time.Duration) error {
	if r.done == nil {
		return nil
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	r.mu.Lock()
	err, nodes, n, armed := r.err, r.nodes, r.poolNodes, r.armed
	r.mu.Unlock()
	if err != nil {
		return err
	}
	defer func() {
		v := r.counter(ctx)
		r.mu.Lock()
		r.counterEnd = v
		r.mu.Unlock()
	}()
	if !r.f.blocked {
		tl, err := r.tr.WaitFor(ctx, "faulted nodes replaced and their pods running elsewhere", r.cfg.SettleTimeout, func(tl nodechain.Timeline) bool {
			return repairedCount(tl, nodes, armed) == len(nodes) && nodesGone(tl, nodes) && allPodsReady(tl)
		})
		if err == nil {
			r.c.Timeline.Add(r.f.name, "effective", fmt.Sprintf("%v replaced and gone; every pod Ready again, %d Ready nodes (%d before)", nodes, len(tl.LiveNodes()), n))
		} else {
			r.c.Timeline.Add(r.f.name, "effective", "not replaced: "+err.Error())
		}
		return nil
	}
	tl, err := r.tr.WaitFor(ctx, "NodeRepairBlocked", r.cfg.SettleTimeout, func(tl nodechain.Timeline) bool { return firstBlocked(tl, armed) != nil })
	if err != nil {
		r.c.Timeline.Add(r.f.name, "effective", "no NodeRepairBlocked: "+err.Error())
		return nil
	}
	b := firstBlocked(tl, armed)
	r.c.Timeline.Add(r.f.name, "effective", fmt.Sprintf("NodeRepairBlocked on %s: %s", b.Node, b.Message))
	hold := max(2*r.tol, 10*time.Second)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(armed.Add(r.tol + hold))):
	}
	return nil
}

func (r *repairCell) Stats(_ *results.Cell, snap recorder.Snapshot) *results.FaultStats {
	return r.judge(r.tr.Snapshot(), snap)
}

// judge measures the repair chain in tl and evaluates the cell's invariants.
func (r *repairCell) judge(tl nodechain.Timeline, snap recorder.Snapshot) *results.FaultStats {
	r.mu.Lock()
	nodes, armed, n, threshold, c0, c1, condSince := r.nodes, r.armed, r.poolNodes, r.threshold, r.counter0, r.counterEnd, r.since
	r.mu.Unlock()
	rs := &results.RepairStats{Karpenter: r.c.Karpenter.Version, PoolNodes: n, Threshold: threshold, ThresholdFor: r.thresholdFor, Faulted: len(nodes),
		Condition: string(r.sym.Condition) + "=" + r.sym.Reason, TolerationS: r.tol.Seconds(), TolerationScale: r.cfg.TolerationScale}
	fs := &results.FaultStats{Nodes: nodes, Condition: r.sym.Reason, Repair: rs}
	if armed.IsZero() {
		return fs
	}
	since := func(t time.Time) *float64 { v := t.Sub(armed).Seconds(); return &v }
	faulted := map[string]bool{}
	for _, nd := range nodes {
		faulted[nd] = true
	}
	rs.Repaired = repairedCount(tl, nodes, armed)
	var firstRepair time.Time
	var spans [][2]time.Time
	for _, cl := range tl.Claims {
		if cl.Deleting.IsZero() || cl.Deleting.Before(armed) {
			continue
		}
		end := cl.Deleted
		if end.IsZero() {
			end = time.Now()
		}
		spans = append(spans, [2]time.Time{cl.Deleting, end})
		if faulted[cl.Node] && (firstRepair.IsZero() || cl.Deleting.Before(firstRepair)) {
			firstRepair = cl.Deleting
		}
	}
	rs.DisruptedMax = maxOverlap(spans)
	if !firstRepair.IsZero() {
		rs.RepairS = since(firstRepair)
		var ready time.Time
		for _, nd := range tl.Nodes {
			if nd.Created.After(firstRepair) && !nd.Ready.IsZero() && (ready.IsZero() || nd.Ready.Before(ready)) {
				ready = nd.Ready
			}
		}
		if !ready.IsZero() {
			rs.ReplacementReadyS = since(ready)
		}
		// The displaced pods running again: agent-sandbox recreates a sandbox's pod under the
		// sandbox's name, so a displaced pod's successor is the pod of the same name created after
		// it was deleted (refill pods, new sandboxes, are not counted).
		displaced := map[string]time.Time{} // name -> when the pod on a faulted node went
		for _, p := range tl.Pods {
			if faulted[p.Node] && !p.Deleted.IsZero() && p.Deleted.After(armed) {
				displaced[p.Name] = p.Deleted
			}
		}
		rs.Displaced = len(displaced)
		var last time.Time
		for _, p := range tl.Pods {
			gone, ok := displaced[p.Name]
			if !ok || p.Created.Before(gone) || p.Ready.IsZero() || !p.Deleted.IsZero() {
				continue
			}
			rs.Recreated++
			if p.Ready.After(last) {
				last = p.Ready
			}
		}
		if rs.Displaced > 0 && rs.Recreated == rs.Displaced {
			rs.RecoveredS = since(last)
		}
	}
	if b := firstBlocked(tl, armed); b != nil {
		rs.BlockedS, rs.BlockedMessage = since(b.At), b.Message
	}
	if c0 != nil && c1 != nil {
		d := *c1 - *c0
		rs.CounterDelta = &d
	}
	for _, nd := range tl.Nodes {
		if !nd.Deleted.IsZero() && nd.Deleted.After(armed) {
			fs.NodesDeleted++
		}
	}
	for _, p := range snap.Pods {
		if sb, ok := snap.Sandboxes[p.Name]; ok && sb.FromPool && faulted[p.Node] && !p.Deleted.IsZero() && p.Deleted.After(armed) {
			fs.SandboxesLost++
		}
	}
	// Karpenter adds the toleration to the condition's lastTransitionTime, which the API server
	// keeps to the second: the rule is judged against that, not the harness's arming moment.
	from := armed
	if !condSince.IsZero() {
		from = condSince
		rs.ConditionSinceS = since(condSince)
	}
	early := math.Inf(1)
	if !firstRepair.IsZero() {
		early = firstRepair.Sub(from).Seconds()
	}
	// Every repair within the breaker: when Karpenter deleted a faulted node's NodeClaim, the
	// NodePool's unhealthy nodes (faulted, not yet gone) were at most 20% of its nodes, rounded up.
	legal, worst := true, ""
	for _, cl := range tl.Claims {
		if !faulted[cl.Node] || cl.Deleting.IsZero() || cl.Deleting.Before(armed) {
			continue
		}
		nodesThen, unhealthy := poolNodesAt(tl, cl.Deleting), 0
		for _, nd := range nodes {
			if d := tl.Nodes[nd].Deleted; d.IsZero() || d.After(cl.Deleting) {
				unhealthy++
			}
		}
		if unhealthy > karpenter.RepairThreshold(nodesThen) {
			legal = false
			worst = fmt.Sprintf("%s repaired with %d of %d nodes unhealthy (allowed %d)", cl.Node, unhealthy, nodesThen, karpenter.RepairThreshold(nodesThen))
		}
	}
	if worst == "" {
		worst = fmt.Sprintf("%d repair(s), each within the allowance for the nodes then; most NodeClaims deleted at once: %d", rs.Repaired, rs.DisruptedMax)
	}
	disrupted := results.Invariant{Name: "Karpenter repaired only within its breaker (unhealthy nodes at most 20% of the NodePool's, rounded up, when it repaired)",
		Held: legal, Detail: worst}
	if !r.f.blocked {
		fs.Invariants = []results.Invariant{
			{Name: fmt.Sprintf("every faulted node replaced (%d of %d nodes, within the breaker's %d)", len(nodes), n, threshold),
				Held: rs.Repaired == len(nodes), Detail: fmt.Sprintf("%d of %d faulted nodes' NodeClaims deleted by Karpenter", rs.Repaired, len(nodes))},
			{Name: fmt.Sprintf("no node replaced before its toleration (%s: %s x%g)", r.tol, r.sym.Condition, r.cfg.TolerationScale),
				Held: early >= r.tol.Seconds()-0.1, Detail: fmt.Sprintf("first NodeClaim deleted %.1f s after the condition's lastTransitionTime (kept to the second; %s after the harness armed it)", early, results.FormatSecs(rs.RepairS))},
			disrupted,
		}
		return fs
	}
	fs.Invariants = []results.Invariant{
		{Name: fmt.Sprintf("the repair breaker held: no node replaced with %d unhealthy (more than %d, the allowance for the %d nodes the pool and its claims can need)", len(nodes), threshold, n),
			Held: rs.Repaired == 0, Detail: fmt.Sprintf("%d faulted nodes' NodeClaims deleted", rs.Repaired)},
		{Name: "the repair breaker engaged: Karpenter reported NodeRepairBlocked",
			Held: rs.BlockedS != nil, Detail: fmt.Sprintf("first NodeRepairBlocked %s after the fault", results.FormatSecs(rs.BlockedS))},
		disrupted,
	}
	return fs
}

// conditionSince reads a node's condition's lastTransitionTime.
func conditionSince(ctx context.Context, c *Cell, node string, cond corev1.NodeConditionType) (time.Time, bool) {
	n, err := c.Clients.Typed.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return time.Time{}, false
	}
	for _, nc := range n.Status.Conditions {
		if nc.Type == cond {
			return nc.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

// nodesGone reports whether every one of nodes was seen deleted.
func nodesGone(tl nodechain.Timeline, nodes []string) bool {
	for _, n := range nodes {
		if tl.Nodes[n].Deleted.IsZero() {
			return false
		}
	}
	return true
}

// allPodsReady reports whether the cell has pods and every one not deleted is Ready.
func allPodsReady(tl nodechain.Timeline) bool {
	live := 0
	for _, p := range tl.Pods {
		if !p.Deleted.IsZero() {
			continue
		}
		live++
		if p.Ready.IsZero() {
			return false
		}
	}
	return live > 0
}

// poolNodesAt is how many of the pool's Node objects existed at t (Ready or not), as
// Karpenter's breaker counts them.
func poolNodesAt(tl nodechain.Timeline, t time.Time) int {
	n := 0
	for _, nd := range tl.Nodes {
		if !nd.Created.After(t) && (nd.Deleted.IsZero() || nd.Deleted.After(t)) {
			n++
		}
	}
	return n
}

// pickRepairNodes chooses the k nodes holding the most of the namespace's live pods (so the
// fault bites), ties by name; nodes that already had a NodeRepairBlocked event (one the tracker
// listed) only when too few others are left. Karpenter publishes NodeRepairBlocked at most once in
// 15 minutes per node, NodeClaim and NodePool (DedupeTimeout in its node health controller): a
// second blocked cell that faulted the first one's nodes got no event at all, and its "breaker
// engaged" invariant read as violated while the breaker held (2026-12-07, the two blocked cells
// run back to back). One node without an earlier event is enough for a fresh one.
func pickRepairNodes(live []string, tl nodechain.Timeline, k int) []string {
	count := map[string]int{}
	for _, p := range tl.Pods {
		if p.Deleted.IsZero() && p.Node != "" {
			count[p.Node]++
		}
	}
	reported := map[string]bool{}
	for _, b := range tl.Blocked {
		reported[b.Node] = true
	}
	var fresh, seen []string
	for _, n := range live {
		if reported[n] {
			seen = append(seen, n)
		} else {
			fresh = append(fresh, n)
		}
	}
	out := mostLoaded(fresh, count, k)
	return append(out, mostLoaded(seen, count, k-len(out))...)
}

// repairedCount is how many of nodes had their NodeClaim deleted (by Karpenter) after armed.
func repairedCount(tl nodechain.Timeline, nodes []string, armed time.Time) int {
	n := 0
	for _, nd := range nodes {
		for _, cl := range tl.Claims {
			if cl.Node == nd && !cl.Deleting.IsZero() && !cl.Deleting.Before(armed) {
				n++
				break
			}
		}
	}
	return n
}

// firstBlocked is the first NodeRepairBlocked event after armed.
func firstBlocked(tl nodechain.Timeline, armed time.Time) *nodechain.Blocked {
	var first *nodechain.Blocked
	for i, b := range tl.Blocked {
		if !b.At.Before(armed) && (first == nil || b.At.Before(first.At)) {
			first = &tl.Blocked[i]
		}
	}
	return first
}

// maxOverlap is the most spans open at one time.
func maxOverlap(spans [][2]time.Time) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var es []edge
	for _, s := range spans {
		es = append(es, edge{s[0], 1}, edge{s[1], -1})
	}
	sort.Slice(es, func(i, j int) bool {
		if !es[i].at.Equal(es[j].at) {
			return es[i].at.Before(es[j].at)
		}
		return es[i].delta < es[j].delta // a span that ends as another starts does not overlap it
	})
	most, open := 0, 0
	for _, e := range es {
		open += e.delta
		most = max(most, open)
	}
	return most
}

func (nodeRepairCell) Describe(fs *results.FaultStats) [][2]string {
	rs := fs.Repair
	if rs == nil {
		return nil
	}
	counter := "-"
	if rs.CounterDelta != nil {
		counter = fmt.Sprintf("%.0f", *rs.CounterDelta)
	}
	return [][2]string{
		{"NodePool (nodes when faulted)", fmt.Sprint(rs.PoolNodes)},
		{"faulted nodes (breaker repairs up to, of nodes)", fmt.Sprintf("%d (%d of %d)", rs.Faulted, rs.Threshold, rs.ThresholdFor)},
		{"condition, toleration", fmt.Sprintf("%s, %.1f s (x%g of EKS's)", rs.Condition, rs.TolerationS, rs.TolerationScale)},
		{"fault to NodeClaim deleted", results.FormatSecs(rs.RepairS)},
		{"fault to replacement node Ready", results.FormatSecs(rs.ReplacementReadyS)},
		{"displaced pods recreated and Ready", fmt.Sprintf("%d of %d", rs.Recreated, rs.Displaced)},
		{"fault to the last of them Ready", results.FormatSecs(rs.RecoveredS)},
		{"fault to NodeRepairBlocked", results.FormatSecs(rs.BlockedS)},
		{"faulted nodes repaired", fmt.Sprint(rs.Repaired)},
		{"most NodeClaims deleted at once", fmt.Sprint(rs.DisruptedMax)},
		{karpenterRepairs + " (change)", counter},
		{"warm sandboxes lost", fmt.Sprint(fs.SandboxesLost)},
	}
}

// Metrics: the repair chain, gateable per repetition (fault.invariants_violated, registered by
// the gpu fault, counts these cells' invariants too).
func (f nodeRepairCell) Metrics() []catalog.Metric {
	if f.blocked {
		return nil // one registration of the shared keys
	}
	rep := func(v func(rs *results.RepairStats) *float64) func(c *results.Cell) float64 {
		return func(c *results.Cell) float64 {
			if c.Stats.Fault == nil || c.Stats.Fault.Repair == nil {
				return results.OrNaN(nil)
			}
			return results.OrNaN(v(c.Stats.Fault.Repair))
		}
	}
	count := func(v func(rs *results.RepairStats) int) func(rs *results.RepairStats) *float64 {
		return func(rs *results.RepairStats) *float64 { x := float64(v(rs)); return &x }
	}
	return []catalog.Metric{
		{Key: "repair.nodes_repaired", Unit: "nodes", Value: rep(count(func(rs *results.RepairStats) int { return rs.Repaired }))},
		{Key: "repair.disrupted_max", Unit: "nodes", Value: rep(count(func(rs *results.RepairStats) int { return rs.DisruptedMax }))},
		{Key: "repair.repair_s", Unit: "s", Value: rep(func(rs *results.RepairStats) *float64 { return rs.RepairS })},
		{Key: "repair.replacement_ready_s", Unit: "s", Value: rep(func(rs *results.RepairStats) *float64 { return rs.ReplacementReadyS })},
		{Key: "repair.recovered_s", Unit: "s", Value: rep(func(rs *results.RepairStats) *float64 { return rs.RecoveredS })},
		{Key: "repair.blocked_s", Unit: "s", Value: rep(func(rs *results.RepairStats) *float64 { return rs.BlockedS })},
	}
}
