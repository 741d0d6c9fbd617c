package suites

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/brakes"
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/demand"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/nodechain"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/sut/karpenter"
	"github.com/brakebench/brakebench/internal/sut/keda"
	"github.com/brakebench/brakebench/internal/teardown"
	"github.com/brakebench/brakebench/internal/undo"
	"github.com/brakebench/brakebench/loadgen"
)

// poolAutoscaling is the warm-pool blueprint's autoscaler: a demand exporter counts claims, a
// KEDA ScaledObject (metrics-api trigger) reads the count and the HPA KEDA creates writes the
// pool's /scale. The control arm meets the same demand with no autoscaler.
type poolAutoscaling struct{}

// PoolAutoscaling is the pool-autoscaling suite.
func PoolAutoscaling() Suite { return poolAutoscaling{} }

func (poolAutoscaling) Name() string { return "pool-autoscaling" }
func (poolAutoscaling) Description() string {
	return "KEDA drives a SandboxWarmPool with claim demand (metrics-api trigger on a demand exporter) against a no-autoscaler control: decision vs capacity over time, step latency, overshoot, API writes"
}
func (poolAutoscaling) Brakes() []string { return brakes.Items(brakes.FlagsOnly) }
func (poolAutoscaling) Faults() []string { return nil }

const scaledObjectName = "pool-demand"

// Plan is refill brakes x profiles x arms x repetitions in a seeded random order.
func (poolAutoscaling) Plan(cfg *config.Resolved, _ PlanContext) (*Plan, error) {
	a := cfg.Autoscale
	seed := cfg.Matrix.Seed
	if seed == 0 {
		seed = time.Now().UnixNano()%1_000_000_000 + 1
	}
	p := &Plan{Suite: "pool-autoscaling", Seed: seed, Primary: "arm"}
	for _, b := range cfg.Matrix.Brakes {
		// The autoscaler runs under controller-flag brakes (the refill brakes), and on a
		// Karpenter NodePool under brakes shaped like the pool's pods (capacity-buffer), not under
		// other brakes that bring cluster objects of their own.
		keep := brakes.FlagsOnly
		if a.Nodes == "karpenter" {
			keep = brakes.FlagsOrPodShaped
		}
		combo, err := brakes.Resolve(cfg, b, keep)
		if err != nil {
			return nil, err
		}
		flags, br := combo.Flags(), combo.Result()
		flags = append(flags, cfg.Controller.Args...)
		for _, prof := range a.Profiles {
			for _, arm := range a.Arms {
				name := arm
				if len(a.Profiles) > 1 {
					name += "@" + profileLabel(prof)
				}
				if len(cfg.Matrix.Brakes) > 1 || b != "none" {
					name += "+" + b
				}
				p.Names = append(p.Names, name)
				p.addAxes(name, "arm", arm, "profile", profileLabel(prof), "brake", b)
				if p.Baseline == "" && arm == "control" {
					p.Baseline = name
				}
				for rep := 1; rep <= cfg.Matrix.Repetitions; rep++ {
					p.Cells = append(p.Cells, PlannedCell{ID: fmt.Sprintf("%s#%d", name, rep), Name: name, Rep: rep,
						Flags: flags, FillFlags: flags, Brake: br, Arm: arm, Profile: prof})
				}
			}
		}
	}
	if p.Baseline == "" {
		p.Baseline = p.Names[0]
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6b656461))
	rng.Shuffle(len(p.Cells), func(i, j int) { p.Cells[i], p.Cells[j] = p.Cells[j], p.Cells[i] })
	where := "lab: KEDA's operator and metrics adapter (built on first use, ~8-13 min cold) run as local processes; an APIService for external.metrics.k8s.io and an ExternalName Service route to the adapter on localhost; both are deleted and the processes stopped at the end"
	if a.HPASyncPeriod > 0 {
		where += fmt.Sprintf("; kube-controller-manager restarted with --horizontal-pod-autoscaler-sync-period=%s and restored afterwards", a.HPASyncPeriod)
	}
	if a.Nodes == "karpenter" {
		where += fmt.Sprintf("; Karpenter (built on first use) runs as a local process with a NodePool %s of 8-GPU nodes (tainted %s; the pool's pods tolerate it and request %d GPU(s) each), empty nodes consolidated after %s; the process, NodePool, NodeClaims and nodes are removed at the end",
			autoscalePool, autoscaleTaint, a.GPUsPerSandbox, a.ConsolidateAfter)
	}
	if cfg.Cluster.Provider != "lab" {
		where = fmt.Sprintf("%s: the installed KEDA is used as it is; KEDA reads demand from %s (run `brakebench exporter` there)", cfg.Cluster.Provider, a.ExporterURL)
	}
	p.Changes = []string{
		where,
		fmt.Sprintf("per cell: a namespace bb-<run>-<n> labelled app.kubernetes.io/managed-by=brakebench with a SandboxTemplate, a SandboxWarmPool of %d and the profile's claims (each step held %s); keda cells add a ScaledObject (%s target %g, min %d) whose HPA is confirmed gone before the namespace is deleted",
			a.MinReplicas, a.StepDuration, a.MetricType, a.TargetValue, a.MinReplicas),
		"per cell (lab): the demand exporter serves the namespace's claim count on 127.0.0.1 while the cell runs",
	}
	return p, nil
}

