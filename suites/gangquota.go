package suites

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/scrape"
	"github.com/brakebench/brakebench/internal/scrape/fetch"
	"github.com/brakebench/brakebench/internal/sut/kueuelws"
	"github.com/brakebench/brakebench/internal/teardown"
	"github.com/brakebench/brakebench/internal/undo"
)

// gangQuota is Kueue's LWSImmutableGroupSize brake: a Kueue-managed LeaderWorkerSet is admitted
// under a GPU quota, then its group size is raised. With the gate on Kueue's webhook must refuse
// the change; with it off the change goes through and the extra pods run outside the quota.
type gangQuota struct{}

// GangQuota is the gang-quota suite.
func GangQuota() Suite { return gangQuota{} }

func (gangQuota) Name() string { return "gang-quota" }
func (gangQuota) Description() string {
	return "Kueue v0.19.1's LWSImmutableGroupSize gate on and off: raise the group size of an admitted LeaderWorkerSet and measure GPUs running against the quota Kueue reserved; raising replicas is the safe path"
}
func (gangQuota) Brakes() []string { return config.GateCells }
func (gangQuota) Faults() []string { return nil }

// Plan is gate arms x repetitions in a seeded random order.
func (gangQuota) Plan(cfg *config.Resolved, _ PlanContext) (*Plan, error) {
	seed := cfg.Matrix.Seed
	if seed == 0 {
		seed = time.Now().UnixNano()%1_000_000_000 + 1
	}
	// On the lab the GPU capacity is configuration: too little of it is bad input, found before
	// the lab is brought up (elsewhere checkGPUCapacity reads the nodes before the first cell).
	g := cfg.GangQuota
	if need := gpusNeeded(g); cfg.Cluster.Provider == "lab" && cfg.Lab.Nodes.Count*cfg.Lab.Nodes.GPUs < need {
		return nil, &config.Error{Source: cfg.Source("lab.nodes.gpus"), Key: "lab.nodes.gpus",
			Msg: fmt.Sprintf("expected at least %d GPUs over the lab's %d nodes (max(replicas x resizeTo, scaleReplicasTo x size) x gpusPerPod, so extra pods are never held back by capacity), got %d per node", need, cfg.Lab.Nodes.Count, cfg.Lab.Nodes.GPUs)}
	}
	p := &Plan{Suite: "gang-quota", Seed: seed, Primary: "arm"}
	for _, arm := range cfg.Matrix.Brakes {
		p.Names = append(p.Names, arm)
		p.addAxes(arm, "arm", arm)
		for rep := 1; rep <= cfg.Matrix.Repetitions; rep++ {
			p.Cells = append(p.Cells, PlannedCell{ID: fmt.Sprintf("%s#%d", arm, rep), Name: arm, Rep: rep,
				Flags: []string{"--feature-gates=" + gateSetting(arm)}})
		}
	}
	p.Baseline = p.Names[0]
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6761_6e67))
	rng.Shuffle(len(p.Cells), func(i, j int) { p.Cells[i], p.Cells[j] = p.Cells[j], p.Cells[i] })
	where := "lab: Kueue and the LeaderWorkerSet controller (built on first use) run as local processes, their CRDs, RBAC and webhooks (URL client configs, lab CA) are installed; the webhooks are removed and both processes stopped at the end"
	if cfg.Cluster.Provider != "lab" {
		where = fmt.Sprintf("%s: the installed Kueue (Deployment %s/%s) gets --feature-gates=%s=true|false patched per arm (needs cluster.allowContext) and its original args back at the end",
			cfg.Cluster.Provider, g.KueueNamespace, g.KueueDeployment, kueuelws.Gate)
	}
	p.Changes = []string{
		where,
		fmt.Sprintf("per cell: a namespace bb-<run>-<n> labelled app.kubernetes.io/managed-by=brakebench with a LocalQueue and a LeaderWorkerSet (replicas %d, size %d, %d GPU(s) per pod); a ResourceFlavor and a ClusterQueue (%d GPUs) named after the namespace; all deleted at the end of the cell",
			g.Replicas, g.Size, g.GPUsPerPod, g.GPUQuota),
		fmt.Sprintf("per cell: once admitted, spec.leaderWorkerTemplate.size %d -> %d, watched %s; then spec.replicas %d -> %d, watched %s", g.Size, g.ResizeTo, g.Observe, g.Replicas, g.ScaleReplicasTo, g.Observe),
	}
	return p, nil
}

func gateSetting(arm string) string {
	return fmt.Sprintf("%s=%t", kueuelws.Gate, arm == "gate-on")
}

