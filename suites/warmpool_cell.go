package suites

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/brakebench/brakebench/faults"
	"github.com/brakebench/brakebench/internal/brakes"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/recorder"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/scrape"
	"github.com/brakebench/brakebench/internal/scrape/fetch"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
	"github.com/brakebench/brakebench/internal/teardown"
	"github.com/brakebench/brakebench/internal/undo"
	"github.com/brakebench/brakebench/loadgen"
)

const (
	// PoolName is the SandboxWarmPool every warm-pool cell creates.
	PoolName     = "bench-pool"
	templateName = "bench-template"
)

// runCell runs one cell in its scope: template and pool, wait full, fire, wait Ready and refill,
// scrape, assemble. Errors end up in cell.Error; the run goes on.
//
// cell.Phases times every wait of the cell, in order (seconds): recorder (its informers sync),
// scrape_fill (the API server's counters before the fill), fill, brakes (the controller's restart
// with the cell's flags, its first reconcile and the brakes that act on the cluster),
// fault_arm, scrape_burst (every target's counters before the burst), loadgen_setup (identity,
// APF classification, connections warmed, up to T0), claims (T0 to every claim settled; on the
// in-cluster runner runner_startup precedes T0), refill_wait, scrape_after, controller_log (its
// create passes read), assemble; the runner adds teardown and total. A key with a dot is a part
// of the phase before the dot, not more time: brakes.restart and brakes.ready (inside brakes),
// teardown.sweep and teardown.namespace (inside teardown: the DeleteCollection per kind, then
// deleting the namespace and waiting until it is gone).
func runCell(ctx context.Context, env *Env, sc *Scope, pc PlannedCell, idx int, sched loadgen.Schedule) (cell results.Cell) {
	cfg := env.Config
	wl := cfg.Workload
	cell = results.Cell{Brake: pc.Brake, Fault: pc.Fault, Phases: map[string]float64{}}
	ns, labels, log := sc.Namespace, sc.Labels, sc.Timeline
	c := env.Clients
	phase := func(name string, since time.Time) { cell.Phases[name] = time.Since(since).Seconds() }
	pushNamespaceTeardown(env, sc)
	rec, fillScrape, ok := prepareCell(ctx, env, sc, pc, &cell)
	if !ok {
		return cell
	}
	// The cell's fault, armed before the burst (a fault that strikes mid-burst schedules itself
	// when told the burst's start).
	var armed faults.Armed
	var err error
	if f, _ := faults.CellFaultNamed(pc.Fault); f != nil {
		step := time.Now()
		armed, err = f.Arm(ctx, &faults.Cell{Config: cfg, Clients: c, Cluster: env.Cluster, Journal: env.Journal, Reverts: sc.Reverts,
			Labels: labels, Namespace: ns, RunID: env.RunID, Index: idx, Rec: rec, Timeline: log, DCGM: env.DCGM, Karpenter: env.Karpenter})
		if err != nil {
			cell.Error = "arm " + pc.Fault + ": " + err.Error()
			return cell
		}
		phase("fault_arm", step)
	}
	step := time.Now()
	targets := env.Cluster.MetricsTargets()
	before := scrapeAll(ctx, env, targets)
	phase("scrape_burst", step)
	// A fault stalls the refill on purpose (that is what its cell measures the recovery from): the
	// create rate it leaves says nothing of when the refill ends, so its cells wait the full time.
	projection := projectionWindow(wl.RefillProjection, pc.Brake)
	if armed != nil {
		projection = 0
	}

	if cfg.Loadgen.Runner == "in-cluster" {
		return runCellInCluster(ctx, env, sc, rec, cell, ns, labels, sched, before, fillScrape, targets)
	}
	step = time.Now()
	gen, err := newGenerator(ctx, env, ns, labels)
	if err != nil {
		cell.Error = err.Error()
		return cell
	}
	sent := env.Progress.Counter("claims sent "+pc.ID, len(sched))
	gen.Progress = sent
	ready := env.Progress.Counter("claims Ready "+pc.ID, len(sched))

	t0 := time.Now().Add(50 * time.Millisecond)
	sc.T0 = t0
	cell.Phases["loadgen_setup"] = t0.Sub(step).Seconds()
	if armed != nil {
		armed.Fired(ctx, t0)
	}
	fired := gen.Fire(ctx, t0, sched)
	sent.Done()

	// Every claim is Ready, failed to create, or past its own timeout.
	claimsDone := func() bool {
		now := time.Now()
		done, nReady, nFailed := true, int64(0), int64(0)
		for _, s := range fired {
			switch {
			case s.Err != "":
				nFailed++
			case rec.ClaimReady(s.Name):
				nReady++
			case now.After(s.Intent.Add(wl.ClaimTimeout)):
				nFailed++
			default:
				done = false
			}
		}
		ready.Set(nReady+nFailed, nFailed)
		return done
	}
	rec.WaitFor(ctx, wl.ClaimTimeout+time.Until(t0)+sched.End(), claimsDone)
	claimsDone()
	ready.Done()
	var faultErr error
	if armed != nil {
		faultErr = armed.Settle(ctx, time.Minute)
	}
	phase("claims", t0)
	cell, snap, rw := settleAndAssemble(ctx, env, rec, cell, ns, fired, t0, nil, before, fillScrape, targets, projection, armed != nil)
	if armed != nil {
		cell.Stats.Fault = armed.Stats(&cell, snap)
	}
	if faultErr != nil {
		cell.Error = pc.Fault + " fault: " + faultErr.Error()
	}
	if cell.Error == "" {
		noteRefill(env, rec, rw, t0)
	}
	return cell
}