// profileLabel is a profile as cell names show it ("0-3-0").
func profileLabel(p string) string {
	steps, _ := config.ParseProfile(p)
	parts := make([]string, len(steps))
	for i, d := range steps {
		parts[i] = fmt.Sprint(d)
	}
	return strings.Join(parts, "-")
}

// Run executes the cells in plan order.
func (s poolAutoscaling) Run(ctx context.Context, env *Env, plan *Plan) (*results.Results, error) {
	res := newResults(ctx, env, plan, s.Name())
	kc, ok := env.Cluster.(provider.KEDACluster)
	if !ok {
		return nil, fmt.Errorf("cluster provider %s cannot provide KEDA", env.Cluster.Info().Provider)
	}
	needKEDA := false
	for _, c := range plan.Cells {
		needKEDA = needKEDA || c.Arm == "keda"
	}
	var k provider.KEDA
	if needKEDA {
		sync := ""
		if p := env.Config.Autoscale.HPASyncPeriod; p > 0 {
			sync = p.String()
		}
		var restore func(context.Context) error
		var err error
		k, restore, err = kc.KEDA(ctx, sync, func(orig []byte) error {
			return env.Journal.Record(undo.Entry{Op: undo.OpChanged, Kind: "KEDA", Ref: "keda", Original: orig})
		})
		if restore != nil {
			env.Reverts.Push("KEDA / HPA sync period", func(ctx context.Context) error {
				if err := restore(ctx); err != nil {
					return err
				}
				return env.Journal.Record(undo.Entry{Op: undo.OpReverted, Ref: "keda"})
			})
		}
		if err != nil {
			return nil, fmt.Errorf("start or find KEDA: %w", err)
		}
		if env.Versions != nil && k.Version() != "" {
			env.Versions["keda"] = k.Version()
		}
	}
	var kp *provider.Karpenter
	if env.Config.Autoscale.Nodes == "karpenter" {
		var err error
		if kp, err = startAutoscalePool(ctx, env); err != nil {
			return nil, err
		}
	}
	registered := false
	runCells(ctx, env, plan, res,
		func(pc PlannedCell) string {
			return fmt.Sprintf("profile %s, controller flags: %s", pc.Profile, flagList(pc.Flags))
		},
		func(ctx context.Context, sc *Scope, pc PlannedCell, idx int) results.Cell {
			var cell results.Cell
			if err := configureController(ctx, env, "", pc.Flags, &registered); err != nil {
				cell = results.Cell{Brake: pc.Brake, Error: "configure controller: " + err.Error()}
			} else {
				cell = s.runCell(ctx, env, sc, k, kp, pc, idx, plan.Seed)
			}
			version, flags := env.Cluster.Controller().Current()
			cell.Controller = results.Controller{Version: version, Flags: flags}
			return cell
		},
		func(c results.Cell) string { return strings.Join(c.Autoscale.Assertions, "\n    ") })
	res.Summary = analysis.Summarize(res.Cells, plan.Names, res.Baseline, plan.Seed)
	res.EndedAt = time.Now().UTC()
	return res, nil
}

