package suites

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/brakes"
	"github.com/brakebench/brakebench/internal/recorder"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/scrape"
	"github.com/brakebench/brakebench/internal/stats"
	"github.com/brakebench/brakebench/loadgen"
)

// cellInput is everything a cell's numbers are computed from (a pure function of it).
type cellInput struct {
	cell results.Cell
	// snap is what the recorder saw: in a cell, its records read in place (recorder.View).
	snap recorder.Observations
	// readyAt, when not nil, replaces the Ready times of the claims the recorder saw (the
	// in-cluster runner's own observations; a claim not in it is not Ready).
	readyAt      map[string]time.Time
	sent         []loadgen.Sent
	t0, end      time.Time
	pool         string
	poolSize     int
	claimTimeout time.Duration
	metrics      map[string]results.Scrape
	// fillMetrics are the API server's counter deltas from before the pool was created to the
	// burst (the fill, and the restart with the cell's flags).
	fillMetrics map[string]results.Scrape
	// passes are the controller's create passes after T0 (nil: its log cannot be read).
	passes []int
	// projection, when set, ended the wait for the refill (recorder.ProjectRefill): the cell is
	// recorded as projected, never as refilled.
	projection *recorder.Projection
	// claimEvents are the Events about the cell's claims (nil: not counted).
	claimEvents *int
}

func rel(t, t0 time.Time) *float64 {
	if t.IsZero() {
		return nil
	}
	v := t.Sub(t0).Seconds()
	return &v
}

// bin adds one event at server time ts to per-second counts from t0 (1 s resolution).
func bin(counts []float64, t0, ts time.Time) []float64 {
	i := int(ts.Unix() - t0.Unix())
	if i < 0 {
		return counts
	}
	for len(counts) <= i {
		counts = append(counts, 0)
	}
	counts[i]++
	return counts
}

// assemble is a cell's numbers from in.
func assemble(in cellInput) results.Cell {
	return withController(assembleObserved(in), in.passes, in.claimEvents)
}