// noteRefill prints how the wait for the refill ended when the pool did not refill: the
// projection's sentence, or the timeout.
func noteRefill(env *Env, rec *recorder.Recorder, rw refillWait, t0 time.Time) {
	wl := env.Config.Workload
	r, _ := rec.PoolReady(PoolName)
	switch {
	case rw.projection != nil:
		env.Progress.Printf("    %s (%d/%d Ready)", rw.projection.Text(t0), r, wl.Pool)
	case !rw.refilled:
		env.Progress.Printf("    pool did not refill within %s (%d/%d Ready)", wl.RefillTimeout, r, wl.Pool)
	}
}

// refillWait is how a cell's wait for its refill ended.
type refillWait struct {
	refilled bool
	// projection is set when the projection rule ended the wait (recorder.ProjectRefill).
	projection *recorder.Projection
}

// waitRefill waits, on the recorder's observations, until the pool has refilled, the refill
// projection rule (recorder.ProjectRefill, window W; 0: off) ends the wait, or timeout passes. A
// refill is complete when the pool reports size Ready and size replicas and the pool has created
// at least as many sandboxes since t0 as claims took warm ones (Recorder.Refill).
func waitRefill(ctx context.Context, rec *recorder.Recorder, t0 time.Time, pool string, size int, timeout, window time.Duration) refillWait {
	var rw refillWait
	deadline := time.Now().Add(timeout)
	rw.refilled = rec.WaitFor(ctx, timeout, func() bool {
		r, n := rec.PoolReady(pool)
		creates, taken := rec.RefillCreates(t0)
		if r >= int64(size) && n >= int64(size) && len(creates) >= taken {
			return true
		}
		if p := recorder.ProjectRefill(creates, taken-len(creates), time.Now(), deadline, window); p.Cut {
			rw.projection = &p
			return true
		}
		return false
	})
	if rw.projection != nil {
		rw.refilled = false
	}
	return rw
}

// createPasses are the controller's create passes for the pool in ns since t0, from its log
// (nil, nil when the cluster cannot show the log).
func createPasses(ctx context.Context, cl provider.Cluster, ns string, t0 time.Time) ([]int, error) {
	logs, ok := cl.(provider.ControllerLogs)
	if !ok {
		return nil, nil
	}
	r, err := logs.ControllerLog(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	passes, err := agentsandbox.CreatePasses(r, ns, t0)
	if passes == nil && err == nil {
		passes = []int{} // read, and no pass: the pool never refilled
	}
	return passes, err
}

func sameFlags(a, b []string) bool {
	return strings.Join(a, " ") == strings.Join(b, " ")
}

// waitReconciled waits until a (re)started local controller has reconciled a warm pool (its
// caches are synced and its workers run), read from its own /metrics. Controllers brakebench
// cannot scrape directly (in-cluster) were already waited for by their rollout.
func waitReconciled(ctx context.Context, env *Env, timeout time.Duration) error {
	url := ""
	for _, t := range env.Cluster.MetricsTargets() {
		if t.Component == "agent-sandbox-controller" && !t.ViaAPIServer {
			url = t.URL
		}
	}
	if url == "" {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if ss, err := fetch.All(ctx, url); err == nil &&
			scrape.Sum(ss, "controller_runtime_reconcile_total", map[string]string{"controller": "sandboxwarmpool"}) > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("restarted controller did not reconcile the warm pool within %s", timeout)
}

// BenchObjects are a cell's SandboxTemplate and SandboxWarmPool (PoolName) in ns.
func BenchObjects(ns string, replicas int, image string, realNode bool) []*unstructured.Unstructured {
	tmpl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxTemplate",
		"metadata": map[string]any{"name": templateName, "namespace": ns},
		"spec": map[string]any{
			"networkPolicyManagement": "Unmanaged",
			"podTemplate": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "brakebench-sandbox"}},
				"spec": map[string]any{
					"restartPolicy": "Never", "terminationGracePeriodSeconds": int64(1), "automountServiceAccountToken": false,
					"containers": []any{map[string]any{"name": "main", "image": image}},
				},
			},
		},
	}}
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
		"metadata": map[string]any{"name": PoolName, "namespace": ns},
		"spec":     map[string]any{"replicas": int64(replicas), "sandboxTemplateRef": map[string]any{"name": templateName}},
	}}
	if realNode { // workload.placement real-node: a real runtime's cold start on the lab's real node
		_ = placeTemplate(tmpl, func(spec map[string]any) error { kube.RealNodePodSpec(spec); return nil })
	}
	return []*unstructured.Unstructured{tmpl, pool}
}