func (poolAutoscaling) runCell(ctx context.Context, env *Env, sc *Scope, k provider.KEDA, kp *provider.Karpenter, pc PlannedCell, idx int, seed int64) (cell results.Cell) {
	a := env.Config.Autoscale
	c := env.Clients
	ns, labels := sc.Namespace, sc.Labels
	cell = results.Cell{Brake: pc.Brake}
	profile, _ := config.ParseProfile(pc.Profile)
	maxR := a.MaxReplicas
	if maxR == 0 {
		for _, d := range profile {
			maxR = max(maxR, d)
		}
		maxR = max(maxR, a.MinReplicas)
	}
	as := &results.Autoscale{Arm: pc.Arm, Profile: profile, StepSeconds: a.StepDuration.Seconds(), MetricType: a.MetricType, Target: a.TargetValue,
		Min: a.MinReplicas, Max: maxR, PollingInterval: a.PollingInterval.String(), ScaleUp: "HPA default: max(4 pods, 100%) per 15s"}
	if a.ScaleUpPods > 0 {
		as.ScaleUp = fmt.Sprintf("at most %d pods per %s", a.ScaleUpPods, a.ScaleUpPeriod)
	}
	if k != nil {
		as.HPASyncPeriod, as.KEDAVersion = k.HPASyncPeriod(), k.Version()
	}
	cell.Autoscale = as
	rec, err := sc.Recorder(ctx)
	if err != nil {
		cell.Error = err.Error()
		return cell
	}
	hpas, stopHPA, err := hpaInformer(ctx, c, ns)
	if err != nil {
		cell.Error = err.Error()
		return cell
	}
	defer stopHPA()
	objs := BenchObjects(ns, a.MinReplicas, env.Config.Workload.PodImage(), env.Config.Workload.Placement == "real-node")
	var tracker *nodechain.Tracker
	if kp != nil {
		if err := placeTemplate(objs[0], func(spec map[string]any) error {
			return karpenter.PlacePod(spec, autoscalePool, autoscaleTaint, a.GPUsPerSandbox)
		}); err != nil {
			cell.Error = err.Error()
			return cell
		}
		tctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if tracker, err = nodechain.Start(tctx, c, ns, autoscalePool); err != nil {
			cell.Error = err.Error()
			return cell
		}
		as.Nodes = &results.AutoscaleNodes{Karpenter: kp.Version, NodePool: autoscalePool, GPUsPerSandbox: a.GPUsPerSandbox,
			ConsolidateAfter: a.ConsolidateAfter.String(), Headroom: headroomOf(pc.Brake)}
	}
	podSpec, _, _ := unstructured.NestedMap(objs[0].Object, "spec", "podTemplate", "spec")
	if err := c.Apply(ctx, objs, labels); err != nil {
		cell.Error = err.Error()
		return cell
	}
	if !rec.WaitFor(ctx, a.SettleTimeout, func() bool { r, _ := rec.PoolReady(PoolName); return r >= int64(a.MinReplicas) }) {
		cell.Error = fmt.Sprintf("pool did not fill to %d within %s", a.MinReplicas, a.SettleTimeout)
		return cell
	}
	if kp != nil {
		// Nodes an earlier cell emptied are removed now (their NodeClaims deleted; Karpenter
		// terminates them), so every cell starts from the nodes its own minimum needs: waiting
		// for Karpenter's consolidation was measured at 21 s to more than 95 s on the lab.
		base := nodesFor(a.MinReplicas, a.GPUsPerSandbox)
		if n, err := removeEmptyPoolNodes(ctx, c, tracker.Snapshot()); err != nil {
			sc.Timeline.Add("nodes", "error", "remove the earlier cells' empty nodes: "+err.Error())
		} else if n > 0 {
			sc.Timeline.Add("nodes", "removed", fmt.Sprintf("%d empty node(s) left by earlier cells", n))
		}
		if _, err := tracker.WaitFor(ctx, fmt.Sprintf("the NodePool at the %d node(s) the pool's minimum needs", base), time.Minute, func(tl nodechain.Timeline) bool {
			claims, ready, _ := tl.Live()
			return claims == base && ready == base
		}); err != nil {
			sc.Timeline.Add("nodes", "error", "the cell starts with nodes left by earlier cells: "+err.Error())
		}
		// Headroom (the capacity-buffer brake): installed now, with the pool at its minimum,
		// and waited for until Karpenter's nodes for it are Ready, so the profile meets it.
		start := time.Now()
		if err := brakes.FromResult(pc.Brake).Apply(ctx, &brakes.Cell{Install: installer(c, env.Journal, sc.Reverts, labels), Log: sc.Timeline.Add,
			Namespace: ns, PodSpec: podSpec}); err != nil {
			cell.Error = "apply brake " + err.Error()
			return cell
		}
		want := nodesFor(a.MinReplicas+as.Nodes.Headroom, a.GPUsPerSandbox)
		tl, err := tracker.WaitFor(ctx, fmt.Sprintf("%d Ready pool node(s)", want), a.SettleTimeout, func(tl nodechain.Timeline) bool {
			_, ready, _ := tl.Live()
			return ready >= want
		})
		if err != nil {
			cell.Error = err.Error()
			return cell
		}
		if as.Nodes.Headroom > 0 {
			v := time.Since(start).Seconds()
			as.Nodes.HeadroomReadyS = &v
		}
		_, as.Nodes.StartNodes, _ = tl.Live()
	}
	// The demand exporter: served here on the lab; elsewhere KEDA reads the configured one.
	var exp *demand.Exporter
	url := env.Config.Autoscale.ExporterURL
	if k == nil || k.ServesExporter() {
		if exp, err = demand.Start(ctx, c.Dynamic, ns, "", "127.0.0.1:0"); err != nil {
			cell.Error = err.Error()
			return cell
		}
		sc.Reverts.Push("demand exporter", exp.Stop)
		url = exp.URL()
		if k != nil {
			url = k.ExporterURL(url)
		}
	}
	as.ExporterURL = url
	targets := env.Cluster.MetricsTargets()
	before := scrapeAll(ctx, env, targets[:1]) // the API server's request counts
	if pc.Arm == "keda" {
		so := keda.ScaledObject(ns, scaledObjectName, keda.ScaledObjectSpec{Pool: PoolName, URL: url, MetricType: a.MetricType, Target: a.TargetValue,
			Min: a.MinReplicas, Max: maxR, PollingInterval: a.PollingInterval, ScaleDownStabilization: a.ScaleDownStabilization,
			ScaleUpPods: a.ScaleUpPods, ScaleUpPeriod: a.ScaleUpPeriod})
		as.ScaledObject, as.HPA = so.GetName(), keda.HPAName(so.GetName())
		// Deleting the ScaledObject makes KEDA delete its HPA; the HPA must be gone before the
		// namespace goes (it would otherwise scale a pool mid-teardown).
		sc.Reverts.Push("ScaledObject "+so.GetName(), func(ctx context.Context) error {
			if err := teardown.DeleteAndWait(ctx, c, keda.ScaledObjectGVR, ns, so.GetName(), 2*time.Minute); err != nil {
				return err
			}
			return teardown.DeleteAndWait(ctx, c, keda.HPAGVR, ns, as.HPA, 2*time.Minute)
		})
		created := time.Now()
		if err := c.Apply(ctx, []*unstructured.Unstructured{so}, labels); err != nil {
			cell.Error = "create ScaledObject: " + err.Error()
			return cell
		}
		if !waitCache(ctx, a.SettleTimeout, func() bool { return hpaHasMetric(hpas, as.HPA) }) {
			cell.Error = fmt.Sprintf("KEDA's HPA %s reported no metric within %s (is the metrics adapter's APIService available?)", as.HPA, a.SettleTimeout)
			return cell
		}
		secs := time.Since(created).Seconds()
		as.MetricReadSeconds = &secs
	} else if n := len(hpas.GetStore().List()); n > 0 {
		cell.Error = fmt.Sprintf("control arm: %d HorizontalPodAutoscaler(s) in %s; the control must run without an autoscaler", n, ns)
		return cell
	}

	// KEDA's HPA reads its metric as soon as it exists and then once per sync period; steps held
	// for a multiple of that period would all land just before a sync and read as near-instant
	// decisions. A seeded random offset within one period puts the profile at a random phase.
	period := 15 * time.Second
	if k != nil {
		if d, err := time.ParseDuration(k.HPASyncPeriod()); err == nil && d > 0 {
			period = d
		}
	}
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(idx)))
	offset := time.Duration(rng.Float64() * float64(period))
	as.PhaseOffsetSeconds = offset.Seconds()
	select {
	case <-ctx.Done():
		cell.Error = "interrupted"
		return cell
	case <-time.After(offset):
	}
	// The profile: hold each step's claim count for StepDuration.
	gen := &loadgen.Generator{Namespace: ns, Pool: PoolName, Prefix: "claim-", Labels: labels}
	dm := &demandSetter{c: c, gen: gen, ns: ns}
	t0 := time.Now()
	sc.T0 = t0 // the cell's timeline (a brake's events) reads from here
	var created [][]string
	for i, d := range profile {
		stepStart := t0.Add(time.Duration(i) * a.StepDuration)
		names, err := dm.set(ctx, d)
		if err != nil {
			cell.Error = fmt.Sprintf("step %d (%d claims): %v", i, d, err)
			return cell
		}
		created = append(created, names)
		as.Steps = append(as.Steps, results.AutoscaleStep{Demand: d, T: stepStart.Sub(t0).Seconds(), Expected: expected(a, d, maxR)})
		select {
		case <-ctx.Done():
			cell.Error = "interrupted"
			return cell
		case <-time.After(time.Until(stepStart.Add(a.StepDuration))):
		}
	}
	end := time.Now()
	after := scrapeAll(ctx, env, targets[:1])
	as.APIWrites = autoscalerWrites(deltas(before, after))
	snap := rec.Snapshot()
	assembleAutoscale(as, snap, dm.history(), created, t0, end)
	if tracker != nil {
		settleNodes(ctx, tracker, as.Nodes, a.GPUsPerSandbox, a.SettleTimeout)
		for i, st := range nodeSteps(tracker.Snapshot(), t0, a.StepDuration, len(as.Steps), time.Now()) {
			as.Steps[i].Nodes = st
		}
	}
	as.ExporterHits = []results.AutoscaleHit{}
	if exp != nil {
		for _, h := range exp.Hits() {
			if !h.At.Before(t0) && !h.At.After(end) {
				as.ExporterHits = append(as.ExporterHits, results.AutoscaleHit{T: h.At.Sub(t0).Seconds(), Value: h.Value})
			}
		}
	}
	as.Assertions = autoscaleAssertions(as)
	return cell
}

