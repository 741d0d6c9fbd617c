package config

import (
	"math"
	"time"
)

// Ceiling is the ceiling search of workload.mode ceiling: sustained open-loop Poisson arrivals at
// increasing rates (geometric steps from Start by Factor), then bisection between the highest
// rate that met the criteria and the lowest that did not, until they are within Tolerance. Each
// rate is one probe of Probe; claims sent in its first Warmup are not judged, the rest are split
// into Windows windows by send time for the steady-state rule (internal/ceiling states it).
type Ceiling struct {
	Start     float64       `mapstructure:"start"`     // first offered rate, claims/s
	Factor    float64       `mapstructure:"factor"`    // geometric step while every probe passed
	Max       float64       `mapstructure:"max"`       // highest rate offered
	Tolerance float64       `mapstructure:"tolerance"` // relative width at which bisection stops
	MaxProbes int           `mapstructure:"maxProbes"` // probes per search (one search per repetition)
	Probe     time.Duration `mapstructure:"probe"`     // how long each rate is offered
	Warmup    time.Duration `mapstructure:"warmup"`    // the start of a probe that is not judged
	Windows   int           `mapstructure:"windows"`   // windows of the judged part (steady-state rule)
	// Settle is how long after a probe's last send its claims may still turn Ready; a claim not
	// Ready by then (or by workload.claimTimeout, whichever is first) counts as failed.
	Settle time.Duration `mapstructure:"settle"`
	// Criteria are what a probe must meet, any of: p99 (claim p99 <= SLO), failed (no failed
	// claim), cold (no claim served cold), pool (the warm pool never empty), lag (send lag not
	// growing without bound), steady (claim p99 not still rising).
	Criteria []string      `mapstructure:"criteria"`
	SLO      time.Duration `mapstructure:"slo"` // the p99 criterion's bound
	// SteadyTolerance: the last window's claim p99 may exceed the previous window's by this
	// fraction before the probe counts as "latency still rising".
	SteadyTolerance float64 `mapstructure:"steadyTolerance"`
	// SteadyFloor: a last window whose claim p99 is at or below it is steady whatever the
	// previous window's (a rise from 0.5 s to 0.8 s is window jitter, not a growing queue).
	SteadyFloor time.Duration `mapstructure:"steadyFloor"`
	// LagGrowth: the last window's send-lag p99 above LagGrowth x the previous window's (and
	// above 100 ms) is send lag growing without bound.
	LagGrowth float64 `mapstructure:"lagGrowth"`
}

// CeilingCriteria are the criteria names workload.ceiling.criteria accepts.
var CeilingCriteria = []string{"p99", "failed", "cold", "pool", "lag", "steady"}

func defaultCeiling() Ceiling {
	return Ceiling{Start: 5, Factor: 2, Max: 640, Tolerance: 0.15, MaxProbes: 12, Probe: 20 * time.Second, Warmup: 5 * time.Second,
		Windows: 2, Settle: 30 * time.Second, Criteria: []string{"p99", "failed", "steady"}, SLO: 5 * time.Second,
		SteadyTolerance: 0.5, SteadyFloor: time.Second, LagGrowth: 3}
}

// validateCeiling checks workload.ceiling when workload.mode is ceiling.
func (r *Resolved) validateCeiling() error {
	w := r.Workload
	if w.Mode != "ceiling" {
		return nil
	}
	c := w.Ceiling
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	checks := []struct {
		bad  bool
		key  string
		want string
		got  any
	}{
		{bad(c.Start) || c.Start <= 0 || c.Start > maxRate, "workload.ceiling.start", "a positive rate up to 100000 claims/s", c.Start},
		{bad(c.Factor) || c.Factor <= 1 || c.Factor > 10, "workload.ceiling.factor", "a step factor above 1, at most 10", c.Factor},
		{bad(c.Max) || c.Max < c.Start || c.Max > maxRate, "workload.ceiling.max", "a rate from workload.ceiling.start up to 100000 claims/s", c.Max},
		{bad(c.Tolerance) || c.Tolerance <= 0 || c.Tolerance > 1, "workload.ceiling.tolerance", "a relative width above 0, at most 1 (0.15: stop when the bracket is within 15%)", c.Tolerance},
		{outside(c.MaxProbes, 2, 100), "workload.ceiling.maxProbes", "2 to 100", c.MaxProbes},
		{outside(c.Probe, time.Second, time.Hour), "workload.ceiling.probe", "a duration from 1s to 1h", c.Probe},
		{c.Warmup < 0 || c.Warmup >= c.Probe, "workload.ceiling.warmup", "a duration from 0s to under workload.ceiling.probe", c.Warmup},
		{outside(c.Windows, 2, 20), "workload.ceiling.windows", "2 to 20", c.Windows},
		{outside(c.Settle, time.Second, time.Hour), "workload.ceiling.settle", "a duration from 1s to 1h", c.Settle},
		{len(c.Criteria) == 0 || !allOneOf(c.Criteria, CeilingCriteria...), "workload.ceiling.criteria", "a non-empty list from p99, failed, cold, pool, lag, steady", c.Criteria},
		{outside(c.SLO, time.Millisecond, maxDuration), "workload.ceiling.slo", "a duration from 1ms to 24h", c.SLO},
		{bad(c.SteadyTolerance) || c.SteadyTolerance <= 0 || c.SteadyTolerance > 10, "workload.ceiling.steadyTolerance", "a fraction above 0, at most 10", c.SteadyTolerance},
		{outside(c.SteadyFloor, 0, maxDuration), "workload.ceiling.steadyFloor", "a duration from 0s to 24h", c.SteadyFloor},
		{bad(c.LagGrowth) || c.LagGrowth <= 1 || c.LagGrowth > 1000, "workload.ceiling.lagGrowth", "a factor above 1, at most 1000", c.LagGrowth},
		{r.Loadgen.Runner != "local", "loadgen.runner", "local with workload.mode ceiling (each probe's rate is chosen from the last one's outcome, in this process)", r.Loadgen.Runner},
		{len(r.Matrix.Faults) != 1 || r.Matrix.Faults[0] != "none", "matrix.faults", "none with workload.mode ceiling (a fault's timing is per burst, a search has many probes)", r.Matrix.Faults},
	}
	also := map[string][]string{"workload.ceiling.max": {"workload.ceiling.start"}, "workload.ceiling.warmup": {"workload.ceiling.probe"},
		"loadgen.runner": {"workload.mode"}, "matrix.faults": {"workload.mode"}}
	for _, ch := range checks {
		if ch.bad {
			return r.failWith(ch.key, also[ch.key], "expected %s, got %v", ch.want, ch.got)
		}
	}
	return nil
}