// placeTemplate adapts a SandboxTemplate's pod spec in place.
func placeTemplate(tmpl *unstructured.Unstructured, place func(spec map[string]any) error) error {
	spec, _, err := unstructured.NestedMap(tmpl.Object, "spec", "podTemplate", "spec")
	if err != nil {
		return err
	}
	if err := place(spec); err != nil {
		return err
	}
	return unstructured.SetNestedMap(tmpl.Object, spec, "spec", "podTemplate", "spec")
}

type scrapes map[string]scrapeResult

type scrapeResult struct {
	series []scrape.Series
	err    error
}

func apiServerOnly(targets []provider.MetricsTarget) []provider.MetricsTarget {
	var out []provider.MetricsTarget
	for _, t := range targets {
		if t.Component == "kube-apiserver" {
			out = append(out, t)
		}
	}
	return out
}

func scrapeAll(ctx context.Context, env *Env, targets []provider.MetricsTarget) scrapes {
	out := scrapes{}
	for _, t := range targets {
		s, err := fetch.Metrics(ctx, env.Clients.Config, fetch.Target{Component: t.Component, URL: t.URL, ViaAPIServer: t.ViaAPIServer, Insecure: t.Insecure, BearerToken: t.BearerToken})
		out[t.Component] = scrapeResult{s, err}
	}
	return out
}

func deltas(before, after scrapes) map[string]results.Scrape {
	out := map[string]results.Scrape{}
	for comp, a := range after {
		b := before[comp]
		switch {
		case a.err != nil:
			out[comp] = results.Scrape{Error: a.err.Error()}
		case b.err != nil:
			out[comp] = results.Scrape{Error: "before: " + b.err.Error()}
		default:
			out[comp] = results.Scrape{Series: scrape.Delta(b.series, a.series)}
		}
	}
	return out
}

// runCellInCluster is the burst and its readiness measured from inside the cluster
// (loadgen.runner in-cluster): the runner Job fires at T0 and times each claim's Ready on its own
// clock and watch; this process still records the sandboxes, pods and pool (refill, ceilings,
// correctness) with its informers, and the claims' Ready times in results are the runner's.
func runCellInCluster(ctx context.Context, env *Env, sc *Scope, rec *recorder.Recorder, cell results.Cell, ns string, labels map[string]string,
	sched loadgen.Schedule, before, fillScrape scrapes, targets []provider.MetricsTarget) results.Cell {
	cfg, wl := env.Config, env.Config.Workload
	t0 := time.Now().Add(cfg.Loadgen.RunnerStartup)
	sc.T0 = t0
	spec := loadgen.AgentSpec{Namespace: ns, Pool: PoolName, Prefix: "claim-", Labels: labels, T0: t0, Schedule: sched,
		Connections: cfg.Loadgen.Connections, QPS: cfg.Loadgen.QPS, Burst: cfg.Loadgen.Burst, MaxInFlight: cfg.Loadgen.MaxInFlight,
		ClaimTimeout: wl.ClaimTimeout}
	env.Progress.Printf("    in-cluster runner: burst of %d at %s (Job %s/%s, image %s)", len(sched), t0.Format("15:04:05.000"), ns, RunnerName, cfg.Loadgen.RunnerImage)
	cell.Phases["runner_startup"] = time.Until(t0).Seconds()
	fired, readyAt, err := fireInClusterInto(ctx, env, spec, labels, &cell)
	if err != nil {
		cell.Error = "in-cluster runner: " + err.Error()
		return cell
	}
	cell.Phases["claims"] = time.Since(t0).Seconds()
	cell, _, rw := settleAndAssemble(ctx, env, rec, cell, ns, fired, t0, readyAt, before, fillScrape, targets, wl.RefillProjection, false)
	noteRefill(env, rec, rw, t0)
	return cell
}