// expected is the HPA's decision for demand d under AverageValue (ceil(d/target) clamped to
// [min, max]); -1 under Value, where the decision depends on how many pods are ready.
func expected(a config.Autoscale, d, maxR int) int {
	if a.MetricType != "AverageValue" {
		return -1
	}
	return min(max(int(math.Ceil(float64(d)/a.TargetValue)), a.MinReplicas), maxR)
}

// demandSetter creates and deletes claims to hold a given demand, and records when it changed.
type demandSetter struct {
	c    *kube.Clients
	gen  *loadgen.Generator
	ns   string
	next int
	live []string
	hist []demandPoint
}

type demandPoint struct {
	at time.Time
	n  int
}

// set brings the claim count to n (new claims in parallel; the newest are deleted first) and
// returns the names it created.
func (d *demandSetter) set(ctx context.Context, n int) ([]string, error) {
	ri := d.c.Dynamic.Resource(claimGVR()).Namespace(d.ns)
	var made []string
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for len(d.live)+len(made) < n {
		i := d.next
		d.next++
		name := d.gen.ClaimName(i)
		made = append(made, name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := ri.Create(ctx, d.gen.Claim(i, time.Now()), metav1.CreateOptions{}); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	for len(d.live) > n {
		name := d.live[len(d.live)-1]
		d.live = d.live[:len(d.live)-1]
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := ri.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	d.live = append(d.live, made...)
	d.hist = append(d.hist, demandPoint{time.Now(), len(d.live)})
	if len(errs) > 0 {
		return made, fmt.Errorf("%d claim write(s) failed, first: %w", len(errs), errs[0])
	}
	return made, nil
}

func (d *demandSetter) history() []demandPoint { return d.hist }

// hpaInformer watches the namespace's HorizontalPodAutoscalers.
func hpaInformer(ctx context.Context, c *kube.Clients, ns string) (cache.SharedIndexInformer, func(), error) {
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.Dynamic, 0, ns, nil)
	inf := f.ForResource(keda.HPAGVR).Informer()
	stop := make(chan struct{})
	f.Start(stop)
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(sctx.Done(), inf.HasSynced) {
		close(stop)
		return nil, nil, fmt.Errorf("HPA informer did not sync")
	}
	return inf, func() { close(stop) }, nil
}

func hpaHasMetric(inf cache.SharedIndexInformer, name string) bool {
	for _, o := range inf.GetStore().List() {
		u, ok := o.(*unstructured.Unstructured)
		if !ok || u.GetName() != name {
			continue
		}
		cm, _, _ := unstructured.NestedSlice(u.Object, "status", "currentMetrics")
		return len(cm) > 0
	}
	return false
}

// waitCache re-checks cond (which reads informer caches, not the API) every 100 ms.
func waitCache(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
	return true
}

// autoscalerWrites sums the API server's mutating requests on the resources an autoscaler
// touches (HPA, ScaledObject, the pool and its scale subresource).
func autoscalerWrites(d map[string]results.Scrape) map[string]float64 {
	out := map[string]float64{}
	for _, s := range d["kube-apiserver"].Series {
		if s.Name != "apiserver_request_total" || s.Labels["dry_run"] != "" { // a dry run writes nothing
			continue
		}
		switch s.Labels["verb"] {
		case "POST", "PUT", "PATCH", "DELETE", "APPLY":
		default:
			continue
		}
		r := s.Labels["resource"]
		if sub := s.Labels["subresource"]; sub != "" {
			r += "/" + sub
		}
		switch s.Labels["resource"] {
		case "horizontalpodautoscalers", "scaledobjects", "sandboxwarmpools":
			out[r] += s.Value
		}
	}
	return out
}
