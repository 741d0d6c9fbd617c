package trend

import (
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