// settleAndAssemble waits for the pool to refill (or for the refill projection with window
// projection to end the wait), scrapes the metrics, and assembles the cell from the recorder's
// records, read in place; readyAt, when not nil, replaces the claims' Ready times (the in-cluster
// runner's own observations). With keepSnapshot it also returns a copy of what the assembly read
// (a fault's statistics read it), else an empty Snapshot: at 100,000 claims the copy is 60 MiB.
func settleAndAssemble(ctx context.Context, env *Env, rec *recorder.Recorder, cell results.Cell, ns string, fired []loadgen.Sent, t0 time.Time,
	readyAt map[string]time.Time, before, fillScrape scrapes, targets []provider.MetricsTarget, projection time.Duration, keepSnapshot bool) (results.Cell, recorder.Snapshot, refillWait) {
	wl := env.Config.Workload
	phase := func(name string, since time.Time) {
		if cell.Phases != nil {
			cell.Phases[name] = time.Since(since).Seconds()
		}
	}
	step := time.Now()
	rw := waitRefill(ctx, rec, t0, PoolName, wl.Pool, wl.RefillTimeout, projection)
	phase("refill_wait", step)
	end := time.Now()
	after := scrapeAll(ctx, env, targets)
	phase("scrape_after", end)
	// The cell's numbers from the recorder's records, read in place and held still while read, as
	// the wait and the scrape end; the controller's log and the claims' Events are read from the
	// API after (seconds), without holding the recorder.
	step = time.Now()
	var snap recorder.Snapshot
	in := cellInput{
		cell: cell, readyAt: readyAt, sent: fired, t0: t0, end: end, pool: PoolName, poolSize: wl.Pool,
		claimTimeout: wl.ClaimTimeout, metrics: deltas(before, after), fillMetrics: deltas(fillScrape, before),
		projection: rw.projection,
	}
	rec.Read(func(v recorder.View) {
		in.snap = v
		cell = assembleObserved(in)
		if keepSnapshot {
			snap = v.Snapshot()
		}
	})
	asm := time.Since(step)
	step = time.Now()
	passes, err := createPasses(ctx, env.Cluster, ns, t0)
	if err != nil {
		env.Progress.Printf("    could not read the controller's create passes: %v", err)
	}
	phase("controller_log", step)
	step = time.Now()
	events, err := claimEvents(ctx, env.Clients, ns)
	if err != nil {
		env.Progress.Printf("    could not count the Events about claims: %v", err)
	}
	phase("claim_events", step)
	step = time.Now().Add(-asm) // the assemble phase: the read of the records and what follows
	cell = withController(cell, passes, events)
	if ps := cell.Stats.PodStart; ps != nil {
		ps.Placement = wl.Placement
	}
	phase("assemble", step)
	return cell, snap, rw
}

// projectionWindow is the refill projection's window for a cell: at least twice the cell's
// replenish delay, which the controller re-arms on every member drop. A shorter window reads
// such a hold as a rate of 0 and cuts the refill after its first grant, before a refill rate cap
// could bind (measured: the both cell's max-refill-rate of 10/s then saw exactly one bucket of 10
// creates and read "not engaged" in 6 of 8 repetitions).
func projectionWindow(w time.Duration, b results.Brake) time.Duration {
	if w <= 0 {
		return w
	}
	if d, err := time.ParseDuration(b.Normalized().Settings["replenish-delay"]); err == nil && 2*d > w {
		return 2 * d
	}
	return w
}

