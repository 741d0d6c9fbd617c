package suites

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/brakebench/brakebench/faults"
	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/brakes"
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
	"github.com/brakebench/brakebench/internal/undo"
	"github.com/brakebench/brakebench/loadgen"
)

// warmPool is the warm-pool claim experiment. The suites built on it differ only in their
// default configuration (configs/suites/<name>.yaml): schedule, brakes, faults.
type warmPool struct {
	name, desc string
	faults     []string
}

// WarmpoolBurst is the seeds' 300-claim warm-adoption benchmark with and without refill brakes.
func WarmpoolBurst() Suite {
	return &warmPool{name: "warmpool-burst", desc: "N claims released together at a full warm pool: claim latency and refill create ceilings, with and without agent-sandbox's refill brakes"}
}

// WarmpoolSustained is Poisson arrivals below the sustainable rate, where the delay brake drains the pool.
func WarmpoolSustained() Suite {
	return &warmPool{name: "warmpool-sustained", desc: "Poisson claim arrivals for a fixed time below the sustainable rate: where replenish-delay drains the pool and max-refill-rate holds"}
}

func (w *warmPool) Name() string        { return w.name }
func (w *warmPool) Description() string { return w.desc }
func (w *warmPool) Brakes() []string    { return brakes.Items(nil) }
func (w *warmPool) Faults() []string    { return w.faults }

// APFThrottle is the burst with the controller squeezed into a tiny APF priority level.
func APFThrottle() Suite {
	return &warmPool{name: "apf-throttle", faults: []string{"apf-throttle"},
		desc: "the burst with and without the controller's requests squeezed into an APF priority level of a few seats: APF wait, claim latency, refill"}
}

// GPUFaults is the burst while GPU nodes fail (simulated XID/ECC/NVLink faults).
func GPUFaults() Suite {
	return &warmPool{name: "gpu-faults", faults: []string{"gpu"},
		desc: "DCGM-style GPU faults on warm-pool nodes during the burst: node condition, taint eviction, lost warm sandboxes, refill, repair-safety invariants"}
}

