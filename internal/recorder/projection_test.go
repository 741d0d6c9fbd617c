package recorder_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/brakebench/brakebench/internal/recorder"
	"github.com/brakebench/brakebench/internal/recorder/recordertest"
)

// steady is a synthetic create timeline: n creates at rate per second from start.
func steady(start time.Time, n int, rate float64) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
	}
	return out
}

// upTo keeps the creates seen by now (the rule only ever sees the past).
func upTo(creates []time.Time, now time.Time) []time.Time {
	var out []time.Time
	for _, c := range creates {
		if !c.After(now) {
			out = append(out, c)
		}
	}
	return out
}

// The projection rule on synthetic create timelines: a 300-slot refill whose wait starts at the
// first create and runs out 90 s later, projected with a 10 s window unless a case says otherwise.
func TestProjectRefill(t *testing.T) {
	start := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	sec := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	const slots, window = 300, 10 * time.Second
	deadline := sec(90)
	cases := []struct {
		name     string
		timeline []time.Time // every create the refill will make
		window   time.Duration
		deadline time.Time
		at       float64 // seconds after the first create the rule is applied
		cut      bool
		rate     float64 // creates/s over the window (checked when cut)
		finish   float64 // projected completion, seconds after the first create (-1: never)
	}{
		// 50/s: 300 creates in 6 s. At 5 s, before a window's worth of rate, nothing is judged; at
		// 5.98 s (the last create) the refill is already over; at 10 s nothing remains to create.
		{name: "fast refill, before the window", timeline: steady(start, slots, 50), window: window, deadline: deadline, at: 5},
		{name: "fast refill, nothing left to create", timeline: steady(start, slots, 50), window: window, deadline: deadline, at: 10},
		// 20/s: 200 created at 10 s, 100 to go at 20/s: done at 15 s, well within 90 s.
		{name: "20/s refill is not cut", timeline: steady(start, slots, 20), window: window, deadline: deadline, at: 10},
		// 1/s: 11 created by 10 s (the first at 0 s), 289 to go: 289 s more against 80 s left.
		{name: "1/s refill, just before the window", timeline: steady(start, slots, 1), window: window, deadline: deadline, at: 9.999},
		{name: "1/s refill, cut once the window has rate", timeline: steady(start, slots, 1), window: window, deadline: deadline, at: 10,
			cut: true, rate: 1, finish: 10 + 289},
		// 3/s: 31 created by 10 s, 269 to go: 89.7 s more against 80 s left. Past the deadline,
		// but within the margin (a refill's rate is not steady): not cut.
		{name: "3/s refill, past the deadline within the margin", timeline: steady(start, slots, 3), window: window, deadline: deadline, at: 10},
		{name: "3/s refill, still within the margin at 80 s", timeline: steady(start, slots, 3), window: window, deadline: deadline, at: 80},
		// At 81 s: 244 created, 56 to go need 18.7 s against 9 s left: more than twice.
		{name: "3/s refill, cut once it needs twice the time left", timeline: steady(start, slots, 3), window: window, deadline: deadline, at: 81,
			cut: true, rate: 3, finish: 81 + 56.0/3},
		// The same 3/s refill of 300 with a 200 s wait: 100 s is within it.
		{name: "3/s refill with time to finish", timeline: steady(start, slots, 3), window: window, deadline: sec(200), at: 10},
		// 10 creates in the first second, then none: the last 10 s hold no create at 11 s.
		{name: "rate 0 is cut", timeline: steady(start, 10, 10), window: window, deadline: deadline, at: 11, cut: true, rate: 0, finish: -1},
		{name: "rate 0, one create still in the window", timeline: steady(start, 10, 10), window: window, deadline: deadline, at: 10.8,
			cut: true, rate: 0.1, finish: 10.8 + 2900},
		// Off: never cut, however slow.
		{name: "off, 3/s", timeline: steady(start, slots, 3), window: 0, deadline: deadline, at: 40},
		{name: "off, rate 0", timeline: steady(start, 10, 10), window: 0, deadline: deadline, at: 60},
		// The wait has run out: a timeout, not a projection.
		{name: "past the deadline", timeline: steady(start, slots, 3), window: window, deadline: deadline, at: 90},
		{name: "no create yet", timeline: nil, window: window, deadline: deadline, at: 30},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			now := sec(c.at)
			seen := upTo(c.timeline, now)
			remaining := slots - len(seen)
			p := recorder.ProjectRefill(seen, remaining, now, c.deadline, c.window)
			if p.Cut != c.cut {
				t.Fatalf("cut %v, want %v (%+v)", p.Cut, c.cut, p)
			}
			if !c.cut {
				return
			}
			if math.Abs(p.Rate-c.rate) > 1e-9 || p.Remaining != remaining {
				t.Errorf("rate %v (want %v), remaining %d (want %d)", p.Rate, c.rate, p.Remaining, remaining)
			}
			switch {
			case c.finish < 0 && !p.Finish.IsZero():
				t.Errorf("finish %v, want never", p.Finish)
			case c.finish >= 0 && math.Abs(p.Finish.Sub(start).Seconds()-c.finish) > 0.01:
				t.Errorf("finish %.3f s, want %.3f s", p.Finish.Sub(start).Seconds(), c.finish)
			}
		})
	}
}

