package suites

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/brakebench/brakebench/internal/recorder"
	"github.com/brakebench/brakebench/internal/recorder/recordertest"
	"github.com/brakebench/brakebench/internal/results"
)

// waitRefill on the recorder's real informers fed a synthetic watch stream: a 2-slot pool is full,
// two claims take its sandboxes at T0, and then the refill completes, stalls, or stalls with the
// projection off.
func TestWaitRefill(t *testing.T) {
	const ns = "cell"
	cases := []struct {
		name      string
		refill    func(s *recordertest.Stream, at time.Time) // after T0
		window    time.Duration
		timeout   time.Duration
		refilled  bool
		projected bool
		maxWait   time.Duration
		minWait   time.Duration
	}{
		{name: "a refill that completes is not cut", window: 200 * time.Millisecond, timeout: 5 * time.Second, refilled: true, maxWait: 2 * time.Second,
			refill: func(s *recordertest.Stream, at time.Time) {
				s.Sandboxes.Add(recordertest.Sandbox(ns, "refill-0", "SandboxWarmPool/p", "", at, false, 10))
				s.Sandboxes.Add(recordertest.Sandbox(ns, "refill-1", "SandboxWarmPool/p", "", at, false, 11))
				s.Pools.Modify(recordertest.Pool(ns, "p", 2, 2, 2, 12))
			}},
		// One create, then none: once the window has passed since it, the rate over the window is
		// 0 and the refill is projected never to complete (checked at the recorder's 1 s tick).
		{name: "a stalled refill is ended by projection", window: 200 * time.Millisecond, timeout: 5 * time.Second, projected: true, maxWait: 3 * time.Second,
			refill: func(s *recordertest.Stream, at time.Time) {
				s.Sandboxes.Add(recordertest.Sandbox(ns, "refill-0", "SandboxWarmPool/p", "", at, false, 10))
			}},
		{name: "projection off: the wait runs out", window: 0, timeout: 1500 * time.Millisecond, minWait: 1500 * time.Millisecond, maxWait: 4 * time.Second,
			refill: func(s *recordertest.Stream, at time.Time) {
				s.Sandboxes.Add(recordertest.Sandbox(ns, "refill-0", "SandboxWarmPool/p", "", at, false, 10))
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, infs := recordertest.New(100)
			rec, err := recorder.StartInformers(context.Background(), infs, ns)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(rec.Stop)
			server := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
			s.Pools.Add(recordertest.Pool(ns, "p", 2, 2, 2, 2))
			s.Sandboxes.Add(recordertest.Sandbox(ns, "fill-0", "SandboxWarmPool/p", "warm", server, false, 3))
			s.Sandboxes.Add(recordertest.Sandbox(ns, "fill-1", "SandboxWarmPool/p", "warm", server, false, 4))
			if !rec.WaitFor(context.Background(), 5*time.Second, func() bool { _, sb, _ := rec.Counts(); return sb == 2 }) {
				t.Fatal("the fill was not seen")
			}
			t0 := time.Now()
			s.Claims.Add(recordertest.Claim(ns, "c0", "p", "fill-0", server, server, 5))
			s.Claims.Add(recordertest.Claim(ns, "c1", "p", "fill-1", server, server, 6))
			s.Pools.Modify(recordertest.Pool(ns, "p", 2, 0, 0, 7))
			if !rec.WaitFor(context.Background(), 5*time.Second, func() bool { _, taken := rec.Refill(t0); r, _ := rec.PoolReady("p"); return taken == 2 && r == 0 }) {
				t.Fatal("the burst was not seen")
			}
			c.refill(s, server)
			start := time.Now()
			rw := waitRefill(context.Background(), rec, t0, "p", 2, c.timeout, c.window)
			took := time.Since(start)
			if rw.refilled != c.refilled || (rw.projection != nil) != c.projected {
				t.Fatalf("refilled %v, projection %+v; want refilled %v, projected %v", rw.refilled, rw.projection, c.refilled, c.projected)
			}
			if took > c.maxWait || took < c.minWait {
				t.Errorf("waited %s, want %s to %s", took, c.minWait, c.maxWait)
			}
			if p := rw.projection; p != nil && (p.Rate != 0 || !p.Finish.IsZero() || p.Remaining != 1 || !p.Cut) {
				t.Errorf("projection %+v, want rate 0 (never) with 1 create to go", p)
			}
		})
	}
}

