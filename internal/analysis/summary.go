// Package analysis turns cells into the numbers users compare: per-cell summaries over
// repetitions (median, bootstrap CI) and comparisons against a baseline cell or another run
// (delta, CI, Mann-Whitney p, "~" when not significant).
package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/brakebench/brakebench/internal/catalog"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/stats"
)

const (
	bootstrapIters = 2000
	confidence     = 0.95
	alpha          = 0.05
)

// metricDef is one summarized number. Latency quantiles pool the claims of every repetition
// (pooled); everything else is one value per repetition, summarized by its median.
type metricDef struct {
	key, unit string
	// kind is the kind of cell the metric describes: "" warm-pool claim cells, "gang" gang-quota
	// cells, "autoscale" pool-autoscaling cells.
	kind   string
	rep    func(c *results.Cell) float64
	pooled func(c *results.Cell) []float64
	p      float64 // the nearest-rank percentile of a pooled metric
}

func latencies(filter string) func(c *results.Cell) []float64 {
	return func(c *results.Cell) []float64 {
		var out []float64
		for _, cl := range c.Claims {
			switch {
			case cl.Failed && filter == "":
				out = append(out, math.Inf(1))
			case cl.LatencyMS != nil && (filter == "" || cl.LaunchType == filter):
				out = append(out, *cl.LatencyMS)
			}
		}
		return out
	}
}

