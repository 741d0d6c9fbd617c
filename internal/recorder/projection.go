package recorder

import (
	"fmt"
	"sort"
	"time"
)

// Projection is the refill projection rule's answer at one moment of a cell's wait for its
// refill: whether the refill, at the create rate it holds now, would still be short of full when
// the wait runs out, so that waiting longer cannot make it a measured refill.
//
// The rule (ProjectRefill), with W the window (workload.refillProjection; 0 turns it off):
//
//  1. The refill must have run at least W since its first create (the first sandbox the pool
//     created that was first seen at or after T0): before that there is no rate to project from.
//  2. The rate is the creates first seen in the last W, divided by W (creates/s).
//  3. The refill is projected to complete at now + remaining/rate, remaining being the warm slots
//     taken minus the sandboxes created since T0 (Refill). A rate of 0 projects no completion at
//     all (never).
//  4. The wait is ended when the refill needs more than Margin (2) times the wait's time left
//     (deadline: the wait's start plus workload.refillTimeout), i.e. when even a refill that
//     doubled its rate from now on could not finish in time. Never once the deadline has passed
//     (that wait timed out: it is a timeout, not a projection), never with nothing left to
//     create (the pods are booting: only readiness is left), never with the rule off. The margin
//     is there because a refill's rate is not steady: on the lab a 10/s max-refill-rate refill
//     of 300 held 2.6 creates/s over 10 s while the burst's claims were still binding, which
//     without it projected 115.8 s against a 113.7 s deadline and ended a refill that finishes
//     within the wait at 10 runs of the fixed design.
//
// The projection counts creates only, never the pods' boot to Ready after them, so a completion it
// projects is earlier than the real one: a refill it ends could not have finished in time at the
// rate it held. A refill that speeds up later than W after its first create is the one it can
// misjudge; a brake that holds the refill back for longer than W at a time (a replenish delay
// that re-arms) reads as rate 0 then.
// Margin is how many times the wait's time left a refill must need to be ended (rule 4).
const Margin = 2.0

type Projection struct {
	Cut       bool
	At        time.Time     // when the rule was applied
	Window    time.Duration // W
	Creates   int           // creates first seen in the last W
	Rate      float64       // creates/s over the last W
	Remaining int           // creates still missing
	// Finish is the projected completion (zero: the rate is 0, never).
	Finish   time.Time
	Deadline time.Time // when the wait runs out
}

// ProjectRefill applies the refill projection rule (see Projection) at now to the refill's create
// timeline: creates are the harness-clock times at which the pool's sandboxes created since T0
// were first seen, in order; remaining the creates the refill still needs; deadline the end of the
// wait for the refill; window W (0 or less: the rule is off and never ends a wait).
func ProjectRefill(creates []time.Time, remaining int, now, deadline time.Time, window time.Duration) Projection {
	p := Projection{At: now, Window: window, Remaining: remaining, Deadline: deadline}
	if window <= 0 || len(creates) == 0 || remaining <= 0 || !now.Before(deadline) || now.Sub(creates[0]) < window {
		return p
	}
	from := now.Add(-window)
	// The creates in (now-W, now]: the first index after from, up to the last not after now.
	lo := sort.Search(len(creates), func(i int) bool { return creates[i].After(from) })
	hi := sort.Search(len(creates), func(i int) bool { return creates[i].After(now) })
	p.Creates = hi - lo
	p.Rate = float64(p.Creates) / window.Seconds()
	if p.Rate <= 0 {
		p.Cut = true
		return p
	}
	need := time.Duration(float64(remaining) / p.Rate * float64(time.Second))
	p.Finish = now.Add(need)
	p.Cut = float64(need) > Margin*float64(deadline.Sub(now))
	return p
}

// Text is the projection in one sentence, times in seconds from t0: "refill projected at 187.3 s
// from the rate over the last 10 s (2.9 creates/s, 251 creates to go; the wait ran out at 98.2 s);
// ended at 31.0 s".
func (p Projection) Text(t0 time.Time) string {
	secs := func(t time.Time) float64 { return t.Sub(t0).Seconds() }
	if p.Finish.IsZero() {
		return fmt.Sprintf("refill projected never from the rate over the last %s (no create in it, %d creates to go; the wait ran out at %.1f s); ended at %.1f s",
			p.Window, p.Remaining, secs(p.Deadline), secs(p.At))
	}
	return fmt.Sprintf("refill projected at %.1f s from the rate over the last %s (%.2g creates/s, %d creates to go; the wait ran out at %.1f s); ended at %.1f s",
		secs(p.Finish), p.Window, p.Rate, p.Remaining, secs(p.Deadline), secs(p.At))
}

// RefillCreates is Refill's count with its timeline: the harness-clock times, in order, at which
// the sandboxes the warm-pool controller created were first seen at or after t0, and the claims
// bound to a sandbox first seen before t0 (the warm slots the refill must replace).
func (r *Recorder) RefillCreates(t0 time.Time) (creates []time.Time, taken int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sandboxes {
		if obs := r.harness(s.observed); s.fromPool && !obs.Before(t0) {
			creates = append(creates, obs)
		}
	}
	for _, c := range r.claims {
		if s := r.sandboxes[c.sandbox]; c.sandbox != "" && s != nil && r.harness(s.observed).Before(t0) {
			taken++
		}
	}
	sort.Slice(creates, func(i, j int) bool { return creates[i].Before(creates[j]) })
	return creates, taken
}
