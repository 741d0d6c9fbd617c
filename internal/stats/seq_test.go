package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// seqTrial runs one simulated sequential comparison: maxReps repetitions a side are drawn up
// front (rep(r, side) gives one repetition's value), and the design looks after every round
// from its minimum, stopping when the verdict is settled. It returns the verdict and the
// repetitions a side it took. naive reports whether a plain Welch test at alpha 0.05 after every
// round would have called a difference at some look.
func seqTrial(s *Sequential, rep func(side int) float64) (verdict string, reps int, naive bool) {
	var a, b []float64
	var hist [][2][]float64
	for r := 1; r <= s.MaxReps; r++ {
		a, b = append(a, rep(0)), append(b, rep(1))
		hist = append(hist, [2][]float64{append([]float64(nil), a...), append([]float64(nil), b...)})
		if r < s.MinReps {
			continue
		}
		if d, se, df, ok := WelchLog(a, b); ok && se > 0 {
			z, _ := seqZ(d, se, df, 0.05)
			naive = naive || math.Abs(z) >= normalQuantile(0.975)
		}
		res := s.Compare(hist, r == s.MaxReps, false)
		if res.Settled && verdict == "" {
			verdict, reps = res.Verdict, r
		}
	}
	return verdict, reps, naive
}

func defaultDesign() *Sequential {
	return &Sequential{Alpha: 0.05, MinReps: 3, MaxReps: 10, Spending: SpendPocock, EquivalencePct: 15}
}

// Calibration on clustered A/A data, as the permutation test's (TestNestedCalibration): each
// repetition is a burst of 300 claims with its own random effect (sd 0.12 on the log scale, the
// lab's measured spread of p50 with the warm-up) and per-claim noise; the statistic is each
// repetition's nearest-rank p99. Over 2000 simulated A/A comparisons looked at after every round
// from 3 to 10 repetitions a side, the sequential rule must call a difference at most 6.5% of the
// time (alpha 5% plus simulation slack: the standard error at 2000 is 0.5%), with and without
// the equivalence stop. A naive rule, a test at 0.05 after every round, must exceed 6.5% on the
// same data: this test demonstrably catches the repeated-looks defect.
func TestSequentialCalibration(t *testing.T) {
	simulation(t)
	for _, tc := range []struct {
		name string
		s    *Sequential
	}{
		{"pocock, equivalence 15%", defaultDesign()},
		{"pocock, no equivalence", &Sequential{Alpha: 0.05, MinReps: 3, MaxReps: 10, Spending: SpendPocock}},
		{"obrien-fleming", &Sequential{Alpha: 0.05, MinReps: 3, MaxReps: 10, Spending: SpendOBF}},
		{"pocock, min 5 max 12", &Sequential{Alpha: 0.05, MinReps: 5, MaxReps: 12, Spending: SpendPocock}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // the slowest unit tests under -race: the designs side by side on both cores
			rng := rand.New(rand.NewPCG(2026, 22))
			const sims = 2000
			fp, naive, repsSum := 0, 0, 0
			for i := 0; i < sims; i++ {
				v, reps, nv := seqTrial(tc.s, func(int) float64 {
					return NearestRank(simNested(rng, 1, 300, 0.12, 0.5, 1)[0], 99)
				})
				if v == "faster" || v == "slower" {
					fp++
				}
				if nv {
					naive++
				}
				repsSum += reps
			}
			rate, naiveRate := float64(fp)/sims, float64(naive)/sims
			t.Logf("%s: A/A false positives over all looks %.3f (naive test after every round %.3f); mean repetitions a side %.1f",
				tc.name, rate, naiveRate, float64(repsSum)/sims)
			if rate > 0.065 {
				t.Errorf("sequential false-positive rate %.3f, want <= 0.065", rate)
			}
			if naiveRate <= 0.065 {
				t.Errorf("naive rule: %.3f false positives; this check must show it above 0.065", naiveRate)
			}
		})
	}
}