// MetricDefs are the summary rows of a warm-pool suite, in display order.
var baseDefs = []metricDef{
	{key: "claim.p50_ms", unit: "ms", pooled: latencies(""), p: 50},
	{key: "claim.p90_ms", unit: "ms", pooled: latencies(""), p: 90},
	{key: "claim.p99_ms", unit: "ms", pooled: latencies(""), p: 99},
	{key: "claim.warm.p50_ms", unit: "ms", pooled: latencies("warm"), p: 50},
	{key: "claim.cold.p50_ms", unit: "ms", pooled: latencies("cold"), p: 50},
	{key: "claims.warm", unit: "claims", rep: func(c *results.Cell) float64 { return float64(c.Stats.Warm) }},
	{key: "claims.cold", unit: "claims", rep: func(c *results.Cell) float64 { return float64(c.Stats.Cold) }},
	{key: "claims.failed", unit: "claims", rep: func(c *results.Cell) float64 { return float64(c.Stats.Failed) }},
	// The ceiling search's highest sustained rate of a repetition (workload.mode ceiling): the
	// rate each repetition showed the criteria hold at (0: none held; its bracket's upper end
	// is in stats.sustained, the interval over repetitions in summary[].sustained).
	{key: "ceiling.claims_per_second", unit: "claims/s", rep: func(c *results.Cell) float64 {
		if c.Stats.Sustained == nil {
			return math.NaN()
		}
		return float64(c.Stats.Sustained.Pass)
	}},
	{key: "ceiling.sandbox_create_1s", unit: "/s", rep: func(c *results.Cell) float64 { return c.Stats.Ceilings.SandboxCreate1s }},
	{key: "ceiling.sandbox_create_5s", unit: "/s", rep: func(c *results.Cell) float64 { return c.Stats.Ceilings.SandboxCreate5s }},
	{key: "ceiling.refill_create_1s", unit: "/s", rep: func(c *results.Cell) float64 { return c.Stats.Ceilings.RefillCreate1s }},
	{key: "ceiling.refill_create_5s", unit: "/s", rep: func(c *results.Cell) float64 { return c.Stats.Ceilings.RefillCreate5s }},
	{key: "ceiling.pod_create_1s", unit: "/s", rep: func(c *results.Cell) float64 { return c.Stats.Ceilings.PodCreate1s }},
	{key: "ceiling.pod_create_5s", unit: "/s", rep: func(c *results.Cell) float64 { return c.Stats.Ceilings.PodCreate5s }},
	{key: "ceiling.pod_schedule_1s", unit: "/s", rep: func(c *results.Cell) float64 { return c.Stats.Ceilings.PodSchedule1s }},
	{key: "ceiling.pod_schedule_5s", unit: "/s", rep: func(c *results.Cell) float64 { return c.Stats.Ceilings.PodSchedule5s }},
	{key: "ceiling.pod_ready_5s", unit: "/s", rep: func(c *results.Cell) float64 { return c.Stats.Ceilings.PodReady5s }},
	{key: "pool.fill_s", unit: "s", rep: func(c *results.Cell) float64 { return c.Fill.Seconds }},
	{key: "pool.refill_start_s", unit: "s", rep: func(c *results.Cell) float64 { return results.OrNaN(c.Stats.RefillStartSeconds) }},
	{key: "pool.refill_s", unit: "s", rep: func(c *results.Cell) float64 { return results.OrNaN(c.Stats.RefillSeconds) }},
	{key: "loadgen.send_lag_p99_ms", unit: "ms", rep: func(c *results.Cell) float64 { return c.Stats.SendLagMS.P99 }},
	{key: "controller.claim_startup_p50_ms", unit: "ms", rep: func(c *results.Cell) float64 {
		if c.Stats.ControllerLatencyMS == nil {
			return math.NaN()
		}
		return c.Stats.ControllerLatencyMS.P50
	}},
	{key: "controller.claim_startup_p99_ms", unit: "ms", rep: func(c *results.Cell) float64 {
		if c.Stats.ControllerLatencyMS == nil {
			return math.NaN()
		}
		return c.Stats.ControllerLatencyMS.P99
	}},
	{key: "podstart.schedule_p50_ms", unit: "ms", rep: podStart(func(p *results.PodStart) float64 { return p.Schedule.P50 })},
	{key: "podstart.run_p50_ms", unit: "ms", rep: podStart(func(p *results.PodStart) float64 { return p.Run.P50 })},
	{key: "podstart.ready_p50_ms", unit: "ms", rep: podStart(func(p *results.PodStart) float64 { return p.Ready.P50 })},
	{key: "podstart.total_p50_ms", unit: "ms", rep: podStart(func(p *results.PodStart) float64 { return p.CreateToReady.P50 })},
	{key: "correctness.refill_creates_per_slot", unit: "ratio", rep: func(c *results.Cell) float64 { return results.OrNaN(c.Stats.Correctness.RefillCreatesPerSlot) }},
	{key: "correctness.pod_creates_per_sandbox", unit: "ratio", rep: func(c *results.Cell) float64 { return results.OrNaN(c.Stats.Correctness.PodCreatesPerSandbox) }},
	{key: "correctness.pool_excess_max", unit: "sandboxes", rep: func(c *results.Cell) float64 { return float64(c.Stats.Correctness.PoolExcessMax) }},
	{key: "correctness.fill_creates_per_slot", unit: "ratio", rep: func(c *results.Cell) float64 { return results.OrNaN(c.Stats.Correctness.FillCreatesPerSlot) }},
	{key: "correctness.fill_api_creates_per_slot", unit: "ratio", rep: func(c *results.Cell) float64 { return results.OrNaN(c.Stats.Correctness.FillAPICreatesPerSlot) }},
	{key: "correctness.fill_api_deletes", unit: "requests", rep: func(c *results.Cell) float64 { return results.OrNaN(c.Stats.Correctness.FillAPIDeletes) }},
	{key: "correctness.refill_api_creates_per_slot", unit: "ratio", rep: func(c *results.Cell) float64 { return results.OrNaN(c.Stats.Correctness.RefillAPICreatesPerSlot) }},
	{key: "correctness.refill_api_deletes", unit: "requests", rep: func(c *results.Cell) float64 { return results.OrNaN(c.Stats.Correctness.RefillAPIDeletes) }},
	{key: "correctness.double_bound", unit: "sandboxes", rep: func(c *results.Cell) float64 { return float64(c.Stats.Correctness.DoubleBound) }},
	{key: "correctness.orphans", unit: "sandboxes", rep: func(c *results.Cell) float64 { return float64(c.Stats.Correctness.Orphans) }},
	{key: "cpu.kube-apiserver_s", unit: "s", rep: func(c *results.Cell) float64 { return cpu(c, "kube-apiserver") }},
	{key: "efficiency.claims_per_apiserver_cpu_s", unit: "claims/cpu-s", rep: func(c *results.Cell) float64 {
		return float64(c.Stats.Total) / cpu(c, "kube-apiserver")
	}},
	{key: "cpu.agent-sandbox-controller_s", unit: "s", rep: func(c *results.Cell) float64 { return cpu(c, "agent-sandbox-controller") }},

	{kind: "gang", key: "gang.quota_gpus", unit: "gpus", rep: func(c *results.Cell) float64 { return float64(c.Gang.QuotaGPUs) }},
	{kind: "gang", key: "gang.admitted_s", unit: "s", rep: func(c *results.Cell) float64 { return results.OrNaN(c.Gang.AdmittedSeconds) }},
	{kind: "gang", key: "gang.resize_accepted", unit: "bool", rep: func(c *results.Cell) float64 {
		return gangStep(c, "resize", func(s results.GangStep) float64 { return b2f(s.Accepted) })
	}},
	{kind: "gang", key: "gang.scale_replicas_accepted", unit: "bool", rep: func(c *results.Cell) float64 {
		return gangStep(c, "scale-replicas", func(s results.GangStep) float64 { return b2f(s.Accepted) })
	}},
	{kind: "gang", key: "gang.peak_gpus_running", unit: "gpus", rep: func(c *results.Cell) float64 { return float64(c.Gang.PeakGPUsRunning) }},
	{kind: "gang", key: "gang.over_quota_gpus", unit: "gpus", rep: func(c *results.Cell) float64 { return float64(c.Gang.OverQuotaGPUs) }},
	{kind: "gang", key: "gang.peak_reserved_gpus", unit: "gpus", rep: func(c *results.Cell) float64 { return float64(c.Gang.PeakReserved) }},
	{kind: "gang", key: "gang.peak_unreserved_gpus", unit: "gpus", rep: func(c *results.Cell) float64 { return float64(c.Gang.PeakUnreservedGPUs) }},
	{kind: "gang", key: "gang.unreserved_s", unit: "s", rep: func(c *results.Cell) float64 { return c.Gang.UnreservedSeconds }},
	{kind: "gang", key: "gang.bypass_ratio", unit: "ratio", rep: func(c *results.Cell) float64 { return c.Gang.BypassRatio }},
	{kind: "gang", key: "gang.resize_peak_pods_running", unit: "pods", rep: func(c *results.Cell) float64 {
		return gangStep(c, "resize", func(s results.GangStep) float64 { return float64(s.PeakPodsRunning) })
	}},
}

