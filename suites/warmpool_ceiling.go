package suites

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/brakebench/brakebench/internal/ceiling"
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/recorder"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/stats"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
	"github.com/brakebench/brakebench/loadgen"
)

// ProbeLabel marks a ceiling probe's claims with the probe's number (deleted by it after the probe).
const ProbeLabel = "brakebench.io/probe"

// searchConfig is workload.ceiling's search.
func searchConfig(c config.Ceiling) ceiling.Config {
	return ceiling.Config{Start: c.Start, Factor: c.Factor, Max: c.Max, Tolerance: c.Tolerance, MaxProbes: c.MaxProbes}
}

// criteriaOf is workload.ceiling's criteria.
func criteriaOf(c config.Ceiling) ceiling.Criteria {
	var cr ceiling.Criteria
	for _, name := range c.Criteria {
		switch name {
		case "p99":
			cr.P99SLO = c.SLO
		case "failed":
			cr.NoFailed = true
		case "cold":
			cr.NoCold = true
		case "pool":
			cr.PoolNotEmptied = true
		case "lag":
			cr.LagGrowth = c.LagGrowth
		case "steady":
			cr.SteadyTol, cr.SteadyFloor = c.SteadyTolerance, c.SteadyFloor
		}
	}
	return cr
}

// runCeilingCell is one repetition of a ceiling cell (workload.mode ceiling): the cell's pool
// filled and its brakes on as in a burst cell, then one search (internal/ceiling) over sustained
// open-loop Poisson arrivals. Before each probe the previous probe's claims are deleted and the
// pool is waited for until it is full again and their sandboxes are gone (within
// workload.refillTimeout; a probe that starts short says so), so every probe meets the same
// cluster. The cell's claims, latencies, correctness and writes are those of every probe
// together (descriptive); its verdict is the search's bracket, stats.sustained.
func runCeilingCell(ctx context.Context, env *Env, sc *Scope, pc PlannedCell, rng *rand.Rand) (cell results.Cell) {
	cfg := env.Config
	wl, cc := cfg.Workload, cfg.Workload.Ceiling
	cell = results.Cell{Brake: pc.Brake, Fault: pc.Fault, Phases: map[string]float64{}}
	ns, labels := sc.Namespace, sc.Labels
	pushNamespaceTeardown(env, sc)
	rec, fillScrape, ok := prepareCell(ctx, env, sc, pc, &cell)
	if !ok {
		return cell
	}
	step := time.Now()
	targets := env.Cluster.MetricsTargets()
	before := scrapeAll(ctx, env, targets)
	cell.Phases["scrape_burst"] = time.Since(step).Seconds()
	gen, err := newGenerator(ctx, env, ns, labels)
	if err != nil {
		cell.Error = err.Error()
		return cell
	}
	search, err := ceiling.New(searchConfig(cc))
	if err != nil {
		cell.Error = "ceiling search: " + err.Error()
		return cell
	}
	crit := criteriaOf(cc)
	sus := &results.Sustained{Criteria: cc.Criteria}
	if crit.P99SLO > 0 {
		sus.SLOMS = ms(crit.P99SLO)
	}
	var all, prev []loadgen.Sent
	var t0 time.Time
	searchStart := time.Now()
	for k := 1; ctx.Err() == nil; k++ {
		rate, done := search.Next()
		if done {
			break
		}
		refilled := true
		if k > 1 {
			if refilled, err = clearProbe(ctx, env, rec, ns, k-1, prev); err != nil {
				cell.Error = fmt.Sprintf("clear probe %d: %v", k-1, err)
				break
			}
		}
		probeLabels := map[string]string{ProbeLabel: strconv.Itoa(k)}
		for key, v := range labels {
			probeLabels[key] = v
		}
		gen.Prefix, gen.Labels = fmt.Sprintf("p%d-claim-", k), probeLabels
		sched := loadgen.Poisson(rate, cc.Probe, rng)
		start := time.Now().Add(50 * time.Millisecond)
		if t0.IsZero() {
			t0, sc.T0 = start, start
		}
		env.Progress.Printf("    probe %d: %s claims/s for %s (%d claims)", k, ceiling.Rate(rate), cc.Probe, len(sched))
		fired := gen.Fire(ctx, start, sched)
		settle := min(cc.Settle, wl.ClaimTimeout)
		names := make([]string, len(fired))
		for i, s := range fired {
			names[i] = s.Name
		}
		rec.WaitFor(ctx, time.Until(start.Add(sched.End()).Add(settle)), func() bool { return rec.ReadyAmong(names) >= len(names) })
		end := time.Now()
		m, minReady := probeMeasure(rec.Snapshot(), fired, start, end, rate, cc, settle)
		okProbe, reason, w := crit.Judge(m)
		search.Record(rate, okProbe, reason)
		p := probeRecord(m, w, start, t0, minReady, refilled, okProbe, reason)
		sus.Probes = append(sus.Probes, p)
		verdict := "held"
		if !okProbe {
			verdict = "broke"
		}
		env.Progress.Printf("    probe %d %s: %s", k, verdict, reason)
		all, prev = append(all, fired...), fired
	}
	cell.Phases["search"] = time.Since(searchStart).Seconds()
	res := search.Result()
	sus.Pass, sus.Fail, sus.Stop = stats.Num(res.Pass), stats.Num(res.Fail), res.Stop
	if t0.IsZero() {
		if cell.Error == "" {
			cell.Error = "ceiling search ran no probe: " + res.Stop
		}
		return cell
	}
	errBefore := cell.Error
	cell, _, _ = settleAndAssemble(ctx, env, rec, cell, ns, all, t0, nil, before, fillScrape, targets, projectionWindow(wl.RefillProjection, pc.Brake), false)
	if cell.Error == "" {
		cell.Error = errBefore
	}
	cell.Stats.Sustained = sus
	env.Progress.Printf("    ceiling: %s", res.Stop)
	return cell
}