// Power and expected repetitions at stated spreads of the per-repetition statistic (the standard
// deviation of its log between repetitions): 5% (a quiet cluster) and 12% (the lab's measured
// spread of p50 with the warm-up; README, "A/A noise floor and drift"). Printed for the README;
// the assertions are the ones that must hold for the design to be useful: at 5% a 20% shift is
// found almost always and early, and with no effect the rule stops early only for equivalence.
func TestSequentialPower(t *testing.T) {
	simulation(t)
	t.Parallel()
	s := defaultDesign()
	for _, spread := range []float64{0.05, 0.12, 0.20} {
		for _, effect := range []float64{0, 0.20, 0.35} {
			rng := rand.New(rand.NewPCG(uint64(spread*1000), uint64(effect*1000)))
			const sims = 1000
			hits, repsSum, eq := 0, 0, 0
			for i := 0; i < sims; i++ {
				v, reps, _ := seqTrial(s, func(side int) float64 {
					return math.Exp(float64(side)*math.Log(1+effect) + rng.NormFloat64()*spread)
				})
				if v == "slower" {
					hits++
				}
				if v == "equivalent" {
					eq++
				}
				repsSum += reps
			}
			power, mean := float64(hits)/sims, float64(repsSum)/sims
			t.Logf("spread %2.0f%%, true change %+3.0f%%: detected %.2f, equivalent %.2f, expected repetitions a side %.1f (min %d, max %d)",
				spread*100, effect*100, power, float64(eq)/sims, mean, s.MinReps, s.MaxReps)
			switch {
			case spread == 0.05 && effect == 0.20 && (power < 0.95 || mean > 4.5):
				t.Errorf("spread 5%%, 20%% shift: power %.2f, %.1f repetitions; want >= 0.95 within 4.5", power, mean)
			case effect == 0 && power > 0.04:
				t.Errorf("no effect: 'slower' in %.3f of trials, want <= 0.04 (one side of alpha 0.05 plus slack)", power)
			case spread == 0.05 && effect == 0 && float64(eq)/sims < 0.9:
				t.Errorf("spread 5%%, no effect: equivalence within 15%% reached in %.2f, want >= 0.9", float64(eq)/sims)
			}
		}
	}
}

// The boundaries spend what they say: under "no difference" the simulated crossing probability
// by each look is the spending function's value (checked with paths independent of the ones the
// boundaries came from), and the fixed design's single boundary is 1.96.
func TestSequentialBounds(t *testing.T) {
	fr := []float64{0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}
	for _, spend := range []string{SpendPocock, SpendOBF} {
		s := &Sequential{Alpha: 0.05, Spending: spend}
		b := s.Bounds(fr)
		rng := rand.New(rand.NewPCG(1, 2))
		const n = 200000
		crossed := make([]int, len(fr))
		for i := 0; i < n; i++ {
			w, prev := 0.0, 0.0
			for j, f := range fr {
				w += math.Sqrt(f-prev) * rng.NormFloat64()
				prev = f
				if math.Abs(w/math.Sqrt(f)) >= b[j] {
					crossed[j]++
					break
				}
			}
		}
		cum := 0
		for j, f := range fr {
			cum += crossed[j]
			got, want := float64(cum)/n, s.Spent(f)
			if math.Abs(got-want) > 0.003 {
				t.Errorf("%s look %d (t=%.1f): crossed by then %.4f, spending function %.4f", spend, j+1, f, got, want)
			}
		}
		t.Logf("%s boundaries |z|: %.2f", spend, b)
	}
	fixed := &Sequential{Alpha: 0.05, Fixed: true}
	if b := fixed.Bounds([]float64{1}); math.Abs(b[0]-1.96) > 0.02 {
		t.Errorf("fixed design boundary %.3f, want 1.96", b[0])
	}
}