// autoscaleMetrics describe pool-autoscaling cells; the first up and first down step carry the
// latencies (decision = spec.replicas, capacity = status.readyReplicas).
var autoscaleMetrics = []metricDef{
	{kind: "autoscale", key: "autoscale.bound", unit: "replicas", rep: func(c *results.Cell) float64 { return float64(boundOf(c.Autoscale)) }},
	{kind: "autoscale", key: "autoscale.floor", unit: "replicas", rep: func(c *results.Cell) float64 { return float64(c.Autoscale.Min) }},
	{kind: "autoscale", key: "autoscale.max_spec", unit: "replicas", rep: func(c *results.Cell) float64 { return float64(c.Autoscale.MaxSpec) }},
	{kind: "autoscale", key: "autoscale.end_spec", unit: "replicas", rep: func(c *results.Cell) float64 { return float64(c.Autoscale.EndSpec) }},
	{kind: "autoscale", key: "autoscale.replica_changes", unit: "writes", rep: func(c *results.Cell) float64 { return float64(c.Autoscale.ReplicaChanges) }},
	{kind: "autoscale", key: "autoscale.decision_up_s", unit: "s", rep: func(c *results.Cell) float64 { return stepLatency(c, true, true) }},
	{kind: "autoscale", key: "autoscale.capacity_up_s", unit: "s", rep: func(c *results.Cell) float64 { return stepLatency(c, true, false) }},
	{kind: "autoscale", key: "autoscale.decision_down_s", unit: "s", rep: func(c *results.Cell) float64 { return stepLatency(c, false, true) }},
	{kind: "autoscale", key: "autoscale.capacity_down_s", unit: "s", rep: func(c *results.Cell) float64 { return stepLatency(c, false, false) }},
	{kind: "autoscale", key: "autoscale.overshoot_max", unit: "replicas", rep: func(c *results.Cell) float64 {
		m := 0
		for _, s := range c.Autoscale.Steps {
			m = max(m, s.Overshoot)
		}
		return float64(m)
	}},
	{kind: "autoscale", key: "autoscale.api_writes", unit: "requests", rep: func(c *results.Cell) float64 {
		t := 0.0
		for _, v := range c.Autoscale.APIWrites {
			t += v
		}
		return t
	}},
	{kind: "autoscale", key: "autoscale.exporter_reads", unit: "reads", rep: func(c *results.Cell) float64 { return float64(len(c.Autoscale.ExporterHits)) }},
	{kind: "autoscale", key: "autoscale.claims_warm", unit: "claims", rep: func(c *results.Cell) float64 { return float64(c.Autoscale.Warm) }},
	{kind: "autoscale", key: "autoscale.assertions_failed", unit: "checks", rep: func(c *results.Cell) float64 {
		n := 0
		for _, a := range c.Autoscale.Assertions {
			if strings.HasPrefix(a, "FAIL") {
				n++
			}
		}
		return float64(n)
	}},
	{kind: "autoscale", key: "autoscale.claims_cold", unit: "claims", rep: func(c *results.Cell) float64 { return float64(c.Autoscale.Cold) }},
}

