package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestBinomialUpperTail(t *testing.T) {
	cases := []struct {
		n, k int
		want float64
	}{
		{12, 11, 13.0 / 4096}, {12, 10, 79.0 / 4096}, {12, 0, 1}, {12, 13, 0}, {10, 10, 1.0 / 1024}, {1, 1, 0.5}, {7, 7, 1.0 / 128},
	}
	for _, c := range cases {
		if got := BinomialUpperTail(c.n, c.k); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("P(Bin(%d,1/2) >= %d) = %v, want %v", c.n, c.k, got, c.want)
		}
	}
}

func TestPaired(t *testing.T) {
	// 12 pairs at alpha 0.01: the upper bound is the 11th smallest ratio (P(Bin(12,1/2) >= 11)
	// = 13/4096 <= 0.01 < 79/4096 = P(>= 10)), the lower bound the 2nd smallest.
	num := []float64{90, 100, 110, 95, 105, 80, 120, 100, 99, 101, 85, 130}
	den := []float64{100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100}
	pr := Paired(num, den, 0.01)
	if pr.Rank != 11 || pr.Hi != 1.2 || pr.Lo != 0.85 || pr.Median != 1.0 {
		t.Errorf("got rank %d, bounds [%v, %v], median %v; want 11, [0.85, 1.2], 1.0", pr.Rank, pr.Lo, pr.Hi, pr.Median)
	}
	if len(pr.Ratios) != 12 || pr.Ratios[0] != 0.9 {
		t.Errorf("ratios %v", pr.Ratios)
	}
	// Too few pairs for any bound at alpha 0.01 (P(Bin(6,1/2) >= 6) = 1/64): no bound.
	if pr := Paired(num[:6], den[:6], 0.01); !math.IsNaN(pr.Hi) || pr.Rank != 0 {
		t.Errorf("6 pairs: bound %v rank %d, want none", pr.Hi, pr.Rank)
	}
}

// The bound's error rate is what it claims: with pairs whose true median ratio is exactly 0.9
// (the benchmark's threshold) and heavy-tailed noise, Hi < 0.9 happens in at most alpha of
// 20,000 simulated benchmarks; with a true ratio of 0.75 it happens in at least 80% of them (power).
func TestPairedCalibration(t *testing.T) {
	simulation(t)
	rng := rand.New(rand.NewPCG(42, 1))
	const sims, n, alpha = 20000, 12, 0.01
	run := func(trueRatio float64) float64 {
		fails := 0
		for s := 0; s < sims; s++ {
			num, den := make([]float64, n), make([]float64, n)
			for i := range num {
				noise := rng.NormFloat64() * 0.1
				if rng.IntN(10) == 0 { // a disturbed round: either side, much slower
					noise += (rng.Float64() - 0.5) * 0.8
				}
				den[i] = 800
				num[i] = 800 * trueRatio * math.Exp(noise)
			}
			if pr := Paired(num, den, alpha); pr.Hi < 0.9 {
				fails++
			}
		}
		return float64(fails) / sims
	}
	if fp := run(0.9); fp > alpha {
		t.Errorf("false failures at a true ratio of 0.9: %.4f, want <= %v", fp, alpha)
	}
	if fp := run(1.0); fp > 0.0005 {
		t.Errorf("false failures at a true ratio of 1.0: %.4f", fp)
	}
	if power := run(0.75); power < 0.8 {
		t.Errorf("a generator at 0.75 of the plain loop is caught in %.2f of runs, want >= 0.8", power)
	}
}