// A cell whose refill wait was ended by projection: not refilled (even though a pool sample says
// full), ended and projected seconds and the sentence recorded, the refill create ratios left
// null; what happened (timelines, ceilings, start of the refill) stands.
func TestAssembleProjectedCell(t *testing.T) {
	cases := []struct {
		name      string
		rate      bool // a create in the window (a finite projection) or none (never)
		projected *float64
		text      string
	}{
		{name: "finite projection", rate: true, projected: f64(2.1 + 97.0/0.4), text: "refill projected at 244.6 s from the rate over the last 10s (0.4 creates/s, 97 creates to go; the wait ran out at 92.0 s); ended at 2.1 s"},
		{name: "rate 0: projected never", rate: false, text: "refill projected never from the rate over the last 10s (no create in it, 97 creates to go; the wait ran out at 92.0 s); ended at 2.1 s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := handMadeCell(results.Brake{})
			at := func(ms int) time.Time { return in.t0.Add(time.Duration(ms) * time.Millisecond) }
			p := recorder.Projection{Cut: true, At: at(2100), Window: 10 * time.Second, Remaining: 97, Deadline: at(92000)}
			if c.rate {
				p.Creates, p.Rate = 4, 0.4
				p.Finish = p.At.Add(time.Duration(97 / 0.4 * float64(time.Second)))
			}
			in.projection = &p
			cell := assemble(in)
			st := cell.Stats
			if st.RefillSeconds != nil {
				t.Errorf("refill seconds %v, want null (projected, not refilled)", *st.RefillSeconds)
			}
			if st.RefillEndedSeconds == nil || math.Abs(*st.RefillEndedSeconds-2.1) > 1e-9 {
				t.Errorf("ended %v, want 2.1", st.RefillEndedSeconds)
			}
			switch {
			case c.projected == nil && st.RefillProjectedSeconds != nil:
				t.Errorf("projected %v, want null (never)", *st.RefillProjectedSeconds)
			case c.projected != nil && (st.RefillProjectedSeconds == nil || math.Abs(*st.RefillProjectedSeconds-*c.projected) > 1e-6):
				t.Errorf("projected %v, want %v", st.RefillProjectedSeconds, *c.projected)
			}
			if st.RefillProjection != c.text {
				t.Errorf("text\n%s\nwant\n%s", st.RefillProjection, c.text)
			}
			if cr := st.Correctness; cr.RefillCreatesPerSlot != nil || cr.RefillAPICreatesPerSlot != nil || cr.PodCreatesPerSandbox == nil {
				t.Errorf("correctness %+v: the refill ratios must be null, the rest measured", cr)
			}
			if st.Ceilings.RefillCreate1s != 3 || st.RefillStartSeconds == nil || len(cell.Timeline.RefillCreates) != 3 {
				t.Errorf("what happened is gone: ceilings %+v, start %v, timeline %v", st.Ceilings, st.RefillStartSeconds, cell.Timeline.RefillCreates)
			}
		})
	}
	// Not projected: as before, refilled at 2.5 s, nothing of the projection.
	st := assemble(handMadeCell(results.Brake{})).Stats
	if st.RefillSeconds == nil || st.RefillEndedSeconds != nil || st.RefillProjectedSeconds != nil || st.RefillProjection != "" ||
		st.Correctness.RefillCreatesPerSlot == nil {
		t.Errorf("unprojected cell %+v", st)
	}
}

func f64(v float64) *float64 { return &v }

// The projection window covers twice a cell's replenish delay (the re-armed hold is not a rate of
// 0), and stays off when off.
func TestProjectionWindow(t *testing.T) {
	rd := results.Brake{Settings: map[string]string{"replenish-delay": "15s", "max-refill-rate": "10"}}
	for _, tc := range []struct {
		name string
		w    time.Duration
		b    results.Brake
		want time.Duration
	}{
		{"no brake", 10 * time.Second, results.Brake{}, 10 * time.Second},
		{"a 15 s delay", 10 * time.Second, rd, 30 * time.Second},
		{"a longer window stays", time.Minute, rd, time.Minute},
		{"off stays off", 0, rd, 0},
		{"an older results field", 10 * time.Second, results.Brake{ReplenishDelay: "20s"}, 40 * time.Second},
	} {
		if got := projectionWindow(tc.w, tc.b); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