// brakeMetrics: whether the cell's brakes bound (1/0, NaN when no brake can be judged), then the
// gate metrics each brake type declares (internal/brakes).
func brakeMetrics() []metricDef {
	out := []metricDef{{key: "brake.engaged", unit: "bool", rep: func(c *results.Cell) float64 {
		if c.Stats.BrakeEngaged == nil {
			return math.NaN()
		}
		return b2f(*c.Stats.BrakeEngaged)
	}}}
	// Each brake's, then each fault type's metrics (the GPU fault's repair-safety invariants
	// among them), from the catalogue they registered in.
	for _, m := range catalog.Default.Metrics() {
		out = append(out, metricDef{key: m.Key, unit: m.Unit, rep: m.Value})
	}
	return out
}

// metricDefs are every summary row: the built-in ones, the write accounting, then the brake and
// fault types' from the catalogue as registered now (read at each call, never at init: a
// package's init order must not decide which metrics exist).
func metricDefs() []metricDef {
	out := append([]metricDef(nil), baseDefs...)
	out = append(out, writeMetrics()...)
	out = append(out, brakeMetrics()...)
	return append(out, autoscaleMetrics...)
}

// boundOf is the highest spec.replicas the autoscaler may reach for the cell's profile.
func boundOf(a *results.Autoscale) int {
	peak := 0
	for _, d := range a.Profile {
		peak = max(peak, d)
	}
	return min(max(peak, a.Min), a.Max)
}