// Compare's verdicts, intervals and repeated p-values on hand-made histories.
func TestSequentialCompare(t *testing.T) {
	rounds := func(base, treat []float64) [][2][]float64 {
		var h [][2][]float64
		for r := 1; r <= len(base); r++ {
			h = append(h, [2][]float64{base[:r], treat[:r]})
		}
		return h
	}
	s := defaultDesign()
	cases := []struct {
		name          string
		base, treat   []float64
		atMax         bool
		verdict       string
		settled       bool
		look          int // repetitions a side at the verdict's look
		pBelow, pOver float64
	}{
		{"clear slowdown settles at the first look", []float64{100, 101, 99}, []float64{150, 152, 149}, false, "slower", true, 3, 0.05, 0},
		{"clear speed-up", []float64{100, 101, 99, 100}, []float64{70, 71, 69, 70}, false, "faster", true, 3, 0.05, 0},
		{"identical and tight: equivalent", []float64{100, 101, 99, 100, 100}, []float64{100, 99, 101, 100, 100}, false, "equivalent", true, 3, 1.01, 0.5},
		{"noisy, open", []float64{100, 150, 80}, []float64{120, 90, 140}, false, "~", false, 3, 1.01, 0.05},
		{"noisy at the maximum: ~ for good", []float64{100, 150, 80}, []float64{120, 90, 140}, true, "~", true, 3, 1.01, 0.05},
		{"two repetitions: insufficient", []float64{100, 101}, []float64{150, 151}, false, "insufficient repetitions", false, 0, 2, -1},
		{"a failed claim at the quantile: no test", []float64{100, 101, 99}, []float64{150, math.Inf(1), 149}, false, "~", false, 3, 2, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := s.Compare(rounds(tc.base, tc.treat), tc.atMax, true)
			if r.Verdict != tc.verdict || r.Settled != tc.settled {
				t.Fatalf("verdict %q settled %v, want %q %v (note %q, looks %+v)", r.Verdict, r.Settled, tc.verdict, tc.settled, r.Note, r.Looks)
			}
			if tc.look > 0 && r.Looks[r.At].NBase != tc.look {
				t.Errorf("settled at %d repetitions, want %d", r.Looks[r.At].NBase, tc.look)
			}
			if tc.pOver >= 0 && !(r.P < tc.pBelow && r.P >= tc.pOver) {
				t.Errorf("repeated p %.4g, want in [%g, %g)", r.P, tc.pOver, tc.pBelow)
			}
		})
	}
	// The repeated p-value is at most the look's nominal level exactly when the look crossed.
	r := s.Compare(rounds([]float64{100, 101, 99, 103}, []float64{110, 108, 112, 109}), false, true)
	crossed := math.Abs(r.Looks[r.At].Z) >= r.Looks[r.At].Bound
	if crossed != (r.P <= s.Alpha) {
		t.Errorf("crossed %v but repeated p %.4f (alpha %g)", crossed, r.P, s.Alpha)
	}
}

func TestMDE(t *testing.T) {
	// 10 a side, sd 0.12, t with 18 df: (2.101+0.862)*0.12*sqrt(0.2) = 0.159 -> +17.2% (the
	// normal quantiles' 16.2% understated it).
	if got := MDEPct(0.12, 10, 10, 1.96); math.Abs(got-17.2) > 0.3 {
		t.Errorf("MDEPct = %.2f, want ~17.2", got)
	}
	// 3 a side: t with 4 df, (2.776+0.941)*0.12*sqrt(2/3) = 0.364 -> +43.9%, not the normal 31.6%.
	if got := MDEPct(0.12, 3, 3, 1.96); math.Abs(got-43.9) > 0.5 {
		t.Errorf("MDEPct at 3 a side = %.2f, want ~43.9", got)
	}
	if got := MDEPct(0.12, 1, 10, 1.96); !math.IsNaN(got) {
		t.Errorf("MDEPct with one repetition = %v, want NaN", got)
	}
	if got := MDERel([]float64{10, 12, 11}, []float64{10, 12, 11}, 0.05); math.Abs(got-(2.776+0.941)*math.Sqrt(2.0/3)/11*100) > 0.5 {
		t.Errorf("MDERel = %.2f", got)
	}
	if got := MDERel([]float64{0, 0, 0}, []float64{1, 2, 3}, 0.05); !math.IsNaN(got) {
		t.Errorf("MDERel with a zero baseline = %v, want NaN", got)
	}
}
