package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestNearestRank(t *testing.T) {
	xs := []float64{15, 20, 35, 40, 50} // the classic nearest-rank example
	cases := []struct {
		p, want float64
	}{{5, 15}, {30, 20}, {40, 20}, {50, 35}, {100, 50}}
	for _, c := range cases {
		if got := NearestRank(xs, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if !math.IsNaN(NearestRank(nil, 50)) {
		t.Error("empty sample must give NaN")
	}
	// 1..100: nearest rank p99 is 99, p90 is 90, p50 is 50 (no interpolation).
	var hundred []float64
	for i := 100; i >= 1; i-- {
		hundred = append(hundred, float64(i))
	}
	q := Summarize(hundred)
	if q.P50 != 50 || q.P90 != 90 || q.P99 != 99 || q.Max != 100 || q.N != 100 {
		t.Errorf("Summarize(1..100) = %+v", q)
	}
}

func TestCeiling(t *testing.T) {
	cases := []struct {
		name   string
		bins   []float64
		window int
		want   float64
	}{
		{"single peak 1s", []float64{1, 5, 9, 3}, 1, 9},
		{"best 2s window", []float64{1, 5, 9, 3}, 2, 7},
		{"flat", []float64{10, 10, 10, 10, 10}, 5, 10},
		{"5s window over a 2s burst counts the burst over 5s", []float64{50, 50}, 5, 20},
		{"empty", nil, 1, 0},
		{"window slides to the end", []float64{0, 0, 0, 4, 8}, 2, 6},
	}
	for _, c := range cases {
		if got := Ceiling(c.bins, c.window); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: Ceiling = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestBootstrapCoversAndIsReproducible(t *testing.T) {
	// A constant sample has a degenerate CI at the constant.
	ci := Bootstrap([]float64{3, 3, 3, 3}, Median, 500, 0.95, rand.New(rand.NewPCG(1, 2)))
	if ci.Lo != 3 || ci.Hi != 3 {
		t.Errorf("constant sample CI = %+v", ci)
	}
	xs := make([]float64, 200)
	r := rand.New(rand.NewPCG(7, 7))
	for i := range xs {
		xs[i] = 100 + r.NormFloat64()*10
	}
	a := Bootstrap(xs, Mean, 2000, 0.95, rand.New(rand.NewPCG(1, 1)))
	b := Bootstrap(xs, Mean, 2000, 0.95, rand.New(rand.NewPCG(1, 1)))
	if a != b {
		t.Errorf("same seed gave different CIs: %+v vs %+v", a, b)
	}
	// The standard error of the mean is 10/sqrt(200) ~ 0.71, so the 95% CI is about +-1.4.
	if !(float64(a.Lo) < Mean(xs) && Mean(xs) < float64(a.Hi)) || a.Hi-a.Lo < 1.5 || a.Hi-a.Lo > 4.5 {
		t.Errorf("CI %+v around mean %v has an implausible width", a, Mean(xs))
	}
}

func TestBootstrapDelta(t *testing.T) {
	a := []float64{10, 11, 12, 10, 11, 12, 10, 11, 12, 11}
	b := []float64{20, 21, 22, 20, 21, 22, 20, 21, 22, 21}
	ci := BootstrapDelta(a, b, Median, 1000, 0.95, rand.New(rand.NewPCG(3, 4)))
	if ci.Lo < 8 || ci.Hi > 12 || ci.Lo > 10 || ci.Hi < 10 {
		t.Errorf("delta CI %+v should contain 10 and stay within [8,12]", ci)
	}
}

func TestCompare(t *testing.T) {
	base := []float64{100, 102, 98, 101, 99, 100, 103, 97, 100, 101}
	slower := []float64{150, 152, 148, 151, 149, 150, 153, 147, 150, 151}
	same := []float64{101, 99, 100, 102, 98, 100, 97, 103, 101, 100}
	c := Compare(base, slower, 0.05)
	if !c.Significant || c.P > 0.001 || c.Delta != "+50.00%" {
		t.Errorf("clearly slower: %+v", c)
	}
	c = Compare(base, same, 0.05)
	if c.Significant || c.Delta != "~" {
		t.Errorf("same distribution: %+v", c)
	}
	// Mann-Whitney on two fully separated samples of 5 gives the exact p = 2/C(10,5) = 0.00794.
	c = Compare([]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 0.05)
	if math.Abs(float64(c.P)-2.0/252) > 1e-6 {
		t.Errorf("exact U p = %v, want %v", c.P, 2.0/252)
	}
}

func TestQuantilesJSONKeepsInfAndNaN(t *testing.T) {
	in := Quantiles{N: 3, P50: 12.5, P90: math.Inf(1), P99: math.Inf(1), Max: math.NaN()}
	raw, err := in.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var out Quantiles
	if err := out.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	if out.N != 3 || out.P50 != 12.5 || !math.IsInf(out.P90, 1) || !math.IsInf(out.P99, 1) || !math.IsNaN(out.Max) {
		t.Errorf("round trip %s -> %+v", raw, out)
	}
}

// The Beta shortcut must give the bootstrap distribution that resampling gives: with one
// repetition the two-level draws are the plain bootstrap of its claims, and with many iterations
// both CIs' ends land on the same or neighbouring order statistics of the sample.
func TestHierDrawsMatchResampling(t *testing.T) {
	simulation(t)
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	cases := []struct {
		name string
		n    int
		p    float64
		gen  func() float64
	}{
		{"lognormal p50 n=300", 300, 50, func() float64 { return math.Exp(rng.NormFloat64()) * 100 }},
		{"lognormal p99 n=300", 300, 99, func() float64 { return math.Exp(rng.NormFloat64()) * 100 }},
		{"exponential p90 n=1000", 1000, 90, func() float64 { return rng.ExpFloat64() * 50 }},
		{"with failed claims p99 n=200", 200, 99, func() float64 {
			if rng.IntN(100) == 0 {
				return math.Inf(1)
			}
			return rng.ExpFloat64()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			xs := make([]float64, c.n)
			for i := range xs {
				xs[i] = c.gen()
			}
			sorted := sortedCopy(xs)
			rank := func(v Num) int { // position of v in the sorted sample
				for i, x := range sorted {
					if x == float64(v) {
						return i
					}
				}
				t.Fatalf("%v is not a sample value", v)
				return -1
			}
			const iters = 20000
			slow := Bootstrap(xs, func(s []float64) float64 { return NearestRank(s, c.p) }, iters, 0.95, rand.New(rand.NewPCG(1, 2)))
			fast := percentileCI(HierDraws(Nested{xs}, c.p, iters, rand.New(rand.NewPCG(3, 4))), 0.95)
			if d := rank(slow.Lo) - rank(fast.Lo); d < -1 || d > 1 {
				t.Errorf("lower ends: resampling %v (rank %d), Beta %v (rank %d)", slow.Lo, rank(slow.Lo), fast.Lo, rank(fast.Lo))
			}
			if d := rank(slow.Hi) - rank(fast.Hi); d < -1 || d > 1 {
				t.Errorf("upper ends: resampling %v (rank %d), Beta %v (rank %d)", slow.Hi, rank(slow.Hi), fast.Hi, rank(fast.Hi))
			}
		})
	}
}