// stepLatency is the decision (or capacity) latency of the first step where demand rose (up) or
// fell (down); NaN when there is none or the pool did not move.
func stepLatency(c *results.Cell, up, decision bool) float64 {
	prev := -1
	for _, s := range c.Autoscale.Steps {
		if prev >= 0 && ((up && s.Demand > prev) || (!up && s.Demand < prev)) {
			p := s.CapacitySeconds
			if decision {
				p = s.DecisionSeconds
			}
			return results.OrNaN(p)
		}
		prev = s.Demand
	}
	return math.NaN()
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// gangStep applies f to the named step of a gang cell (NaN when it did not run).
func gangStep(c *results.Cell, name string, f func(results.GangStep) float64) float64 {
	for _, s := range c.Gang.Steps {
		if s.Name == name {
			return f(s)
		}
	}
	return math.NaN()
}

// cellKind is the kind of experiment a cell holds (see metricDef.kind).
func cellKind(c *results.Cell) string {
	switch {
	case c.Gang != nil:
		return "gang"
	case c.Autoscale != nil:
		return "autoscale"
	}
	return ""
}

func cpu(c *results.Cell, comp string) float64 {
	if v, ok := c.Stats.CPUSeconds[comp]; ok {
		return v
	}
	return math.NaN()
}

// MetricUnits maps every summary key to its unit (gates and reports refer to them).
func MetricUnits() map[string]string {
	defs := metricDefs()
	out := make(map[string]string, len(defs))
	for _, d := range defs {
		out[d.key] = d.unit
	}
	return out
}

type sample struct {
	perRep []float64
	pooled []float64
	nested stats.Nested // pooled metrics: the claims of each repetition
}

func (d metricDef) sample(cells []*results.Cell) sample {
	var s sample
	for _, c := range cells {
		if cellKind(c) != d.kind {
			continue
		}
		if d.pooled != nil {
			p := d.pooled(c)
			s.pooled = append(s.pooled, p...)
			s.nested = append(s.nested, p)
			s.perRep = append(s.perRep, stats.NearestRank(p, d.p))
		} else if v := d.rep(c); !math.IsNaN(v) {
			s.perRep = append(s.perRep, v)
		}
	}
	return s
}

func (d metricDef) value(s sample) float64 {
	if d.pooled != nil {
		return stats.NearestRank(s.pooled, d.p)
	}
	return stats.Median(s.perRep)
}

// metric summarizes a sample (value and CI) and, given a baseline sample, its delta. The
// repetition is the unit of inference: claims of one burst share its conditions. A latency
// quantile's value is the pooled quantile of every claim (descriptive); its CI and the delta's CI
// come from a two-level bootstrap (repetitions, then claims within them) and the delta's p-value
// from a permutation test over repetitions. Per-repetition metrics are compared as samples of
// repetitions (Mann-Whitney U), as benchstat compares runs. Below 3 repetitions a side there
// is no p-value ("insufficient repetitions").
func (d metricDef) metric(s sample, base *sample, rng *rand.Rand) results.Metric {
	m := results.Metric{Key: d.key, Unit: d.unit, Value: stats.Num(d.value(s))}
	if d.pooled != nil {
		m.CI = stats.HierQuantileCI(s.nested, d.p, bootstrapIters, confidence, rng)
	} else {
		m.CI = stats.Bootstrap(s.perRep, stats.Median, bootstrapIters, confidence, rng)
	}
	if base == nil {
		return m
	}
	bv := d.value(*base)
	delta := &results.Delta{Abs: stats.Num(float64(m.Value) - bv), Pct: stats.Num((float64(m.Value) - bv) / bv * 100)}
	if d.pooled != nil {
		delta.Comparison, delta.CI = stats.CompareNestedQuantile(base.nested, s.nested, d.p, bootstrapIters, confidence, alpha, rng)
		delta.MDEPct = stats.Num(logMDE(base.perRep, s.perRep))
	} else {
		delta.CI = stats.BootstrapDelta(base.perRep, s.perRep, stats.Median, bootstrapIters, confidence, rng)
		delta.Comparison = stats.CompareReps(base.perRep, s.perRep, alpha)
		delta.MDEPct = stats.Num(stats.MDERel(base.perRep, s.perRep, alpha))
	}
	m.Delta = delta
	return m
}

// logMDE is the minimum detectable effect (%, 80% power, one test at alpha) of a latency
// quantile at the spread of its per-repetition values on the log scale (what the
// repetition-level tests scale with). NaN when a side has fewer than 2 finite values.
func logMDE(base, treat []float64) float64 {
	sd := func(xs []float64) (float64, int) {
		var ls []float64
		for _, x := range xs {
			if x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x) {
				ls = append(ls, math.Log(x))
			}
		}
		if len(ls) < 2 {
			return math.NaN(), len(ls)
		}
		m := stats.Mean(ls)
		v := 0.0
		for _, l := range ls {
			v += (l - m) * (l - m)
		}
		return v, len(ls)
	}
	va, na := sd(base)
	vb, nb := sd(treat)
	if math.IsNaN(va) || math.IsNaN(vb) {
		return math.NaN()
	}
	pooled := math.Sqrt((va + vb) / float64(na+nb-2))
	return stats.MDEPct(pooled, na, nb, 1.96)
}

// Summarize aggregates cells by name over repetitions and compares each with the baseline cell;
// summaries come in the order of names (cells with other names follow in order of appearance).
// Verdicts are those of the fixed design (one test at whatever repetitions ran).
func Summarize(cells []results.Cell, names []string, baseline string, seed int64) []results.Summary {
	return SummarizeDesign(cells, names, baseline, seed, nil)
}

// FixedDesign is the design of a run without sequential stopping: one test at alpha.
func FixedDesign(maxReps int) *stats.Sequential {
	return &stats.Sequential{Alpha: alpha, MinReps: stats.MinReps, MaxReps: max(maxReps, stats.MinReps), Fixed: true}
}