// Plan expands versions x brakes x controller-arg sets x repetitions and shuffles the order with
// the (recorded) seed. A brake cell whose controller version lacks the brake's flag is planned as
// not applicable, never run without the flag.
func (w *warmPool) Plan(cfg *config.Resolved, pc PlanContext) (*Plan, error) {
	seed := cfg.Matrix.Seed
	if seed == 0 {
		seed = time.Now().UnixNano()%1_000_000_000 + 1
	}
	p := &Plan{Suite: w.name, Seed: seed, Primary: "brake"}
	versions := cfg.Controller.Versions
	if len(versions) == 0 {
		versions = []string{cfg.Controller.Version}
	}
	argSets := cfg.Matrix.ControllerArgs
	if len(argSets) == 0 {
		argSets = []string{""}
	}
	// Every version must be obtainable before anything runs (a refused or corrupt module version
	// is bad input, not a failure in the middle of a run).
	if pc.Source != nil {
		for _, v := range versions {
			if _, err := pc.Source(v); err != nil {
				return nil, err
			}
		}
	}
	for _, name := range cfg.Matrix.Faults {
		f, ok := faults.CellFaultNamed(name)
		if !ok {
			return nil, &config.Error{Source: cfg.Source("matrix.faults"), Key: "matrix.faults",
				Msg: fmt.Sprintf("expected items from none, %s; got %q", strings.Join(faults.CellFaultNames(), ", "), name)}
		}
		if pre, ok := f.(faults.Prechecker); ok {
			if err := pre.Precheck(cfg); err != nil {
				return nil, err
			}
		}
	}
	type axis struct{ v, b, set, fault string }
	var axes []axis
	for _, v := range versions {
		for _, b := range cfg.Matrix.Brakes {
			for _, set := range argSets {
				for _, f := range cfg.Matrix.Faults {
					axes = append(axes, axis{v, b, set, f})
				}
			}
		}
	}
	copies := map[axis]int{}
	for _, ax := range axes {
		v, b, set, fault := ax.v, ax.b, ax.set, ax.fault
		combo, err := brakes.Resolve(cfg, b, nil)
		if err != nil {
			return nil, err
		}
		flags, br := combo.Flags(), combo.Result()
		name := b
		// A/A: the k-th copy of an identical cell is named b_k.
		if copies[ax]++; copies[ax] > 1 {
			name += fmt.Sprintf("_%d", copies[ax])
		}
		if len(versions) > 1 {
			name += "@" + v
		}
		if len(argSets) > 1 {
			name += "+" + argSetLabel(set)
		}
		if fault != "none" {
			name += "/" + fault
		}
		na, err := combo.NotApplicable(v, pc.Supports, pc.Source)
		if err != nil {
			return nil, err
		}
		f, _ := faults.CellFaultNamed(fault)
		if f != nil && na == "" {
			na = f.NotApplicable(cfg)
		}
		if _, placed := f.(faults.Placer); na == "" && !placed {
			for _, part := range combo.Parts {
				if _, shaped := part.Brake.(brakes.PodShaped); shaped {
					na = part.Brake.Name() + " is headroom on a Karpenter NodePool, and this cell's pool is on the lab's own nodes (combine it with the node-repair or node-repair-blocked fault)"
				}
			}
		}
		extra := strings.Fields(set)
		if na == "" {
			if na, err = argsNotApplicable(v, extra, cfg.Controller.Args, pc); err != nil {
				return nil, err
			}
		}
		fillFlags := extra
		flags = append(flags, extra...)
		if cfg.Workload.FillWithBrakes {
			fillFlags = flags
		}
		p.Names = append(p.Names, name)
		p.addAxes(name, "brake", b, "copy", strconv.Itoa(copies[ax]), "version", axisVersion(v), "args", argSetLabel(set), "fault", fault)
		if p.Baseline == "" && b == "none" && fault == "none" {
			p.Baseline = name
		}
		for rep := 1; rep <= cfg.Matrix.Repetitions; rep++ {
			p.Cells = append(p.Cells, PlannedCell{ID: fmt.Sprintf("%s#%d", name, rep), Name: name, Rep: rep, Version: v, Flags: flags, FillFlags: fillFlags, Brake: br, Fault: fault, NotApplicable: na})
		}
	}
	if p.Baseline == "" {
		p.Baseline = p.Names[0]
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6272616b65))
	// A ceiling cell's verdict is its search's bracket, not claim latency: the sequential rule's
	// stopping metrics do not apply, so every cell gets matrix.repetitions searches.
	if p.Design = sequentialDesign(cfg.Matrix); p.Design != nil && cfg.Workload.Mode != "ceiling" {
		p.Cells = inRounds(p.Cells, rng)
	} else {
		p.Design = nil
		rng.Shuffle(len(p.Cells), func(i, j int) { p.Cells[i], p.Cells[j] = p.Cells[j], p.Cells[i] })
	}
	wl := cfg.Workload
	var load string
	switch wl.Mode {
	case "burst":
		load = fmt.Sprintf("%d claims released together", wl.Claims)
	case "poisson":
		load = fmt.Sprintf("Poisson arrivals at %.4g claims/s for %s", wl.Rate, wl.Duration)
	case "ceiling":
		c := wl.Ceiling
		load = fmt.Sprintf("a ceiling search: Poisson arrivals for %s per probe from %.4g claims/s (x%.4g, at most %.4g), then bisection to within %.0f%%, at most %d probes; each probe's claims deleted before the next",
			c.Probe, c.Start, c.Factor, c.Max, 100*c.Tolerance, c.MaxProbes)
	default:
		load = fmt.Sprintf("steps of %s claims/s, %s each", joinFloats(wl.Steps), wl.Duration)
	}
	p.Changes = []string{
		fmt.Sprintf("per cell: a namespace bb-<run>-<n> labelled %s, holding a SandboxTemplate, a SandboxWarmPool of %d and the claims; deleted (and waited for) at the end of the cell", "app.kubernetes.io/managed-by=brakebench", wl.Pool),
		"per cell: " + load,
		"per cell: the agent-sandbox controller is restarted (lab) or its Deployment args/image patched (kind/kubeconfig) with the cell's version and flags; the original is restored at the end",
	}
	for _, name := range cfg.Matrix.Faults {
		if f, _ := faults.CellFaultNamed(name); f != nil {
			p.Changes = append(p.Changes, f.Change(cfg))
		}
	}
	return p, nil
}

// axisVersion is a cell's version axis value ("pinned": the version configs/versions.yaml pins).
func axisVersion(v string) string {
	if v == "" {
		return "pinned"
	}
	return v
}

// versionName names a cell's controller version in progress lines: "" is the run's pinned
// version (env.Versions["agent-sandbox"]), named as such only when that is unknown.
func versionName(v, pinned string) string {
	switch {
	case v != "":
		return v
	case pinned != "":
		return pinned
	}
	return "(pinned version)"
}