// Run executes the arms in plan order.
func (s gangQuota) Run(ctx context.Context, env *Env, plan *Plan) (*results.Results, error) {
	res := newResults(ctx, env, plan, s.Name())
	kc, ok := env.Cluster.(provider.KueueCluster)
	if !ok {
		return nil, fmt.Errorf("cluster provider %s cannot provide Kueue", env.Cluster.Info().Provider)
	}
	if err := checkGPUCapacity(ctx, env); err != nil {
		return nil, err
	}
	kq, restore, err := kc.Kueue(ctx, func(orig []byte) error {
		return env.Journal.Record(undo.Entry{Op: undo.OpChanged, Kind: "Kueue", Ref: "kueue", Original: orig})
	})
	if restore != nil {
		env.Reverts.Push("Kueue feature gates / lab Kueue+LWS", func(ctx context.Context) error {
			if err := restore(ctx); err != nil {
				return err
			}
			return env.Journal.Record(undo.Entry{Op: undo.OpReverted, Ref: "kueue"})
		})
	}
	if err != nil {
		return nil, fmt.Errorf("start or find Kueue: %w", err)
	}
	if env.Versions != nil && kq.Version() != "" {
		env.Versions["kueue"] = kq.Version()
	}
	runCells(ctx, env, plan, res,
		func(pc PlannedCell) string { return "Kueue --feature-gates " + gateSetting(pc.Name) },
		func(ctx context.Context, sc *Scope, pc PlannedCell, idx int) results.Cell {
			return s.runCell(ctx, env, sc, kq, pc)
		},
		func(c results.Cell) string { return c.Gang.Outcome })
	res.Summary = analysis.Summarize(res.Cells, plan.Names, res.Baseline, plan.Seed)
	res.EndedAt = time.Now().UTC()
	return res, nil
}