// installer installs a brake's manifest for a cell (brakes.Cell.Install): each object is
// journaled and its deletion pushed on the cell's reverts before it is created; an object of the
// same name that brakebench did not create is left alone and fails the cell.
func installer(c *kube.Clients, journal *undo.Journal, reverts *undo.Stack, labels map[string]string) func(ctx context.Context, what string, manifest []byte) (int, error) {
	return func(ctx context.Context, what string, manifest []byte) (int, error) {
		objs, err := kube.DecodeYAML(manifest)
		if err != nil {
			return 0, err
		}
		for _, o := range objs {
			gvk := o.GroupVersionKind()
			m, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return 0, err
			}
			existing, err := c.Dynamic.Resource(m.Resource).Get(ctx, o.GetName(), metav1.GetOptions{})
			if err == nil && existing.GetLabels()[kube.ManagedByKey] != kube.ManagedByValue {
				return 0, fmt.Errorf("%s %s already exists and is not brakebench's: not touching it", gvk.Kind, o.GetName())
			}
			if err := journal.Record(undo.Entry{Op: undo.OpCreated, APIVersion: o.GetAPIVersion(), Kind: gvk.Kind, Resource: m.Resource.Resource, Name: o.GetName()}); err != nil {
				return 0, err
			}
			gvr, name := m.Resource, o.GetName()
			reverts.Push(what+" "+name, func(ctx context.Context) error {
				err := c.Dynamic.Resource(gvr).Delete(ctx, name, metav1.DeleteOptions{})
				if apierrors.IsNotFound(err) {
					return nil
				}
				return err
			})
		}
		if err := c.Apply(ctx, objs, labels); err != nil {
			return 0, err
		}
		return len(objs), nil
	}
}

// claimEvents counts the Events about the cell's SandboxClaims (involvedObject.kind SandboxClaim
// in the cell's namespace, each Event's count included): what the claim controller emitted,
// unless told not to (--disable-claim-events). One LIST at the end of the cell, not a watch
// during the burst; nil when it could not be listed.
func claimEvents(ctx context.Context, c *kube.Clients, ns string) (*int, error) {
	list, err := c.Typed.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=SandboxClaim"})
	if err != nil {
		return nil, err
	}
	n := 0
	for _, e := range list.Items {
		switch {
		case e.Series != nil && e.Series.Count > 0:
			n += int(e.Series.Count)
		case e.Count > 0:
			n += int(e.Count)
		default:
			n++
		}
	}
	return &n, nil
}

// prepareCell is every warm-pool cell's start: the recorder, the API server's counters before
// the fill (returned), the template and pool filled, the controller restarted with the cell's
// flags (when they differ from the fill's) and the brakes that act on the cluster applied. ok
// false: cell.Error says what failed.
func prepareCell(ctx context.Context, env *Env, sc *Scope, pc PlannedCell, cell *results.Cell) (rec *recorder.Recorder, fillScrape scrapes, ok bool) {
	wl, c := env.Config.Workload, env.Clients
	ns, labels, log := sc.Namespace, sc.Labels, sc.Timeline
	phase := func(name string, since time.Time) { cell.Phases[name] = time.Since(since).Seconds() }
	step := time.Now()
	rec, err := sc.Recorder(ctx)
	if err != nil {
		cell.Error = err.Error()
		return nil, nil, false
	}
	phase("recorder", step)

	// The API server's request counters before the fill: over-creation shows most when a pool
	// goes from empty to full, so the fill is measured as well as the refill.
	step = time.Now()
	fillScrape = scrapeAll(ctx, env, apiServerOnly(env.Cluster.MetricsTargets()))
	phase("scrape_fill", step)
	// Template and pool first, then claims (a claim created before its template waits a minute).
	fillStart := time.Now()
	objs := BenchObjects(ns, wl.Pool, wl.PodImage(), wl.Placement == "real-node")
	if f, _ := faults.CellFaultNamed(pc.Fault); f != nil {
		if p, ok := f.(faults.Placer); ok {
			if err := placeTemplate(objs[0], func(spec map[string]any) error { return p.PlacePod(env.Config, spec) }); err != nil {
				cell.Error = "place the pool's pods for " + pc.Fault + ": " + err.Error()
				return nil, nil, false
			}
		}
	}
	podSpec, _, _ := unstructured.NestedMap(objs[0].Object, "spec", "podTemplate", "spec")
	if err := c.Apply(ctx, objs, labels); err != nil {
		cell.Error = err.Error()
		return nil, nil, false
	}
	if !rec.WaitFor(ctx, wl.FillTimeout, func() bool { r, _ := rec.PoolReady(PoolName); return r >= int64(wl.Pool) }) {
		r, _ := rec.PoolReady(PoolName)
		cell.Error = fmt.Sprintf("pool did not fill: %d/%d Ready after %s", r, wl.Pool, wl.FillTimeout)
		return nil, nil, false
	}
	cell.Fill = results.Fill{Replicas: wl.Pool, Seconds: time.Since(fillStart).Seconds()}
	phase("fill", fillStart)
	restart := time.Now()
	if !sameFlags(pc.FillFlags, pc.Flags) {
		// Full pool, now the cell's brakes: restart the controller and let it reconcile the pool.
		ctrl := env.Cluster.Controller()
		_, err := ctrl.Configure(ctx, pc.Version, pc.Flags)
		env.collectNotes(ctrl)
		if err != nil {
			cell.Error = "apply the cell's controller flags: " + err.Error()
			return nil, nil, false
		}
		phase("brakes.restart", restart)
		step = time.Now()
		if err := waitReconciled(ctx, env, time.Minute); err != nil {
			cell.Error = err.Error()
			return nil, nil, false
		}
		phase("brakes.ready", step)
	}

	// Brakes that act on the cluster (not through controller flags) act now, full pool, before the burst.
	version := pc.Version
	if version == "" {
		version = env.Versions["agent-sandbox"]
	}
	if err := brakes.FromResult(pc.Brake).Apply(ctx, &brakes.Cell{Version: version, Source: env.Source,
		Install: installer(c, env.Journal, sc.Reverts, labels), Log: log.Add, Namespace: ns, PodSpec: podSpec}); err != nil {
		cell.Error = "apply brake " + err.Error()
		return nil, nil, false
	}
	phase("brakes", restart)
	return rec, fillScrape, true
}