// The 1/s refill of 300 slots with a 90 s wait, applied every 100 ms as a cell's wait would: it
// is cut exactly when the window first holds a rate, never earlier.
func TestProjectRefillCutsOnceTheWindowHasRate(t *testing.T) {
	start := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	timeline := steady(start, 300, 1)
	for _, w := range []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second} {
		var cutAt time.Duration
		for d := time.Duration(0); d < 90*time.Second; d += 100 * time.Millisecond {
			seen := upTo(timeline, start.Add(d))
			if p := recorder.ProjectRefill(seen, 300-len(seen), start.Add(d), start.Add(90*time.Second), w); p.Cut {
				cutAt = d
				break
			}
		}
		if cutAt != w {
			t.Errorf("window %s: cut at %s, want at %s", w, cutAt, w)
		}
	}
}

func TestProjectionText(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	p := recorder.ProjectRefill(steady(at(20), 31, 3), 270, at(30), at(98), 10*time.Second)
	if got, want := p.Text(t0), "refill projected at 120.0 s from the rate over the last 10s (3 creates/s, 270 creates to go; the wait ran out at 98.0 s); ended at 30.0 s"; got != want {
		t.Errorf("text\n%s\nwant\n%s", got, want)
	}
	never := recorder.ProjectRefill([]time.Time{at(5)}, 299, at(30), at(98), 10*time.Second)
	if got := never.Text(t0); !strings.HasPrefix(got, "refill projected never from the rate over the last 10s (no create in it, 299 creates to go") || !strings.HasSuffix(got, "ended at 30.0 s") {
		t.Errorf("text %q", got)
	}
}

// RefillCreates reads the recorder's create timeline: the pool's sandboxes first seen at or after
// t0, in order, and the warm slots claims took (sandboxes first seen before t0).
func TestRefillCreates(t *testing.T) {
	rec, s := start(t)
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s.Sandboxes.Add(recordertest.Sandbox(ns, "fill-0", "SandboxWarmPool/p", "warm", t0, false, 2))
	s.Sandboxes.Add(recordertest.Sandbox(ns, "fill-1", "SandboxWarmPool/p", "warm", t0, false, 3))
	waitSnap(t, rec, "fill", func(sn recorder.Snapshot) bool { return len(sn.Sandboxes) == 2 })
	burst := time.Now()
	s.Claims.Add(recordertest.Claim(ns, "c0", "p", "fill-0", t0, t0, 4))
	s.Claims.Add(recordertest.Claim(ns, "c1", "p", "fill-1", t0, t0, 5))
	s.Sandboxes.Add(recordertest.Sandbox(ns, "refill-0", "SandboxWarmPool/p", "", t0, false, 6))
	s.Sandboxes.Add(recordertest.Sandbox(ns, "cold-0", "SandboxClaim/c9", "cold", t0, false, 7))
	s.Sandboxes.Add(recordertest.Sandbox(ns, "refill-1", "SandboxWarmPool/p", "", t0, false, 8))
	waitSnap(t, rec, "burst", func(sn recorder.Snapshot) bool { return len(sn.Sandboxes) == 5 && len(sn.Claims) == 2 })
	creates, taken := rec.RefillCreates(burst)
	if len(creates) != 2 || taken != 2 || creates[1].Before(creates[0]) || creates[0].Before(burst) {
		t.Errorf("creates %v taken %d; want 2 in order from the burst on, 2 taken", creates, taken)
	}
	if created, tk := rec.Refill(burst); created != 2 || tk != 2 {
		t.Errorf("Refill %d, %d", created, tk)
	}
}