// clearProbe deletes probe k's claims and waits until their sandboxes are gone and the pool is
// full again, for at most workload.refillTimeout; refilled false: the next probe starts anyway.
func clearProbe(ctx context.Context, env *Env, rec *recorder.Recorder, ns string, k int, fired []loadgen.Sent) (bool, error) {
	wl := env.Config.Workload
	err := env.Clients.Dynamic.Resource(agentsandbox.ClaimGVR).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: ProbeLabel + "=" + strconv.Itoa(k)})
	if err != nil {
		return false, err
	}
	names := make([]string, len(fired))
	for i, s := range fired {
		names[i] = s.Name
	}
	return rec.WaitFor(ctx, wl.RefillTimeout, func() bool {
		r, n := rec.PoolReady(PoolName)
		return r >= int64(wl.Pool) && n >= int64(wl.Pool) && rec.LiveSandboxesOf(names) == 0
	}), nil
}

// probeMeasure is one probe as internal/ceiling judges it: each claim's send offset, latency
// (intent to Ready; not Ready within settle of its intent, or a failed create: failed), cold
// or warm, send lag; and whether the pool reported no Ready member between start and end.
func probeMeasure(snap recorder.Snapshot, fired []loadgen.Sent, start, end time.Time, rate float64, cc config.Ceiling, settle time.Duration) (ceiling.Measure, int64) {
	m := ceiling.Measure{Rate: rate, Duration: cc.Probe, Warmup: cc.Warmup, Windows: cc.Windows}
	for _, s := range fired {
		pcl := ceiling.ProbeClaim{Sent: s.Planned.Sub(start)}
		if !s.Intent.IsZero() {
			pcl.Lag = s.Intent.Sub(s.Planned)
		}
		obs := snap.Claims[s.Name]
		switch {
		case s.Err != "" || s.Intent.IsZero():
			pcl.Failed = true
		case obs.Ready.IsZero() || obs.Ready.Sub(s.Intent) > settle:
			pcl.Failed = true
		default:
			pcl.Latency = obs.Ready.Sub(s.Intent)
			if sb, ok := snap.Sandboxes[obs.Sandbox]; ok && sb.LaunchType == "cold" {
				pcl.Cold = true
			}
		}
		m.Claims = append(m.Claims, pcl)
	}
	minReady := int64(math.MaxInt64)
	for _, ps := range snap.Pools[PoolName] {
		if !ps.At.Before(start) && !ps.At.After(end) {
			minReady = min(minReady, ps.Ready)
		}
	}
	if minReady == math.MaxInt64 { // no status in the probe: the last one before it holds
		for _, ps := range snap.Pools[PoolName] {
			if ps.At.Before(start) {
				minReady = ps.Ready
			}
		}
	}
	m.PoolEmptied = minReady == 0
	return m, minReady
}

// probeRecord is the probe as results.json records it, from its judged part (w).
func probeRecord(m ceiling.Measure, w ceiling.Windows, start, t0 time.Time, minReady int64, refilled, ok bool, reason string) results.SustainedProbe {
	num := func(d time.Duration) stats.Num {
		if d == ceiling.Infinite {
			return stats.Num(math.Inf(1))
		}
		return stats.Num(ms(d))
	}
	p := results.SustainedProbe{Rate: m.Rate, Offset: start.Sub(t0).Seconds(), Sent: len(m.Claims), PoolMinReady: minReady,
		PoolRefilled: refilled, OK: ok, Reason: reason, Judged: w.All.Sent, Failed: w.All.Failed, Cold: w.All.Cold,
		P99MS: num(w.All.P99), LagP99MS: num(w.All.LagP99), Completed: w.All.CompletedRate}
	var lat []float64
	for _, c := range m.Claims {
		switch {
		case c.Sent < m.Warmup:
		case c.Failed:
			lat = append(lat, math.Inf(1))
		default:
			lat = append(lat, ms(c.Latency))
		}
	}
	p.P50MS = stats.Num(stats.Summarize(lat).P50)
	for _, e := range w.Each {
		p.WindowP99MS = append(p.WindowP99MS, num(e.P99))
	}
	return p
}
