package ceiling

import (
	"math"
	"strings"
	"testing"
	"time"
)

// probe is a measure of a probe at rate claims/s for dur with a 20 s warm-up and 2 windows:
// one claim every 1/rate seconds, each shaped by f (which sees its send time).
func probe(rate float64, dur time.Duration, f func(at time.Duration, c *ProbeClaim)) Measure {
	m := Measure{Rate: rate, Duration: dur, Warmup: 20 * time.Second, Windows: 2}
	step := time.Duration(float64(time.Second) / rate)
	for at := time.Duration(0); at < dur; at += step {
		c := ProbeClaim{Sent: at, Latency: 500 * time.Millisecond, Lag: 5 * time.Millisecond}
		if f != nil {
			f(at, &c)
		}
		m.Claims = append(m.Claims, c)
	}
	return m
}

const sec = time.Second

func TestJudge(t *testing.T) {
	all := Criteria{P99SLO: 2 * sec, NoFailed: true, NoCold: true, PoolNotEmptied: true, LagGrowth: 2, SteadyTol: 0.5}
	// In the warm-up (before 20 s) everything is bad; judged claims are sent at 20-80 s, the
	// windows are [20 s, 50 s) and [50 s, 80 s).
	badWarmup := func(at time.Duration, c *ProbeClaim) {
		if at < 20*sec {
			c.Latency, c.Failed, c.Cold, c.Lag = 30*sec, at%(3*sec) == 0, true, 9*sec
		}
	}
	tests := []struct {
		name string
		crit Criteria
		m    Measure
		ok   bool
		want []string // substrings of the reason
		not  []string // substrings it must not have
	}{
		{"all good", all, probe(10, 80*sec, nil), true, []string{"met:", "claim p99 500ms within the SLO 2s", "no failed claim", "steady"}, nil},
		{"warm-up claims ignored", all, probe(10, 80*sec, badWarmup), true, []string{"met:"}, nil},
		{"p99 over the SLO", Criteria{P99SLO: 2 * sec}, probe(10, 80*sec, func(at time.Duration, c *ProbeClaim) {
			if at%(8*sec) == 0 {
				c.Latency = 4200 * time.Millisecond // 7 of 600 claims (24 s, 32 s, ..., 72 s): the p99
			}
		}), false, []string{"claim p99 4.2s over the SLO 2s (600 claims after the 20s warm-up)"}, nil},
		{"p99 just within the SLO", Criteria{P99SLO: 2 * sec}, probe(10, 80*sec, func(at time.Duration, c *ProbeClaim) {
			if at == 30*sec {
				c.Latency = 9 * sec // 1 of 600 is above the 99th percentile
			}
		}), true, []string{"within the SLO"}, nil},
		{"failed claims count as infinite in the p99", Criteria{P99SLO: 2 * sec}, probe(10, 80*sec, func(at time.Duration, c *ProbeClaim) {
			c.Failed = at%(5*sec) == 0
		}), false, []string{"claim p99 +Inf over the SLO 2s"}, nil},
		{"a failed claim", all, probe(10, 80*sec, func(at time.Duration, c *ProbeClaim) { c.Failed = at == 70*sec }), false, []string{"1 of 600 claims failed"}, []string{"cold", "SLO"}},
		{"failures ignored when not a criterion", Criteria{NoCold: true}, probe(10, 80*sec, func(at time.Duration, c *ProbeClaim) { c.Failed = at == 70*sec }), true, nil, nil},
		{"cold claims", all, probe(10, 80*sec, func(at time.Duration, c *ProbeClaim) { c.Cold = at >= 60*sec }), false, []string{"200 of 600 claims cold"}, []string{"failed"}},
		{"pool emptied", all, func() Measure { m := probe(10, 80*sec, nil); m.PoolEmptied = true; return m }(), false, []string{"warm pool reached 0 Ready"}, nil},
		{"send lag growing", all, probe(10, 80*sec, func(at time.Duration, c *ProbeClaim) {
			x := (at - 20*sec).Seconds() / 60                               // 0 to 1 over the steady part
			c.Lag = 50*time.Millisecond + time.Duration(x*x*x*float64(sec)) // 50 ms to 1.05 s, cubic
		}), false, []string{"send lag growing without bound: the last window's p99 send lag 1.03s is over 2 x the previous window's 170ms (and above 100ms)"}, nil},
		{"send lag growing linearly, less than 2 x a window", all, probe(10, 80*sec, func(at time.Duration, c *ProbeClaim) {
			c.Lag = 50*time.Millisecond + (at-20*sec)/100 // 50 ms at 20 s to 650 ms at 80 s
		}), true, []string{"send lag p99 346ms then 646ms"}, nil},
		{"send lag growing below the 100 ms floor", all, probe(10, 80*sec, func(at time.Duration, c *ProbeClaim) {
			c.Lag = (at - 20*sec) / 1000 // 0 to 60 ms
		}), true, nil, nil},
		{"send lag high but flat", all, probe(10, 80*sec, func(at time.Duration, c *ProbeClaim) { c.Lag = 900 * time.Millisecond }), true, nil, nil},
		{"latency still rising", Criteria{SteadyTol: 0.5}, probe(10, 80*sec, func(at time.Duration, c *ProbeClaim) {
			c.Latency = at / 40 // p99 1.24 s in [20, 50), 1.99 s in [50, 80): +60%
		}), false, []string{"not steady: latency still rising: the last window's claim p99 1.99s is 60% above the previous window's 1.24s (steady within 50%)"}, nil},
		{"latency rising within the tolerance", Criteria{SteadyTol: 0.7}, probe(10, 80*sec, func(at time.Duration, c *ProbeClaim) { c.Latency = at / 40 }), true, []string{"steady (last windows' p99 1.24s then 1.99s)"}, nil},
		{"a rise below the floor is steady", Criteria{SteadyTol: 0.5, SteadyFloor: 2 * sec}, probe(10, 80*sec, func(at time.Duration, c *ProbeClaim) { c.Latency = at / 40 }), true, nil, nil},
		{"latency falling is steady", Criteria{SteadyTol: 0.1}, probe(10, 80*sec, func(at time.Duration, c *ProbeClaim) { c.Latency = 100*sec/(at/sec+1) + 0 }), true, nil, nil},
		{"failures appearing in the last window are a rise", Criteria{SteadyTol: 0.5}, probe(10, 80*sec, func(at time.Duration, c *ProbeClaim) { c.Failed = at > 70*sec }), false, []string{"not steady", "+Inf is with failed claims at its p99"}, nil},
		{"several criteria break at once", all, probe(10, 80*sec, func(at time.Duration, c *ProbeClaim) { c.Cold, c.Latency = true, 3*sec }), false, []string{"claim p99 3s over the SLO 2s", "; 600 of 600 claims cold"}, nil},
		{"no steady part", all, func() Measure { m := probe(10, 80*sec, nil); m.Warmup = 80 * sec; return m }(), false, []string{"no steady part: the probe lasts 80s, its warm-up 80s"}, nil},
		{"no claims after the warm-up", all, func() Measure { m := probe(10, 80*sec, nil); m.Claims = m.Claims[:100]; return m }(), false, []string{"no claims sent after the 20s warm-up"}, nil},
		{"an empty window is not judged for steadiness", Criteria{SteadyTol: 0.5}, func() Measure { m := probe(10, 80*sec, nil); m.Claims = m.Claims[:400]; return m }(), true, []string{"steadiness not judged"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.crit.Validate(); err != nil {
				t.Fatal(err)
			}
			ok, reason, _ := tc.crit.Judge(tc.m)
			if ok != tc.ok {
				t.Errorf("ok %v, want %v: %s", ok, tc.ok, reason)
			}
			for _, w := range tc.want {
				if !strings.Contains(reason, w) {
					t.Errorf("reason %q does not say %q", reason, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(reason, w) {
					t.Errorf("reason %q says %q", reason, w)
				}
			}
		})
	}
}

func TestJudgeWindows(t *testing.T) {
	// 10/s for 80 s, 20 s warm-up, 3 windows of 20 s; latency 2 s, so completions lag sends by 2 s.
	m := probe(10, 80*sec, func(at time.Duration, c *ProbeClaim) {
		c.Latency = 2 * sec
		c.Cold = at >= 60*sec && at < 61*sec
	})
	m.Windows = 3
	m.Claims = append(m.Claims, ProbeClaim{Sent: 85 * sec, Latency: sec}) // sent after the end: last window
	_, _, w := Criteria{NoCold: true}.Judge(m)
	if len(w.Each) != 3 {
		t.Fatalf("%d windows, want 3", len(w.Each))
	}
	wantFrom := []time.Duration{20 * sec, 40 * sec, 60 * sec}
	wantSent := []int{200, 200, 201}
	for i, e := range w.Each {
		if e.From != wantFrom[i] || e.To != wantFrom[i]+20*sec || e.Sent != wantSent[i] || e.P99 != 2*sec {
			t.Errorf("window %d: %+v", i, e)
		}
		if math.Abs(e.SentRate-float64(wantSent[i])/20) > 1e-9 || math.Abs(e.CompletedRate-10) > 1e-9 {
			t.Errorf("window %d: sent %v/s completed %v/s, want %v and 10", i, e.SentRate, e.CompletedRate, float64(wantSent[i])/20)
		}
	}
	if w.All.Sent != 601 || w.All.Cold != 10 || w.Each[2].Cold != 10 || w.All.From != 20*sec || w.All.To != 80*sec {
		t.Errorf("all: %+v", w.All)
	}
	if math.Abs(w.All.CompletedRate-10) > 1e-9 {
		t.Errorf("completed %v/s over the steady part, want 10", w.All.CompletedRate)
	}
}

func TestCriteriaValidate(t *testing.T) {
	for _, tc := range []struct {
		c    Criteria
		want string
	}{
		{Criteria{}, "no criterion set"},
		{Criteria{LagGrowth: 0.5}, "LagGrowth 0.5"},
		{Criteria{SteadyTol: -1}, "SteadyTol -1"},
		{Criteria{P99SLO: -sec}, "P99SLO -1s"},
		{Criteria{NoFailed: true, SteadyFloor: -sec}, "SteadyFloor"},
		{Criteria{SteadyTol: math.NaN()}, "SteadyTol NaN"},
	} {
		if err := tc.c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error saying %q", tc.c, err, tc.want)
		}
	}
	if err := (Criteria{P99SLO: 2 * sec, SteadyTol: 0.5}).Validate(); err != nil {
		t.Errorf("valid criteria: %v", err)
	}
}

func TestFmtDur(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{{4200 * time.Millisecond, "4.2s"}, {850 * time.Millisecond, "850ms"}, {999800 * time.Microsecond, "1s"}, {Infinite, "+Inf"}, {0, "0s"}, {125 * sec, "125s"}, {1500 * time.Microsecond, "1.5ms"}} {
		if got := fmtDur(tc.d); got != tc.want {
			t.Errorf("fmtDur(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