// assembleObserved is a cell's numbers from what the recorder observed and the scrapes: all but
// those from the controller's create passes and the claims' Events (withController), which a cell
// reads from the API after the recorder's records (in.passes and in.claimEvents are not read).
func assembleObserved(in cellInput) results.Cell {
	c := in.cell
	c.T0 = in.t0
	c.Metrics = in.metrics
	st := &c.Stats
	// Sized up front: at 100,000 claims growing them by appends was most of what the assembly
	// allocated (the claims slice alone 67 MiB of copies, README "Scale").
	all, lag, ack := make([]float64, 0, len(in.sent)), make([]float64, 0, len(in.sent)), make([]float64, 0, len(in.sent))
	var warm, cold []float64
	c.Claims = slices.Grow(c.Claims, len(in.sent))
	for _, s := range in.sent {
		cl := results.Claim{Name: s.Name, Planned: s.Planned.Sub(in.t0).Seconds(), Intent: rel(s.Intent, in.t0), Acked: rel(s.Acked, in.t0)}
		if !s.Intent.IsZero() {
			lag = append(lag, ms(s.Intent.Sub(s.Planned)))
			ack = append(ack, ms(s.Acked.Sub(s.Intent)))
		}
		obs, seen := in.snap.ClaimNamed(s.Name)
		if seen && in.readyAt != nil {
			obs.Ready = in.readyAt[s.Name]
		}
		cl.Bound, cl.Sandbox = rel(obs.Bound, in.t0), obs.Sandbox
		if sb, ok := in.snap.SandboxNamed(obs.Sandbox); ok {
			cl.LaunchType = sb.LaunchType
		}
		switch {
		case s.Err != "":
			cl.Failed, cl.Reason = true, "create failed: "+s.Err
		case obs.Ready.IsZero() || obs.Ready.Sub(s.Intent) > in.claimTimeout:
			cl.Failed, cl.Reason = true, fmt.Sprintf("not Ready within %s (last reason %q)", in.claimTimeout, obs.LastReason)
		default:
			cl.Ready = rel(obs.Ready, in.t0)
			l := ms(obs.Ready.Sub(s.Intent))
			cl.LatencyMS = &l
		}
		st.Total++
		if cl.Failed {
			st.Failed++
			all = append(all, math.Inf(1)) // stays in the denominator
		} else {
			all = append(all, *cl.LatencyMS)
			switch cl.LaunchType {
			case "warm":
				st.Warm++
				warm = append(warm, *cl.LatencyMS)
			case "cold":
				st.Cold++
				cold = append(cold, *cl.LatencyMS)
			}
		}
		if cl.Ready != nil {
			c.Timeline.ClaimsReady = bin(c.Timeline.ClaimsReady, in.t0, obs.Ready)
		}
		c.Claims = append(c.Claims, cl)
	}
	st.Latency = results.LatencySet{All: stats.Summarize(all), Warm: stats.Summarize(warm), Cold: stats.Summarize(cold)}
	st.SendLagMS, st.AckMS = stats.Summarize(lag), stats.Summarize(ack)

	// Creations after T0 (observed after T0: fill members were all seen before it), in any order:
	// the counts per second do not depend on it.
	var firstRefill time.Time
	for _, sb := range in.snap.EachSandbox() {
		if sb.Observed.Before(in.t0) {
			continue
		}
		c.Timeline.SandboxCreates = bin(c.Timeline.SandboxCreates, in.t0, sb.Created)
		if sb.FromPool {
			c.Timeline.RefillCreates = bin(c.Timeline.RefillCreates, in.t0, sb.Created)
			if firstRefill.IsZero() || sb.Observed.Before(firstRefill) {
				firstRefill = sb.Observed
			}
		} else {
			c.Timeline.ColdCreates = bin(c.Timeline.ColdCreates, in.t0, sb.Created)
		}
	}
	st.RefillStartSeconds = rel(firstRefill, in.t0)
	st.PodStart = podStart(in.snap, in.t0)
	for _, p := range in.snap.EachPod() {
		if p.Observed.Before(in.t0) {
			continue
		}
		c.Timeline.PodCreates = bin(c.Timeline.PodCreates, in.t0, p.Created)
		if !p.Scheduled.IsZero() {
			c.Timeline.PodsScheduled = bin(c.Timeline.PodsScheduled, in.t0, p.Scheduled)
		}
		if !p.Ready.IsZero() {
			c.Timeline.PodsReady = bin(c.Timeline.PodsReady, in.t0, p.Ready)
		}
	}
	tl := c.Timeline
	st.Ceilings = results.Ceilings{
		SandboxCreate1s: stats.Ceiling(tl.SandboxCreates, 1), SandboxCreate5s: stats.Ceiling(tl.SandboxCreates, 5),
		RefillCreate1s: stats.Ceiling(tl.RefillCreates, 1), RefillCreate5s: stats.Ceiling(tl.RefillCreates, 5),
		PodCreate1s: stats.Ceiling(tl.PodCreates, 1), PodCreate5s: stats.Ceiling(tl.PodCreates, 5),
		PodSchedule1s: stats.Ceiling(tl.PodsScheduled, 1), PodSchedule5s: stats.Ceiling(tl.PodsScheduled, 5),
		PodReady1s: stats.Ceiling(tl.PodsReady, 1), PodReady5s: stats.Ceiling(tl.PodsReady, 5),
	}

	// Pool: refill = first time after the post-T0 drop that the pool is full and Ready again.
	dropped := false
	for _, ps := range in.snap.PoolSamples(in.pool) {
		t := ps.At.Sub(in.t0).Seconds()
		c.Pool = append(c.Pool, results.PoolSample{T: t, Desired: ps.Desired, Replicas: ps.Replicas, Ready: ps.Ready})
		if t < 0 {
			continue
		}
		if ps.Ready < int64(in.poolSize) {
			dropped = true
		} else if dropped && st.RefillSeconds == nil && ps.Replicas >= int64(in.poolSize) {
			v := t
			st.RefillSeconds = &v
		}
	}
	if p := in.projection; p != nil {
		// Ended by projection: not refilled, whatever a pool sample after the end may say. The
		// ceilings and timelines above stand (they measure what happened up to the end).
		st.RefillSeconds = nil
		st.RefillEndedSeconds = rel(p.At, in.t0)
		if !p.Finish.IsZero() {
			st.RefillProjectedSeconds = rel(p.Finish, in.t0)
		}
		st.RefillProjection = p.Text(in.t0)
	}

	correctness(&c, in)
	for _, cl := range in.snap.EachClaim() {
		for _, k := range cl.Annotations {
			if st.ClaimAnnotations == nil {
				st.ClaimAnnotations = map[string]int{}
			}
			st.ClaimAnnotations[k]++
		}
	}
	st.Writes = analysis.WriteAccount(&c)
	if st.Writes != nil {
		for l, a := range st.Writes.APFWait { // the per-level p99 as results recorded it before
			if st.APFWaitP99Seconds == nil {
				st.APFWaitP99Seconds = map[string]float64{}
			}
			st.APFWaitP99Seconds[l] = a.P99MS / 1000
		}
	}
	controllerStats(st, in.metrics)
	return c
}