// SummarizeDesign is Summarize with the run's design: each compared cell gets its verdict on the
// verdict metrics (claim p50 and p99) and how its repetitions ended; under a sequential design the
// verdict metrics' comparison rows carry the design's repeated p-value and interval. A nil design
// is the fixed one.
func SummarizeDesign(cells []results.Cell, names []string, baseline string, seed int64, design *stats.Sequential) []results.Summary {
	round := 0
	for _, c := range cells {
		round = max(round, c.Rep)
	}
	if design == nil {
		design = FixedDesign(round)
	}
	states := Sequential(cells, append(append([]string(nil), names...), extraNames(cells, names)...), baseline, design, round, true, true)
	rng := rand.New(rand.NewPCG(uint64(seed), 2))
	groups := map[string][]*results.Cell{}
	names = append([]string(nil), names...)
	for _, n := range names {
		groups[n] = nil
	}
	notApplicable := map[string]string{}
	for i := range cells {
		c := &cells[i]
		if _, seen := groups[c.Name]; !seen {
			names = append(names, c.Name)
			groups[c.Name] = nil
		}
		if c.NotApplicable != "" {
			notApplicable[c.Name] = c.NotApplicable
			continue
		}
		if c.Error == "" {
			groups[c.Name] = append(groups[c.Name], c)
		}
	}
	var out []results.Summary
	for _, name := range names {
		sum := results.Summary{Name: name, Reps: len(groups[name]), NotApplicable: notApplicable[name]}
		if sum.NotApplicable != "" || len(groups[name]) == 0 {
			out = append(out, sum)
			continue
		}
		st := states[name]
		if st != nil {
			stop := st.Stopping
			sum.Stopping, sum.Verdict = &stop, st.Verdict
		}
		for _, d := range metricDefs() {
			s := d.sample(groups[name])
			if len(s.perRep) == 0 {
				continue
			}
			var base *sample
			if name != baseline && len(groups[baseline]) > 0 {
				if bs := d.sample(groups[baseline]); len(bs.perRep) > 0 {
					base = &bs
				}
			}
			m := d.metric(s, base, rng)
			for _, v := range s.perRep {
				m.PerRep = append(m.PerRep, stats.Num(v))
			}
			if r, ok := st.seqResult(d.key); ok && !design.Fixed && base != nil {
				sequentialRow(&m, r, design, d.value(*base))
			}
			sum.Metrics = append(sum.Metrics, m)
		}
		sum.Invariants = Invariants(groups[name])
		sum.Sustained = SustainedEstimate(groups[name])
		out = append(out, sum)
	}
	return out
}

// RunComparison compares one cell name across runs (the first run is the baseline).
type RunComparison struct {
	Cell    string         `json:"cell"`
	Metrics []MetricAcross `json:"metrics"`
}

// MetricAcross is one metric of one cell in every run.
type MetricAcross struct {
	Key  string           `json:"key"`
	Unit string           `json:"unit"`
	Runs []results.Metric `json:"runs"` // Value and CI per run; Delta vs the first run
}

// CompareRuns lines up the cells that every run has, by name, and compares each metric of each
// later run with the first (bootstrap CI of the difference, Mann-Whitney U p-value).
func CompareRuns(runs []*results.Results, seed int64) []RunComparison {
	rng := rand.New(rand.NewPCG(uint64(seed), 3))
	group := func(r *results.Results, name string) []*results.Cell {
		var out []*results.Cell
		for i := range r.Cells {
			c := &r.Cells[i]
			if c.Name == name && c.Error == "" && c.NotApplicable == "" {
				out = append(out, c)
			}
		}
		return out
	}
	var names []string
	for _, s := range runs[0].Summary {
		inAll := true
		for _, r := range runs[1:] {
			inAll = inAll && len(group(r, s.Name)) > 0
		}
		if inAll && len(group(runs[0], s.Name)) > 0 {
			names = append(names, s.Name)
		}
	}
	var out []RunComparison
	for _, name := range names {
		rc := RunComparison{Cell: name}
		base := group(runs[0], name)
		for _, d := range metricDefs() {
			bs := d.sample(base)
			if len(bs.perRep) == 0 {
				continue
			}
			ma := MetricAcross{Key: d.key, Unit: d.unit}
			for k, r := range runs {
				s := d.sample(group(r, name))
				if len(s.perRep) == 0 {
					ma.Runs = append(ma.Runs, results.Metric{Key: d.key, Unit: d.unit, Value: stats.Num(math.NaN())})
					continue
				}
				var base *sample
				if k > 0 {
					base = &bs
				}
				ma.Runs = append(ma.Runs, d.metric(s, base, rng))
			}
			rc.Metrics = append(rc.Metrics, ma)
		}
		out = append(out, rc)
	}
	return out
}

