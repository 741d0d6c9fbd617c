package suites

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/loadgen"
)

// warmPool is the warm-pool claim experiment; burst and sustained differ only in the schedule.
type warmPool struct {
	name, desc string
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
func (w *warmPool) Brakes() []string    { return config.BrakeCells }
func (w *warmPool) Faults() []string    { return nil }

// brakeFlags are the controller flags of a brake cell.
func brakeFlags(cell string, b config.Brakes) ([]string, results.Brake) {
	var flags []string
	var br results.Brake
	if cell == "replenish-delay" || cell == "both" {
		flags = append(flags, "--sandbox-warm-pool-replenish-delay="+b.ReplenishDelay.String())
		br.ReplenishDelay = b.ReplenishDelay.String()
	}
	if cell == "max-refill-rate" || cell == "both" {
		flags = append(flags, "--sandbox-warm-pool-max-refill-rate="+strconv.FormatFloat(b.MaxRefillRate, 'f', -1, 64))
		br.MaxRefillRate = b.MaxRefillRate
	}
	return flags, br
}

// Plan expands brakes x repetitions and shuffles the order with the (recorded) seed.
func (w *warmPool) Plan(cfg *config.Resolved) (*Plan, error) {
	seed := cfg.Matrix.Seed
	if seed == 0 {
		seed = time.Now().UnixNano()%1_000_000_000 + 1
	}
	p := &Plan{Suite: w.name, Seed: seed}
	for _, b := range cfg.Matrix.Brakes {
		flags, br := brakeFlags(b, cfg.Brakes)
		for rep := 1; rep <= cfg.Matrix.Repetitions; rep++ {
			p.Cells = append(p.Cells, PlannedCell{ID: fmt.Sprintf("%s#%d", b, rep), Name: b, Rep: rep, Version: cfg.Controller.Version, Flags: flags, Brake: br})
		}
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6272616b65))
	rng.Shuffle(len(p.Cells), func(i, j int) { p.Cells[i], p.Cells[j] = p.Cells[j], p.Cells[i] })
	wl := cfg.Workload
	var load string
	switch wl.Mode {
	case "burst":
		load = fmt.Sprintf("%d claims released together", wl.Claims)
	case "poisson":
		load = fmt.Sprintf("Poisson arrivals at %.4g claims/s for %s", wl.Rate, wl.Duration)
	default:
		load = fmt.Sprintf("steps %v claims/s, %s each", wl.Steps, wl.Duration)
	}
	p.Changes = []string{
		fmt.Sprintf("per cell: a namespace bb-<run>-<n> labelled %s, holding a SandboxTemplate, a SandboxWarmPool of %d and the claims; deleted (and waited for) at the end of the cell", "app.kubernetes.io/managed-by=brakebench", wl.Pool),
		"per cell: " + load,
		"per cell: the agent-sandbox controller is restarted (lab) or its Deployment args patched (kind/kubeconfig) with the cell's flags; the original is restored at the end",
	}
	return p, nil
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
	res := &results.Results{
		Schema: results.SchemaVersion, Suite: w.name, RunID: env.RunID, StartedAt: time.Now().UTC(), Seed: plan.Seed,
		Config: cfg.Settings(), Versions: env.Versions, Machine: machine(), Baseline: "none",
	}
	info := env.Cluster.Info()
	res.Cluster = results.Cluster{Provider: info.Provider, Server: info.Server, Context: info.Context}
	if v, err := env.Clients.Typed.Discovery().ServerVersion(); err == nil {
		res.Cluster.ServerVersion = v.GitVersion
	}
	if nodes, err := env.Clients.Typed.CoreV1().Nodes().List(ctx, listAll); err == nil {
		res.Cluster.Nodes = len(nodes.Items)
	}
	// The controller's original setting is restored once, at the end (or on interrupt).
	ctrl := env.Cluster.Controller()
	restored := false
	rng := rand.New(rand.NewPCG(uint64(plan.Seed), 1))
	for i, pc := range plan.Cells {
		if ctx.Err() != nil {
			res.Errors = append(res.Errors, "interrupted before cell "+pc.ID)
			break
		}
		env.Progress.Printf("==> cell %d/%d: %s (flags: %v)", i+1, len(plan.Cells), pc.ID, pc.Flags)
		revert, err := ctrl.Configure(ctx, pc.Version, pc.Flags)
		if !restored {
			env.Reverts.Push("agent-sandbox controller flags", revert)
			restored = true
		}
		if err != nil {
			cell := results.Cell{ID: pc.ID, Name: pc.Name, Rep: pc.Rep, Brake: pc.Brake, Error: "configure controller: " + err.Error()}
			res.Cells = append(res.Cells, cell)
			res.Errors = append(res.Errors, pc.ID+": "+cell.Error)
			continue
		}
		cell := runCell(ctx, env, pc, i, schedule(cfg.Workload, rng))
		version, flags := ctrl.Current()
		cell.Controller = results.Controller{Version: version, Flags: flags}
		res.Cells = append(res.Cells, cell)
		res.CellOrder = append(res.CellOrder, pc.ID)
		if cell.Error != "" {
			res.Errors = append(res.Errors, pc.ID+": "+cell.Error)
		}
		env.Progress.Printf("    %s", oneLine(cell))
	}
	res.Summary = analysis.Summarize(res.Cells, res.Baseline, plan.Seed)
	res.EndedAt = time.Now().UTC()
	return res, nil
}

func oneLine(c results.Cell) string {
	if c.Error != "" {
		return "error: " + c.Error
	}
	s := c.Stats
	return fmt.Sprintf("p50 %.0fms p90 %.0fms p99 %.0fms | warm %d cold %d failed %d | refill create ceiling %.1f/s (5s) | refill %s",
		s.Latency.All.P50, s.Latency.All.P90, s.Latency.All.P99, s.Warm, s.Cold, s.Failed, s.Ceilings.RefillCreate5s, fmtSecs(s.RefillSeconds))
}

func fmtSecs(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.1fs", *p)
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