func (gangQuota) runCell(ctx context.Context, env *Env, sc *Scope, kq provider.Kueue, pc PlannedCell) (cell results.Cell) {
	cfg := env.Config.GangQuota
	c := env.Clients
	ns, labels := sc.Namespace, sc.Labels
	g := &results.Gang{GateOn: pc.Name == "gate-on", QuotaGPUs: cfg.GPUQuota, GPUsPerPod: cfg.GPUsPerPod, Size: cfg.Size, Replicas: cfg.Replicas, KueueVersion: kq.Version()}
	cell.Gang = g

	if err := kq.SetGates(ctx, []string{gateSetting(pc.Name)}); err != nil {
		cell.Error = "set Kueue feature gates: " + err.Error()
		return cell
	}
	g.Gates = kq.Gates()
	cell.Controller = results.Controller{Version: kq.Version(), Flags: []string{"--feature-gates=" + strings.Join(g.Gates, ",")}}

	flavor, cq, lq := kueuelws.Queues(ns, ns, kueuelws.Quota{GPUs: cfg.GPUQuota, CPU: cfg.CPUQuota, Memory: cfg.MemoryQuota})
	lws := kueuelws.LeaderWorkerSet(ns, "gang", lq.GetName(), kueuelws.Group{Replicas: cfg.Replicas, Size: cfg.Size, GPUsPerPod: cfg.GPUsPerPod, Image: env.Config.Workload.Image})
	// Cluster-scoped objects are journaled by name before they exist; the namespace (and the
	// LWS, queue and pods in it) goes with DeleteNamespace.
	for _, o := range []*unstructured.Unstructured{flavor, cq} {
		gvr := kueuelws.ResourceFlavorGVR
		if o.GetKind() == "ClusterQueue" {
			gvr = kueuelws.ClusterQueueGVR
		}
		if err := env.Journal.Record(undo.Entry{Op: undo.OpCreated, APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Resource: gvr.Resource, Name: o.GetName()}); err != nil {
			cell.Error = err.Error()
			return cell
		}
		name := o.GetName()
		sc.Reverts.Push(o.GetKind()+" "+name, func(ctx context.Context) error {
			return teardown.DeleteAndWait(ctx, c, gvr, "", name, 2*time.Minute)
		})
	}
	sc.Reverts.Push("LeaderWorkerSet and namespace "+ns, func(ctx context.Context) error {
		// The LWS and the namespace before the queue and the flavor: pods go before Kueue's queue does.
		_ = teardown.DeleteAndWait(ctx, c, kueuelws.LWSGVR, ns, lws.GetName(), 2*time.Minute)
		return teardown.DeleteNamespace(ctx, c, ns, 5*time.Minute)
	})
	tr, err := startGangTracker(ctx, c, ns, cq.GetName(), lws.GetName())
	if err != nil {
		cell.Error = err.Error()
		return cell
	}
	defer tr.stop()
	if err := c.Apply(ctx, []*unstructured.Unstructured{flavor, cq, lq}, labels); err != nil {
		cell.Error = err.Error()
		return cell
	}
	t0 := time.Now()
	tr.start(t0)
	if err := c.Apply(ctx, []*unstructured.Unstructured{lws}, labels); err != nil {
		cell.Error = "create LeaderWorkerSet: " + err.Error()
		return cell
	}
	want := cfg.Replicas * cfg.Size
	if !tr.waitFor(ctx, cfg.AdmitTimeout, func(s results.GangSample) bool {
		return s.WorkloadsAdmitted >= cfg.Replicas && s.PodsRunning >= want
	}) {
		s := tr.now()
		cell.Error = fmt.Sprintf("LeaderWorkerSet not admitted and running within %s: %d/%d workloads admitted, %d/%d pods running, %d gated", cfg.AdmitTimeout, s.WorkloadsAdmitted, cfg.Replicas, s.PodsRunning, want, s.PodsGated)
		g.Samples = tr.samples()
		return cell
	}
	adm := time.Since(t0).Seconds()
	g.AdmittedSeconds = &adm

	steps := []struct{ name, change, patch string }{
		{"resize", fmt.Sprintf("spec.leaderWorkerTemplate.size %d -> %d", cfg.Size, cfg.ResizeTo), fmt.Sprintf(`{"spec":{"leaderWorkerTemplate":{"size":%d}}}`, cfg.ResizeTo)},
		{"scale-replicas", fmt.Sprintf("spec.replicas %d -> %d", cfg.Replicas, cfg.ScaleReplicasTo), fmt.Sprintf(`{"spec":{"replicas":%d}}`, cfg.ScaleReplicasTo)},
	}
	for _, st := range steps {
		step := results.GangStep{Name: st.name, Change: st.change, T: time.Since(t0).Seconds()}
		from := len(tr.samples())
		_, err := c.Dynamic.Resource(kueuelws.LWSGVR).Namespace(ns).Patch(ctx, lws.GetName(), types.MergePatchType, []byte(st.patch), metav1.PatchOptions{FieldManager: kube.FieldManager})
		step.Accepted = err == nil
		if err != nil {
			if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
				cell.Error = st.name + ": " + err.Error()
				g.Samples = tr.samples()
				return cell
			}
			step.Error = err.Error()
		}
		tr.sleep(ctx, cfg.Observe)
		window := tr.samples()[from:]
		for _, s := range window {
			step.PeakPodsRunning = max(step.PeakPodsRunning, s.PodsRunning)
			step.PeakGPUsRunning = max(step.PeakGPUsRunning, s.GPUsRunning)
			step.PeakReserved = max(step.PeakReserved, s.ReservedGPUs)
		}
		step.End = tr.now()
		step.Workloads = tr.workloadConditions()
		if m := kq.Metrics(); m != nil {
			series, err := fetch.Metrics(ctx, c.Config, fetch.Target{Component: m.Component, URL: m.URL, Insecure: m.Insecure, BearerToken: m.BearerToken})
			if err != nil {
				step.KueueMetricError = err.Error()
			} else {
				match := map[string]string{"cluster_queue": cq.GetName(), "resource": kueuelws.GPUResource}
				if v, n := scrape.SumN(series, "kueue_cluster_queue_resource_usage", match); n > 0 {
					step.KueueUsageMetric = &v
				} else {
					step.KueueMetricError = fmt.Sprintf("Kueue exports no kueue_cluster_queue_resource_usage series for cluster_queue=%s", cq.GetName())
				}
			}
		}
		g.Steps = append(g.Steps, step)
		env.Progress.Printf("    %s: %s; peak %d GPUs running (Kueue reserved up to %d, quota %d)", st.change, acceptedWord(step), step.PeakGPUsRunning, step.PeakReserved, cfg.GPUQuota)
		if ctx.Err() != nil {
			break
		}
	}
	g.Samples = tr.samples()
	summarizeGang(g)
	return cell
}