// ConfigDiff lists the settings (dotted keys) whose values differ between two runs.
func ConfigDiff(a, b map[string]any) []string {
	fa, fb := map[string]string{}, map[string]string{}
	flattenAny("", a, fa)
	flattenAny("", b, fb)
	var out []string
	for k, va := range fa {
		if vb, ok := fb[k]; !ok || vb != va {
			out = append(out, k+": "+va+" -> "+fb[k])
		}
	}
	for k, vb := range fb {
		if _, ok := fa[k]; !ok {
			out = append(out, k+": (unset) -> "+vb)
		}
	}
	sort.Strings(out)
	return out
}

func flattenAny(prefix string, v any, out map[string]string) {
	if m, ok := v.(map[string]any); ok {
		for k, x := range m {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			flattenAny(key, x, out)
		}
		return
	}
	out[prefix] = fmt.Sprint(v)
}

// SplitByVersion turns one run over a version axis into one run per version, with the
// "@version" suffix dropped from cell names, so the versions can be compared cell by cell.
func SplitByVersion(r *results.Results, versions []string) []*results.Results {
	var out []*results.Results
	for _, v := range versions {
		cp := *r
		cp.Cells = nil
		var names []string
		seen := map[string]bool{}
		for _, c := range r.Cells {
			if !strings.HasSuffix(c.Name, "@"+v) {
				continue
			}
			c.Name = strings.TrimSuffix(c.Name, "@"+v)
			c.ID = c.Name + "#" + strconv.Itoa(c.Rep)
			cp.Cells = append(cp.Cells, c)
			if !seen[c.Name] {
				seen[c.Name] = true
				names = append(names, c.Name)
			}
		}
		cp.Versions = map[string]string{}
		for k, val := range r.Versions {
			cp.Versions[k] = val
		}
		cp.Versions["agent-sandbox"] = v
		cp.Baseline = strings.TrimSuffix(r.Baseline, "@"+versions[0])
		cp.Summary = SummarizeDesign(cp.Cells, names, cp.Baseline, r.Seed, r.Design)
		out = append(out, &cp)
	}
	return out
}

// AAPair is an A/A comparison: Copy is an identical configuration of Original (listed twice in
// the matrix, named Original's brake + "_k").
type AAPair struct{ Original, Copy string }

// AAPairs finds the A/A copies among cell names: "b_k..." paired with "b..." (the same suffixes).
func AAPairs(names []string) []AAPair {
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	var out []AAPair
	for _, n := range names {
		base, rest, _ := strings.Cut(n, "@")
		if i := strings.IndexAny(base, "+/"); i >= 0 {
			base, rest = n[:i], n[i:]
		} else if rest != "" {
			rest = "@" + rest
		}
		i := strings.LastIndex(base, "_")
		if i <= 0 {
			continue
		}
		if k, err := strconv.Atoi(base[i+1:]); err != nil || k < 2 {
			continue
		}
		if orig := base[:i] + rest; have[orig] {
			out = append(out, AAPair{Original: orig, Copy: n})
		}
	}
	return out
}

// NoiseFloor compares an A/A copy with its original, metric by metric, with the same inference
// as every other comparison: what this cluster's noise alone makes of identical cells.
func NoiseFloor(cells []results.Cell, pair AAPair, seed int64) []results.Metric {
	var sel []results.Cell
	for _, c := range cells {
		if c.Name == pair.Original || c.Name == pair.Copy {
			sel = append(sel, c)
		}
	}
	s := Summarize(sel, []string{pair.Original, pair.Copy}, pair.Original, seed)
	if len(s) < 2 {
		return nil
	}
	return s[1].Metrics
}

// WorseWhenHigher reports whether an increase of the metric is a regression: latencies, failed
// and cold claims, send lag and the correctness counts. Other metrics have no direction (a brake
// lowers a refill ceiling on purpose) and are never called regressions.
func WorseWhenHigher(key string) bool {
	switch {
	case strings.HasPrefix(key, "claim.") && strings.HasSuffix(key, "_ms"),
		key == "claims.failed", key == "claims.cold", key == "loadgen.send_lag_p99_ms",
		strings.HasPrefix(key, "correctness."):
		return true
	}
	return false
}