// newGenerator is the cell's load generator, its connections warmed: as the configured identity,
// and classified in APF once per run (a dry-run create, read from the response headers, as
// agent-sandbox's own stress tool checks its calibration).
func newGenerator(ctx context.Context, env *Env, ns string, labels map[string]string) (*loadgen.Generator, error) {
	cfg, c := env.Config, env.Clients
	genCfg := c.Config
	if cfg.Loadgen.Identity == "serviceaccount" {
		var err error
		if genCfg, err = loadgen.ServiceAccountConfig(ctx, c.Config, c.Typed, ns, labels); err != nil {
			return nil, fmt.Errorf("loadgen identity: %w", err)
		}
	}
	if env.APF == nil {
		apf, err := loadgen.CheckAPF(ctx, genCfg, c.Typed, ns, PoolName)
		if err != nil {
			env.Progress.Printf("    could not classify the load generator in APF: %v", err)
		} else {
			env.APF = &apf
			if cfg.Loadgen.Identity == "exempt" && !apf.Exempt() {
				env.Progress.Printf("    warning: the load generator is not APF-exempt (flow schema %s, priority level %s)", apf.FlowSchema, apf.PriorityLevel)
			}
		}
	}
	gen, err := loadgen.NewGenerator(genCfg, cfg.Loadgen.Connections, cfg.Loadgen.QPS, cfg.Loadgen.Burst)
	if err != nil {
		return nil, err
	}
	gen.Namespace, gen.Pool, gen.Prefix, gen.Labels, gen.MaxInFlight = ns, PoolName, "claim-", labels, cfg.Loadgen.MaxInFlight
	if err := gen.Warm(ctx); err != nil {
		return nil, err
	}
	return gen, nil
}

// pushNamespaceTeardown puts the cell's namespace on the cell's reverts, first, so it goes last
// (after the recorder has stopped and every brake and fault revert has run), timed into
// teardown's parts; the runner's own deletion of the namespace, which follows, then finds it gone.
func pushNamespaceTeardown(env *Env, sc *Scope) {
	c, ns := env.Clients, sc.Namespace
	sc.Reverts.Push("namespace "+ns, func(ctx context.Context) error {
		// Emptied by the sweep, the namespace is left there, undeleted: the runner deletes the
		// cells' emptied namespaces together after the last cell (its deletion's ~5 s grace and
		// last pass then overlap no cell).
		opts := teardown.DefaultOptions
		opts.Defer = sc.gate != nil
		tm, err := teardown.DeleteNamespaceWith(ctx, c, ns, 5*time.Minute, opts)
		sc.deferred = tm.Deferred
		if sc.phases != nil {
			sc.phases["teardown.sweep"], sc.phases["teardown.namespace"] = tm.Sweep.Seconds(), tm.Namespace.Seconds()
		}
		if len(tm.Refused) > 0 {
			env.Progress.Printf("    teardown: DeleteCollection refused for %s; the namespace controller deleted them one by one", strings.Join(tm.Refused, ", "))
		}
		return err
	})
}