// withController completes c with the controller's create passes after T0 (nil: its log could
// not be read) and the Events about its claims (nil: not counted), and judges its brakes, which
// read them.
func withController(c results.Cell, passes []int, claimEvents *int) results.Cell {
	c.Stats.ClaimEvents = claimEvents
	c.Stats.CreatePasses = passes
	brakeEvidence(&c)
	return c
}

// correctness derives over-creation, pool overshoot, double binding and orphans.
func correctness(c *results.Cell, in cellInput) {
	cr := &c.Stats.Correctness
	sum := func(xs []float64) float64 {
		t := 0.0
		for _, x := range xs {
			t += x
		}
		return t
	}
	// A refill ended by projection is unfinished by design: its creates per slot read below 1 by
	// what was left to create, which measures the brake's pace, not over-creation, and would pull
	// the cell's median and its comparison with a finished baseline. Left null (not measured),
	// as is the API server's refill create ratio. (A refill that ran out the whole wait keeps its
	// ratio; the invariant skips it, analysis.settled.)
	unfinished := in.projection != nil
	// A slot is a warm member a claim took, whether or not that claim then turned Ready in time
	// (a claim that adopted a member and timed out, or was deleted first, as a ceiling search's
	// probes are, still emptied a slot the refill must replace).
	slots := 0.0
	for _, cl := range c.Claims {
		if cl.LaunchType == "warm" {
			slots++
		}
	}
	if slots > 0 && !unfinished {
		v := sum(c.Timeline.RefillCreates) / slots
		cr.RefillCreatesPerSlot = &v
	}
	if sb := sum(c.Timeline.SandboxCreates); sb > 0 {
		v := sum(c.Timeline.PodCreates) / sb
		cr.PodCreatesPerSandbox = &v
	}
	// The whole cell, the fill included: what the informers saw created before the burst, and
	// the sandbox CREATE (POST) and DELETE requests the API server counted in each phase.
	fill := 0.0
	for _, sb := range in.snap.EachSandbox() {
		if sb.FromPool && sb.Observed.Before(in.t0) {
			fill++
		}
	}
	if in.poolSize > 0 && fill > 0 {
		v := fill / float64(in.poolSize)
		cr.FillCreatesPerSlot = &v
	}
	sandboxRequests := func(m map[string]results.Scrape, verb string) *float64 {
		api, ok := m["kube-apiserver"]
		if !ok || api.Error != "" {
			return nil
		}
		v := scrape.Sum(api.Series, "apiserver_request_total", map[string]string{"resource": "sandboxes", "verb": verb})
		return &v
	}
	perSlot := func(v *float64, slots float64) *float64 {
		if v == nil || slots <= 0 {
			return nil
		}
		r := *v / slots
		return &r
	}
	cr.FillAPICreatesPerSlot = perSlot(sandboxRequests(in.fillMetrics, "POST"), float64(in.poolSize))
	cr.FillAPIDeletes = sandboxRequests(in.fillMetrics, "DELETE")
	if !unfinished {
		cr.RefillAPICreatesPerSlot = perSlot(sandboxRequests(in.metrics, "POST"), float64(c.Stats.Warm))
	}
	cr.RefillAPIDeletes = sandboxRequests(in.metrics, "DELETE")
	if m := in.snap.PoolMembersMax(in.pool); m > in.poolSize {
		cr.PoolExcessMax = m - in.poolSize
	}
	bound := make(map[string]int, in.snap.NumClaims())
	for _, cl := range in.snap.EachClaim() {
		if cl.Sandbox != "" {
			bound[cl.Sandbox]++
		}
	}
	for _, n := range bound {
		if n > 1 {
			cr.DoubleBound++
		}
	}
	for _, sb := range in.snap.EachSandbox() {
		if !sb.Deleted && sb.Owner == "" {
			cr.Orphans++
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// controllerStats derives the cross-checks from the metric deltas: the controller's own claim
// startup histogram, each component's CPU seconds, and APF wait p99 per priority level.
func controllerStats(st *results.CellStats, m map[string]results.Scrape) {
	if ctl, ok := m["agent-sandbox-controller"]; ok && ctl.Error == "" {
		h := scrape.Merge(ctl.Series, "agent_sandbox_client_claim_startup_latency_ms", nil)
		if h.Count > 0 {
			st.ControllerLatencyMS = &stats.Quantiles{N: int(h.Count), P50: scrape.HistogramQuantile(h, 0.5),
				P90: scrape.HistogramQuantile(h, 0.9), P99: scrape.HistogramQuantile(h, 0.99), Max: math.NaN()}
		}
	}
	for comp, s := range m {
		if s.Error != "" {
			continue
		}
		if v := scrape.Sum(s.Series, "process_cpu_seconds_total", nil); v > 0 {
			if st.CPUSeconds == nil {
				st.CPUSeconds = map[string]float64{}
			}
			st.CPUSeconds[comp] = v
		}
	}
}

// brakeEvidence states whether the cell's brakes visibly shaped it (a brake that never engages
// measures nothing); each brake type judges itself (internal/brakes).
func brakeEvidence(c *results.Cell) {
	c.Stats.BrakeEngaged, c.Stats.BrakeEvidence = brakes.Evidence(c)
}

// podStart measures the pods first seen after t0 step by step (nil when none completed a step).
func podStart(obs recorder.Observations, t0 time.Time) *results.PodStart {
	n := obs.NumPods()
	sched, run, ready, total := make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n)
	nodes := map[string]bool{}
	for _, p := range obs.EachPod() {
		if p.Observed.Before(t0) {
			continue
		}
		if p.Node != "" {
			nodes[p.Node] = true
		}
		if !p.SeenScheduled.IsZero() {
			sched = append(sched, ms(p.SeenScheduled.Sub(p.Observed)))
		}
		if !p.SeenRunning.IsZero() && !p.SeenScheduled.IsZero() {
			run = append(run, ms(p.SeenRunning.Sub(p.SeenScheduled)))
		}
		if !p.SeenReady.IsZero() && !p.SeenRunning.IsZero() {
			ready = append(ready, ms(p.SeenReady.Sub(p.SeenRunning)))
		}
		if !p.SeenReady.IsZero() {
			total = append(total, ms(p.SeenReady.Sub(p.Observed)))
		}
	}
	if len(sched) == 0 {
		return nil
	}
	ps := &results.PodStart{Schedule: stats.Summarize(sched), Run: stats.Summarize(run), Ready: stats.Summarize(ready), CreateToReady: stats.Summarize(total)}
	if len(nodes) == 1 {
		for n := range nodes {
			ps.Node = n
		}
	}
	return ps
}
