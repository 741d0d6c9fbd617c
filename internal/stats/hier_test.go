package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// simNested draws one side of a simulated run: reps repetitions of claims latencies, each
// repetition with its own random effect (sdRep, log scale: the burst's shared conditions) and
// per-claim noise (sdClaim, log scale), scaled by scale.
func simNested(rng *rand.Rand, reps, claims int, sdRep, sdClaim, scale float64) Nested {
	out := make(Nested, reps)
	for r := range out {
		e := rng.NormFloat64() * sdRep
		out[r] = make([]float64, claims)
		for i := range out[r] {
			out[r][i] = scale * math.Exp(5+e+rng.NormFloat64()*sdClaim)
		}
	}
	return out
}

// Calibration: 500 simulated A/A comparisons (both sides from the same distribution, with a
// per-repetition random effect) must be called significant at alpha 0.05 at most 7% of the time,
// by the permutation p-value and by the two-level bootstrap CI excluding zero; the pooled-claims
// Mann-Whitney test (what brakebench did before) must exceed 7% on the same data, so this test
// demonstrably catches that defect.
func TestNestedCalibration(t *testing.T) {
	simulation(t)
	rng := rand.New(rand.NewPCG(2026, 12))
	const sims, reps, claims, alpha = 500, 5, 200, 0.05
	perm, ci, pooled := 0, 0, 0
	for s := 0; s < sims; s++ {
		a := simNested(rng, reps, claims, 0.10, 0.5, 1)
		b := simNested(rng, reps, claims, 0.10, 0.5, 1)
		hc := CompareNested(a, b, 99, 400, 0.95, alpha, rng)
		if hc.P < alpha {
			perm++
		}
		if hc.CI.Lo > 0 || hc.CI.Hi < 0 {
			ci++
		}
		if Compare(a.Pooled(), b.Pooled(), alpha).Significant {
			pooled++
		}
	}
	fp := func(n int) float64 { return float64(n) / sims }
	t.Logf("A/A false positives at alpha %.2f over %d simulated comparisons (%d vs %d repetitions of %d claims): permutation %.3f, two-level CI %.3f, pooled Mann-Whitney %.3f",
		alpha, sims, reps, reps, claims, fp(perm), fp(ci), fp(pooled))
	if fp(perm) > 0.07 {
		t.Errorf("permutation test over repetitions: %.3f false positives, want <= 0.07", fp(perm))
	}
	if fp(ci) > 0.07 {
		t.Errorf("two-level bootstrap CI: excludes zero in %.3f of A/A comparisons, want <= 0.07", fp(ci))
	}
	if fp(pooled) <= 0.07 {
		t.Errorf("pooled-claims Mann-Whitney: %.3f false positives; this check must show it above 0.07", fp(pooled))
	}
}

// Power: a true 20% shift of every latency (so of p99) between the sides, with a quiet cluster's
// repetition noise (sd 0.05 on the log scale), is detected in at least 80% of 200 simulated
// comparisons at PowerReps (10) repetitions a side (8 give about 0.8). At 3 a side nothing can be detected (the smallest
// possible p is 0.1), which the comparison says instead of printing "~" as if it had looked.
func TestNestedPower(t *testing.T) {
	simulation(t)
	rng := rand.New(rand.NewPCG(7, 20))
	const sims, claims, alpha = 200, 300, 0.05
	for _, tc := range []struct {
		reps     int
		minPower float64
	}{{PowerReps, 0.80}, {5, 0}, {3, 0}} {
		hits := 0
		var note string
		for s := 0; s < sims; s++ {
			a := simNested(rng, tc.reps, claims, 0.05, 0.5, 1)
			b := simNested(rng, tc.reps, claims, 0.05, 0.5, 1.2)
			hc := CompareNested(a, b, 99, 200, 0.95, alpha, rng)
			if hc.P < alpha {
				hits++
			}
			note = hc.Note
		}
		power := float64(hits) / sims
		t.Logf("%d vs %d repetitions: a 20%% p99 shift detected in %.2f of %d comparisons %s", tc.reps, tc.reps, power, sims, note)
		if power < tc.minPower {
			t.Errorf("%d repetitions: power %.2f, want >= %.2f", tc.reps, power, tc.minPower)
		}
		if tc.reps == 3 && (hits != 0 || note == "") {
			t.Errorf("3 vs 3: %d detections, note %q; want none and a note saying why", hits, note)
		}
	}
}

func TestMinPermutationP(t *testing.T) {
	cases := []struct {
		na, nb int
		want   float64
	}{{3, 3, 0.1}, {4, 4, 2.0 / 70}, {5, 5, 2.0 / 252}, {3, 5, 1.0 / 56}}
	for _, c := range cases {
		if got := MinPermutationP(c.na, c.nb); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("MinPermutationP(%d, %d) = %v, want %v", c.na, c.nb, got, c.want)
		}
	}
}

// Exact enumeration: two sides whose every claim of one side is larger give the smallest
// possible p; identical sides give p = 1.
func TestPermutationPExtremes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	lo := Nested{{1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3}}
	hi := Nested{{10, 20, 30}, {10, 20, 30}, {10, 20, 30}, {10, 20, 30}}
	if p := PermutationP(lo, hi, 50, 100, rng); math.Abs(p-MinPermutationP(4, 4)) > 1e-12 {
		t.Errorf("separated sides: p = %v, want %v", p, MinPermutationP(4, 4))
	}
	if p := PermutationP(lo, lo, 50, 100, rng); p != 1 {
		t.Errorf("identical sides: p = %v, want 1", p)
	}
	if hc := CompareNested(lo[:2], hi, 50, 100, 0.95, 0.05, rng); !math.IsNaN(float64(hc.P)) || hc.Note == "" {
		t.Errorf("2 repetitions: p %v note %q, want no p-value and a note", hc.P, hc.Note)
	}
}

// The two-level CI of one side's pooled quantile contains the pooled quantile and widens with
// the between-repetition spread.
func TestHierQuantileCI(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	tight := simNested(rng, 5, 300, 0.01, 0.3, 1)
	loose := simNested(rng, 5, 300, 0.30, 0.3, 1)
	ct, cl := HierQuantileCI(tight, 50, 1000, 0.95, rng), HierQuantileCI(loose, 50, 1000, 0.95, rng)
	if v := NearestRank(tight.Pooled(), 50); float64(ct.Lo) > v || float64(ct.Hi) < v {
		t.Errorf("CI %v misses the pooled median %v", ct, v)
	}
	if wt, wl := float64(ct.Hi-ct.Lo), float64(cl.Hi-cl.Lo); wl < 3*wt {
		t.Errorf("CI width %v with repetition noise vs %v without: want at least 3x", wl, wt)
	}
}