// argSetLabel names a controller-arg set in a cell name.
func argSetLabel(set string) string {
	if strings.TrimSpace(set) == "" {
		return "defaults"
	}
	var parts []string
	for _, f := range strings.Fields(set) {
		parts = append(parts, strings.TrimPrefix(f, "--"))
	}
	return strings.Join(parts, ",")
}

// schedule builds the claim send schedule of the configured workload.
func schedule(wl config.Workload, rng *rand.Rand) loadgen.Schedule {
	switch wl.Mode {
	case "poisson":
		return loadgen.Poisson(wl.Rate, wl.Duration, rng)
	case "steps":
		return loadgen.Steps(wl.Steps, wl.Duration)
	}
	return loadgen.Burst(wl.Claims)
}

// Run executes every planned cell in order and summarizes them.
func (w *warmPool) Run(ctx context.Context, env *Env, plan *Plan) (*results.Results, error) {
	cfg := env.Config
	res := newResults(ctx, env, plan, w.name)
	if err := prepareVersions(ctx, env, plan); err != nil {
		return nil, err
	}
	if err := prepareFaults(ctx, env, plan); err != nil {
		return nil, err
	}
	// The controller's original setting is restored once, at the end (or on interrupt).
	ctrl := env.Cluster.Controller()
	restored := false
	rng := rand.New(rand.NewPCG(uint64(plan.Seed), 1))
	runCells(ctx, env, plan, res,
		func(pc PlannedCell) string {
			return fmt.Sprintf("version %s, flags: %s", versionName(pc.Version, env.Versions["agent-sandbox"]), flagList(pc.Flags))
		},
		func(ctx context.Context, sc *Scope, pc PlannedCell, idx int) results.Cell {
			var cell results.Cell
			if err := configureController(ctx, env, pc.Version, pc.FillFlags, &restored); err != nil {
				cell = results.Cell{Brake: pc.Brake, Fault: pc.Fault, Error: "configure controller: " + err.Error()}
			} else if cfg.Workload.Mode == "ceiling" {
				cell = runCeilingCell(ctx, env, sc, pc, rng)
			} else {
				cell = runCell(ctx, env, sc, pc, idx, schedule(cfg.Workload, rng))
			}
			version, flags := ctrl.Current()
			cell.Controller = results.Controller{Version: version, Flags: flags}
			return cell
		}, oneLine)
	res.Summary, res.Design = analysis.SummarizeDesign(res.Cells, plan.Names, res.Baseline, plan.Seed, plan.Design), plan.Design
	res.Loadgen = results.Loadgen{Identity: cfg.Loadgen.Identity, Connections: cfg.Loadgen.Connections, QPS: cfg.Loadgen.QPS, MaxInFlight: cfg.Loadgen.MaxInFlight, Runner: cfg.Loadgen.Runner}
	if env.APF != nil {
		res.Loadgen.FlowSchema, res.Loadgen.PriorityLevel = env.APF.FlowSchema, env.APF.PriorityLevel
	}
	res.Notes = append(res.Notes, env.notes...)
	res.EndedAt = time.Now().UTC()
	return res, nil
}

// argsNotApplicable says which of a cell's extra controller args (matrix.controllerArgs) and the
// baseline args (controller.args) the controller at version does not define: such a cell is not
// applicable (a controller given an undefined flag exits at start with its usage).
// A value the flag's kind cannot parse is an error (bad input): no version could run it.
func argsNotApplicable(version string, extra, base []string, pc PlanContext) (string, error) {
	if pc.Supports == nil {
		return "", nil
	}
	name := version
	if name == "" {
		name = "(pinned version)"
	}
	for _, set := range []struct {
		key  string
		args []string
	}{{"matrix.controllerArgs", extra}, {"controller.args", base}} {
		for _, a := range set.args {
			if !strings.HasPrefix(a, "-") {
				continue
			}
			flag := agentsandbox.FlagName(a)
			ok, err := pc.Supports(version, flag)
			if err != nil {
				return "", err
			}
			if !ok {
				return fmt.Sprintf("agent-sandbox %s has no --%s (%s)", name, flag, set.key), nil
			}
			if pc.CheckArg == nil {
				continue
			}
			if bad, err := pc.CheckArg(version, a); err != nil {
				return "", err
			} else if bad != "" {
				return "", fmt.Errorf("%s: %s (agent-sandbox %s's controller would exit at start)", set.key, bad, name)
			}
		}
	}
	return "", nil
}