// checkGPUCapacity makes sure the nodes could run every pod the experiment may create: an arm
// whose extra pods merely wait for GPUs would look like a brake that held.
func checkGPUCapacity(ctx context.Context, env *Env) error {
	g := env.Config.GangQuota
	need := gpusNeeded(g)
	nodes, err := env.Clients.Typed.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	have := int64(0)
	for _, n := range nodes.Items {
		if q, ok := n.Status.Allocatable[corev1.ResourceName(kueuelws.GPUResource)]; ok {
			have += q.Value()
		}
	}
	if have < int64(need) {
		return fmt.Errorf("gang-quota needs %d allocatable %s on the nodes (max(replicas x resizeTo, scaleReplicasTo x size) x gpusPerPod) so extra pods are never held back by capacity; the cluster has %d. On the lab: brakebench lab down, then run again (the suite sets lab.nodes.gpus=8) or --set lab.nodes.gpus=N",
			need, kueuelws.GPUResource, have)
	}
	return nil
}

// gpusNeeded is the most GPUs the experiment's pods may request at once.
func gpusNeeded(g config.GangQuota) int {
	return max(g.Replicas*g.ResizeTo, g.ScaleReplicasTo*g.Size) * g.GPUsPerPod
}

func acceptedWord(s results.GangStep) string {
	if s.Accepted {
		return "accepted"
	}
	return "rejected: " + s.Error
}

// summarizeGang fills the cell-wide peaks and the one-line outcome from the samples.
func summarizeGang(g *results.Gang) {
	for i, s := range g.Samples {
		if ex := s.GPUsRunning - s.ReservedGPUs; ex > 0 {
			g.PeakUnreservedGPUs = max(g.PeakUnreservedGPUs, ex)
			if i+1 < len(g.Samples) {
				g.UnreservedSeconds += g.Samples[i+1].T - s.T
			}
		}
		if s.GPUsRunning > g.PeakGPUsRunning {
			g.PeakGPUsRunning = s.GPUsRunning
			g.BypassRatio = 0
			if s.ReservedGPUs > 0 {
				g.BypassRatio = float64(s.GPUsRunning) / float64(s.ReservedGPUs)
			}
		}
		g.PeakReserved = max(g.PeakReserved, s.ReservedGPUs)
	}
	g.OverQuotaGPUs = max(0, g.PeakGPUsRunning-g.QuotaGPUs)
	var resize *results.GangStep
	for i := range g.Steps {
		if g.Steps[i].Name == "resize" {
			resize = &g.Steps[i]
		}
	}
	switch {
	case resize == nil:
		g.Outcome = "the resize step did not run"
	case !resize.Accepted:
		g.Outcome = fmt.Sprintf("size update rejected (%s); GPUs running peaked at %d, quota %d", shortAdmission(resize.Error), g.PeakGPUsRunning, g.QuotaGPUs)
	case g.OverQuotaGPUs > 0:
		g.Outcome = fmt.Sprintf("size update accepted; GPUs running peaked at %d against a quota of %d (Kueue reserved %d then): %d over quota, bypass ratio %.2f",
			g.PeakGPUsRunning, g.QuotaGPUs, reservedAtPeak(g), g.OverQuotaGPUs, g.BypassRatio)
	default:
		g.Outcome = fmt.Sprintf("size update accepted but GPUs running never exceeded the quota (peak %d, quota %d); at the end of the window %d pods running, %d gated, Kueue reserved %d GPUs",
			g.PeakGPUsRunning, g.QuotaGPUs, resize.End.PodsRunning, resize.End.PodsGated, resize.End.ReservedGPUs)
		if g.PeakUnreservedGPUs > 0 {
			g.Outcome += fmt.Sprintf("; up to %d GPUs ran without a Kueue reservation for %.1f s", g.PeakUnreservedGPUs, g.UnreservedSeconds)
		}
		if finished := finishedWorkloads(resize.Workloads); finished != "" {
			g.Outcome += "; " + finished
		}
	}
}

// finishedWorkloads names the Workloads Kueue finished during a step (what happens instead of
// the bypass when Kueue treats the resized group as out of sync with its Workload).
func finishedWorkloads(states []string) string {
	var out []string
	for _, s := range states {
		name, conds, _ := strings.Cut(s, ": ")
		for _, c := range strings.Split(conds, "; ") {
			if strings.HasPrefix(c, "Finished ") {
				out = append(out, "Workload "+name+" went "+c)
			}
		}
	}
	return strings.Join(out, "; ")
}

func reservedAtPeak(g *results.Gang) int {
	for _, s := range g.Samples {
		if s.GPUsRunning == g.PeakGPUsRunning {
			return s.ReservedGPUs
		}
	}
	return 0
}

// shortAdmission keeps the admission webhook's message (after "denied the request: ").
func shortAdmission(msg string) string {
	if _, after, ok := strings.Cut(msg, "denied the request: "); ok {
		return after
	}
	return msg
}
