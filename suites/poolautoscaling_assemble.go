package suites

import (
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/brakebench/brakebench/internal/recorder"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
)

func claimGVR() schema.GroupVersionResource { return agentsandbox.ClaimGVR }

// assembleAutoscale turns the recorder's pool samples and the demand history into the cell's
// time series and per-step figures (decision = spec.replicas, capacity = status.readyReplicas).
func assembleAutoscale(as *results.Autoscale, snap recorder.Snapshot, hist []demandPoint, created [][]string, t0, end time.Time) {
	type ev struct {
		at   time.Time
		pool *recorder.PoolSample
		dem  *int
	}
	var evs []ev
	pool := snap.Pools[PoolName]
	start := results.AutoscaleSample{}
	for i := range pool {
		p := pool[i]
		if !p.At.After(t0) {
			start.Spec, start.Replicas, start.Ready = int(p.Desired), int(p.Replicas), int(p.Ready)
			continue
		}
		if p.At.After(end) {
			break
		}
		evs = append(evs, ev{at: p.At, pool: &p})
	}
	for _, h := range hist {
		n := h.n
		evs = append(evs, ev{at: h.at, dem: &n})
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
	cur := start
	as.Samples = []results.AutoscaleSample{cur}
	for _, e := range evs {
		if e.pool != nil {
			cur.Spec, cur.Replicas, cur.Ready = int(e.pool.Desired), int(e.pool.Replicas), int(e.pool.Ready)
		} else {
			cur.Demand = *e.dem
		}
		cur.T = e.at.Sub(t0).Seconds()
		as.Samples = append(as.Samples, cur)
	}
	as.MinSpec, as.MaxSpec, as.EndSpec = cur.Spec, cur.Spec, cur.Spec
	prev := start.Spec
	for _, s := range as.Samples {
		as.MinSpec, as.MaxSpec = min(as.MinSpec, s.Spec), max(as.MaxSpec, s.Spec)
		if s.Spec != prev {
			as.ReplicaChanges++
			prev = s.Spec
		}
	}
	at := func(t float64) results.AutoscaleSample {
		v := as.Samples[0]
		for _, s := range as.Samples {
			if s.T > t {
				break
			}
			v = s
		}
		return v
	}
	horizon := end.Sub(t0).Seconds()
	for i := range as.Steps {
		st := &as.Steps[i]
		wEnd := horizon
		if i+1 < len(as.Steps) {
			wEnd = as.Steps[i+1].T
		}
		first, last := at(st.T), at(wEnd)
		st.Decision, st.Capacity, st.PeakSpec = last.Spec, last.Ready, first.Spec
		// Overshoot: how far spec.replicas went beyond both where it started and where it ended
		// (a scale-up past its final value, or a rise during a scale-down).
		ceiling := max(first.Spec, st.Decision)
		for _, s := range as.Samples {
			if s.T < st.T || s.T > wEnd {
				continue
			}
			st.PeakSpec = max(st.PeakSpec, s.Spec)
			st.Overshoot = max(st.Overshoot, s.Spec-ceiling)
			if st.DecisionSeconds == nil && first.Spec != st.Decision && s.Spec == st.Decision {
				d := s.T - st.T
				st.DecisionSeconds = &d
			}
			if st.CapacitySeconds == nil && first.Ready != st.Decision && s.Ready == st.Decision {
				d := s.T - st.T
				st.CapacitySeconds = &d
			}
		}
		if i < len(created) {
			for _, name := range created[i] {
				cl, ok := snap.Claims[name]
				if !ok || cl.Sandbox == "" {
					continue
				}
				switch snap.Sandboxes[cl.Sandbox].LaunchType {
				case "warm":
					st.Warm++
				case "cold":
					st.Cold++
				}
			}
		}
		as.Warm += st.Warm
		as.Cold += st.Cold
	}
}

// autoscaleAssertions are the checks that can fail, printed like the blueprint's: the control
// arm's spec.replicas stays flat under the same demand; with the autoscaler it rises to the
// bound and returns to the floor.
func autoscaleAssertions(as *results.Autoscale) []string {
	mark := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "FAIL"
	}
	var out []string
	if as.Arm == "control" {
		out = append(out, fmt.Sprintf("%s: without an autoscaler, spec.replicas stayed at %d under the same demand (min %d, max %d, %d changes)",
			mark(as.ReplicaChanges == 0), as.Samples[0].Spec, as.MinSpec, as.MaxSpec, as.ReplicaChanges))
		return out
	}
	peak := 0
	for _, s := range as.Steps {
		peak = max(peak, s.Demand)
	}
	wantTop := min(max(peak, as.Min), as.Max)
	out = append(out, fmt.Sprintf("%s: with KEDA, spec.replicas rose to %d (the bound for a peak demand of %d; max %d)", mark(as.MaxSpec >= wantTop), as.MaxSpec, peak, as.Max))
	if last := as.Steps[len(as.Steps)-1]; last.Demand == 0 {
		out = append(out, fmt.Sprintf("%s: with KEDA, spec.replicas returned to the floor %d when demand fell to 0 (ended at %d)", mark(as.EndSpec == as.Min), as.Min, as.EndSpec))
	}
	for i, s := range as.Steps {
		if s.Expected >= 0 && s.Decision != s.Expected {
			out = append(out, fmt.Sprintf("NOTE: step %d (demand %d): AverageValue expects %d, the pool ended the step at %d", i, s.Demand, s.Expected, s.Decision))
		}
	}
	return out
}