// Regressions lists, for runs compared by CompareRuns (the first run is the baseline), every
// metric with a direction that got significantly worse in a later run: "cell metric: A -> B (+x%,
// p=...) in run N".
func Regressions(cmp []RunComparison) []string {
	var out []string
	for _, c := range cmp {
		for _, m := range c.Metrics {
			if !WorseWhenHigher(m.Key) {
				continue
			}
			for i, r := range m.Runs {
				if i == 0 || r.Delta == nil || !r.Delta.Comparison.Significant || float64(r.Delta.Abs) <= 0 {
					continue
				}
				out = append(out, fmt.Sprintf("%s %s: %s %s (%+.1f%%, p=%.3g, %s) in run %c",
					c.Cell, m.Key, strconv.FormatFloat(float64(m.Runs[0].Value), 'g', 4, 64), "->"+strconv.FormatFloat(float64(r.Value), 'g', 4, 64),
					float64(r.Delta.Pct), float64(r.Delta.Comparison.P), r.Delta.Comparison.Method, 'A'+rune(i)))
			}
		}
	}
	return out
}

// Drift estimates how the cluster itself changed during a run: each repetition's median claim
// latency relative to its cell's geometric mean (so brakes and versions cancel out), regressed
// on when the repetition ran. The lab slows over its lifetime; this measures it instead of
// assuming it away. Nil with fewer than 6 repetitions of cells that ran at least twice.
func Drift(cells []results.Cell) *results.Drift {
	type pt struct {
		name string
		t0   float64 // minutes since the first cell
		logp float64
	}
	usable := func(c results.Cell) bool {
		p50 := c.Stats.Latency.All.P50
		return c.Error == "" && c.NotApplicable == "" && !c.T0.IsZero() && p50 > 0 && !math.IsInf(p50, 0)
	}
	var first time.Time
	for _, c := range cells {
		if usable(c) && (first.IsZero() || c.T0.Before(first)) {
			first = c.T0
		}
	}
	var pts []pt
	for _, c := range cells {
		if usable(c) {
			pts = append(pts, pt{name: c.Name, t0: c.T0.Sub(first).Minutes(), logp: math.Log(c.Stats.Latency.All.P50)})
		}
	}
	sum, n := map[string]float64{}, map[string]int{}
	for _, p := range pts {
		sum[p.name] += p.logp
		n[p.name]++
	}
	var xs, ys []float64
	for _, p := range pts {
		if n[p.name] < 2 {
			continue
		}
		xs = append(xs, p.t0)
		ys = append(ys, p.logp-sum[p.name]/float64(n[p.name]))
	}
	if len(xs) < 6 {
		return nil
	}
	mx, my := stats.Mean(xs), stats.Mean(ys)
	sxx, sxy := 0.0, 0.0
	for k := range xs {
		sxx += (xs[k] - mx) * (xs[k] - mx)
		sxy += (xs[k] - mx) * (ys[k] - my)
	}
	if sxx == 0 {
		return nil
	}
	slope := sxy / sxx
	rss := 0.0
	for k := range xs {
		r := ys[k] - my - slope*(xs[k]-mx)
		rss += r * r
	}
	df := float64(len(xs) - 2)
	se := math.Sqrt(rss / df / sxx)
	tq := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.975)
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	// Over the run's own span: a rate extrapolated to a fixed period makes a short run's interval
	// explode (a 1-minute run read as "-100% to +1.5e8% per 10 minutes").
	span := hi - lo
	pct := func(b float64) float64 { return (math.Exp(span*b) - 1) * 100 }
	return &results.Drift{Metric: "claim p50 relative to its cell", Repetitions: len(xs), Minutes: span,
		PctOverRun: stats.Num(pct(slope)), CI: stats.CI{Lo: stats.Num(pct(slope - tq*se)), Hi: stats.Num(pct(slope + tq*se))}}
}

// podStart reads one figure of a cell's pod start steps (NaN when no pod started in it).
func podStart(f func(*results.PodStart) float64) func(c *results.Cell) float64 {
	return func(c *results.Cell) float64 {
		if c.Stats.PodStart == nil {
			return math.NaN()
		}
		return f(c.Stats.PodStart)
	}
}