// configureController gives the agent-sandbox controller version and flags. The first call of a
// run (*registered false) journals the original setting before changing it and registers its
// restoration, which runs once at the end of the run (or on interrupt).
func configureController(ctx context.Context, env *Env, version string, flags []string, registered *bool) error {
	ctrl := env.Cluster.Controller()
	if !*registered {
		v0, f0 := ctrl.Current()
		if err := env.Journal.Record(undo.Entry{Op: undo.OpController, Ref: "controller", Original: mustJSON(controllerOriginal{v0, f0})}); err != nil {
			return err
		}
	}
	revert, err := ctrl.Configure(ctx, version, flags)
	env.collectNotes(ctrl)
	if revert == nil { // a provider that returned none: nothing to undo here (the journal still has the original)
		revert = func(context.Context) error { return nil }
	}
	if !*registered {
		env.Reverts.Push("agent-sandbox controller flags", func(ctx context.Context) error {
			if err := revert(ctx); err != nil {
				return err
			}
			return env.Journal.Record(undo.Entry{Op: undo.OpReverted, Ref: "controller"})
		})
		*registered = true
	}
	return err
}

// newResults starts a suite's results: provenance, cluster description and machine.
func newResults(ctx context.Context, env *Env, plan *Plan, suite string) *results.Results {
	res := &results.Results{
		Schema: results.SchemaVersion, Suite: suite, RunID: env.RunID, StartedAt: time.Now().UTC(), Seed: plan.Seed,
		Config: env.Config.Settings(), Versions: env.Versions, Machine: machine(), Baseline: plan.Baseline,
	}
	res.Cluster = provider.Describe(ctx, env.Clients.Typed, env.Cluster.Info())
	return res
}

// prepareVersions builds every controller version the plan's runnable cells use, before the
// first cell (on clusters that build them: the lab).
func prepareVersions(ctx context.Context, env *Env, plan *Plan) error {
	vp, ok := env.Cluster.(provider.VersionPreparer)
	if !ok {
		return nil
	}
	seen := map[string]bool{}
	var versions []string
	for _, c := range plan.Cells {
		if c.NotApplicable == "" && !seen[c.Version] {
			seen[c.Version] = true
			versions = append(versions, c.Version)
		}
	}
	return vp.PrepareVersions(ctx, versions)
}

// prepareFaults gives each fault type the plan's runnable cells use its run-wide setup (the GPU
// fault's dcgm-exporter) before the first cell.
func prepareFaults(ctx context.Context, env *Env, plan *Plan) error {
	done := map[string]bool{}
	r := &faults.Run{Config: env.Config, Clients: env.Clients, Cluster: env.Cluster, Journal: env.Journal, RunID: env.RunID,
		Reverts: env.Reverts, Printf: env.Progress.Printf}
	for _, c := range plan.Cells {
		f, _ := faults.CellFaultNamed(c.Fault)
		if f == nil || c.NotApplicable != "" || done[c.Fault] {
			continue
		}
		done[c.Fault] = true
		if p, ok := f.(faults.Preparer); ok {
			if err := p.Prepare(ctx, r); err != nil {
				return fmt.Errorf("prepare %s cells: %w", c.Fault, err)
			}
		}
	}
	env.DCGM, env.Karpenter = r.DCGM, r.Karpenter
	if r.Karpenter != nil && env.Versions != nil {
		env.Versions["karpenter"] = r.Karpenter.Version
	}
	return nil
}

// controllerOriginal is the journaled setting of the controller before a run changed it.
type controllerOriginal struct {
	Version string   `json:"version"`
	Flags   []string `json:"flags"`
}

func mustJSON(v any) []byte {
	raw, _ := json.Marshal(v)
	return raw
}

func oneLine(c results.Cell) string {
	if c.Error != "" {
		return "error: " + c.Error
	}
	s := c.Stats
	line := fmt.Sprintf("p50 %.0fms p90 %.0fms p99 %.0fms | warm %d cold %d failed %d | refill create ceiling %.1f/s (5s) | refill %s",
		s.Latency.All.P50, s.Latency.All.P90, s.Latency.All.P99, s.Warm, s.Cold, s.Failed, s.Ceilings.RefillCreate5s, results.FormatSecs(s.RefillSeconds))
	if w := s.Writes; w != nil {
		line += fmt.Sprintf(" | writes/claim %.2f, 409/claim %.2f", w.TotalPerClaim, w.ConflictsPerClaim)
	}
	return line
}

func machine() results.Machine {
	h, _ := os.Hostname()
	m := results.Machine{Hostname: h, CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(raw), "MemTotal: %d kB", &kb); err == nil {
			m.MemoryMiB = kb / 1024
		}
	}
	return m
}

func joinFloats(fs []float64) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strings.Join(parts, ", ")
}
