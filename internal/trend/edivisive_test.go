package trend

import (
	"math"
	"math/rand/v2"
	"testing"
)

// noisy is n runs around level(i) with relative noise sd.
func noisy(rng *rand.Rand, n int, sd float64, level func(i int) float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = level(i) * (1 + sd*rng.NormFloat64())
	}
	return xs
}

func TestChangePoints(t *testing.T) {
	// A 20% step after run 17 of 30 noisy runs (3% noise): found at index 17, every seed.
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		xs := noisy(rng, 30, 0.03, func(i int) float64 {
			if i >= 17 {
				return 1200
			}
			return 1000
		})
		cps := ChangePoints(xs, DefaultOptions)
		if len(cps) != 1 || cps[0].Index != 17 || cps[0].ChangePct < 15 || cps[0].ChangePct > 25 {
			t.Errorf("seed %d: step at 17: got %+v", seed, cps)
		}
	}
	// 30 stationary runs: no change point, every seed.
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 2))
		if cps := ChangePoints(noisy(rng, 30, 0.05, func(int) float64 { return 1000 }), DefaultOptions); len(cps) != 0 {
			t.Errorf("seed %d: stationary series: got %+v", seed, cps)
		}
	}
	// A single spike (one run at twice the level) is not a change.
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		xs := noisy(rng, 30, 0.05, func(i int) float64 {
			if i == 14 {
				return 2000
			}
			return 1000
		})
		if cps := ChangePoints(xs, DefaultOptions); len(cps) != 0 {
			t.Errorf("seed %d: spike at 14: got %+v", seed, cps)
		}
	}
	// With 5% noise a point next to the step can look like the other side: within two runs.
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 4))
		xs := noisy(rng, 30, 0.05, func(i int) float64 {
			if i >= 17 {
				return 1200
			}
			return 1000
		})
		if cps := ChangePoints(xs, DefaultOptions); len(cps) != 1 || cps[0].Index < 15 || cps[0].Index > 19 {
			t.Errorf("seed %d: step at 17 with 5%% noise: got %+v", seed, cps)
		}
	}
	// Fewer runs than MinRuns: nothing is claimed.
	if cps := ChangePoints([]float64{1, 1, 1, 5, 5, 5, 5, 5}, DefaultOptions); cps != nil {
		t.Errorf("8 runs: %+v", cps)
	}
	// Missing values (NaN) are skipped, and indices still refer to the runs.
	rng := rand.New(rand.NewPCG(9, 9))
	xs := noisy(rng, 30, 0.03, func(i int) float64 {
		if i >= 20 {
			return 800
		}
		return 1000
	})
	xs[5], xs[22] = nan(), nan()
	if cps := ChangePoints(xs, DefaultOptions); len(cps) != 1 || cps[0].Index != 20 {
		t.Errorf("with gaps: %+v", cps)
	}
}

func nan() float64 { var z float64; return z / z }

// A change below Options.MinEffect is no change point: a series that does not vary is
// "significantly" different after a rounding error (Student's t is infinite), and such a step was
// flagged as a +0.0% regression.
func TestMinEffect(t *testing.T) {
	step := func(n, at int, before, after float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = before
			if i >= at {
				xs[i] = after
			}
		}
		return xs
	}
	rng := rand.New(rand.NewPCG(3, 3))
	noOff := DefaultOptions
	noOff.MinEffect = 0
	cases := []struct {
		name    string
		xs      []float64
		opt     Options
		atIndex int     // -1: no change point
		pct     float64 // its ChangePct, within 5 points
	}{
		{"no variance, no change", step(20, 0, 1000, 1000), DefaultOptions, -1, 0},
		{"no variance, a rounding error", step(20, 10, 1000, 1000*(1+1e-12)), DefaultOptions, -1, 0},
		{"no variance, a 1% step", step(20, 10, 1000, 1010), DefaultOptions, -1, 0},
		{"no variance, a 1% step with no minimum effect", step(20, 10, 1000, 1010), noOff, 10, 1},
		{"no variance, a 20% step", step(20, 10, 1000, 1200), DefaultOptions, 10, 20},
		{"from 0 failures to 1", step(20, 10, 0, 1), DefaultOptions, 10, math.Inf(1)},
		{"a 2% step in 0.1% noise", noisy(rng, 30, 0.001, func(i int) float64 { return 1000 + 20*float64(i/15) }), DefaultOptions, -1, 0},
		{"a 20% step in 3% noise", noisy(rng, 30, 0.03, func(i int) float64 { return 1000 + 200*float64(i/15) }), DefaultOptions, 15, 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cps := ChangePoints(c.xs, c.opt)
			switch {
			case c.atIndex < 0 && len(cps) != 0:
				t.Errorf("change points %+v, want none", cps)
			case c.atIndex >= 0 && (len(cps) != 1 || cps[0].Index != c.atIndex):
				t.Errorf("change points %+v, want one at %d", cps, c.atIndex)
			case c.atIndex >= 0 && !(math.Abs(cps[0].ChangePct-c.pct) < 5 || (math.IsInf(c.pct, 1) && math.IsInf(cps[0].ChangePct, 1))):
				t.Errorf("change %+.1f%%, want about %+.1f%%", cps[0].ChangePct, c.pct)
			}
		})
	}
}
