package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// Nested is a sample of claims nested in repetitions: one slice of values per repetition. Claims
// of one burst share that burst's conditions, so the repetition, not the claim, is the unit of
// inference: confidence intervals and p-values come from resampling repetitions.
type Nested [][]float64

// MinReps is the fewest repetitions per side for which a comparison reports a p-value.
const MinReps = 3

// PowerReps is the repetitions a side at which a true 20% shift of claim p99 is detected (p <
// 0.05) in at least 80% of simulated comparisons with a quiet cluster's repetition noise
// (TestNestedPower: about 0.9 at 10, about 0.8 at 8, 0.6 at 5). The main job's default
// repetitions are at least this (a suites test checks the shipped config).
const PowerReps = 10

// Pooled is every claim of every repetition in one slice (for descriptive statistics).
func (n Nested) Pooled() []float64 {
	var out []float64
	for _, r := range n {
		out = append(out, r...)
	}
	return out
}

// mixture is a nested sample prepared for two-level bootstrap draws of a pooled quantile: the
// distinct values of all repetitions, sorted, and for each repetition how many of its values
// are at or below each of them.
type mixture struct {
	values []float64
	counts [][]int32 // counts[r][i] = #(rep r <= values[i])
	sizes  []int
}

func newMixture(n Nested) *mixture {
	m := &mixture{values: n.Pooled()}
	sort.Float64s(m.values)
	m.values = dedupe(m.values)
	for _, r := range n {
		s := sortedCopy(r)
		c := make([]int32, len(m.values))
		j := 0
		for i, v := range m.values {
			for j < len(s) && s[j] <= v {
				j++
			}
			c[i] = int32(j)
		}
		m.counts = append(m.counts, c)
		m.sizes = append(m.sizes, len(s))
	}
	return m
}

func dedupe(sorted []float64) []float64 {
	out := sorted[:0]
	for i, v := range sorted {
		if i == 0 || v != sorted[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// draw is one two-level bootstrap replicate of the pooled nearest-rank p-th percentile: draw
// len(reps) repetitions with replacement, then as many claims from the drawn repetitions as they
// hold. The claims are drawn as one sample of N from the drawn repetitions' mixture. Such a
// sample is G^-1(U_j) for N uniforms U_j, with G^-1 the mixture's (monotone) quantile function,
// so its k-th smallest value is G^-1(U_(k)), where U_(k), the k-th smallest of N uniforms, is
// Beta(k, N-k+1) distributed: one Beta draw and a bisection over the distinct values instead of N
// draws and a sort, O(reps x log values) per replicate whatever the number of claims (30,000
// claims x 2,000 replicates took seconds per metric the other way). (Drawing each repetition's claims separately would fix each one's share of
// the N; the mixture lets it vary, a slightly wider, never narrower, distribution.)
func (m *mixture) draw(p float64, rng *rand.Rand, mult []int) float64 {
	return m.drawLevels(p, rng, mult, true)
}

func (m *mixture) drawLevels(p float64, rng *rand.Rand, mult []int, claims bool) float64 {
	nr := len(m.sizes)
	for i := range mult {
		mult[i] = 0
	}
	total := 0
	for i := 0; i < nr; i++ {
		r := rng.IntN(nr)
		mult[r]++
		total += m.sizes[r]
	}
	if total == 0 {
		return math.NaN()
	}
	k := nearestRankIndex(total, p) + 1
	target := k
	if claims {
		u := distuv.Beta{Alpha: float64(k), Beta: float64(total - k + 1), Src: rng}.Rand()
		target = min(int(u*float64(total)), total-1) + 1 // the target-th smallest (1-based)
	}
	return m.kth(mult, target)
}

// HierDraws returns iters two-level bootstrap replicates of the pooled nearest-rank p-th
// percentile of a nested sample (nil when it has no values).
func HierDraws(n Nested, p float64, iters int, rng *rand.Rand) []float64 {
	if len(n.Pooled()) == 0 {
		return nil
	}
	m := newMixture(n)
	mult := make([]int, len(n))
	out := make([]float64, iters)
	for i := range out {
		out[i] = m.draw(p, rng, mult)
	}
	return out
}

// HierQuantileCI is the two-level bootstrap percentile CI of the pooled p-th percentile.
func HierQuantileCI(n Nested, p float64, iters int, confidence float64, rng *rand.Rand) CI {
	d := HierDraws(n, p, iters, rng)
	if d == nil {
		return CI{Num(math.NaN()), Num(math.NaN())}
	}
	return percentileCI(d, confidence)
}

// HierComparison compares a pooled latency quantile between two nested samples, with the
// repetition as the unit of inference.
type HierComparison struct {
	Delta float64 // pooled quantile of treat minus base (descriptive)
	CI    CI      // two-level bootstrap percentile CI of the difference
	P     Num     // permutation test over repetitions; NaN below MinReps a side
	Note  string  // why there is no p-value, or why it cannot be small
}

// CompareNested compares the pooled nearest-rank p-th percentile of treat with base's: the CI
// of the difference from independent two-level bootstrap draws of each side, the p-value from a
// permutation test over repetitions (PermutationP). Below MinReps repetitions a side it gives no
// p-value; when the repetitions cannot reach alpha at all it says so.
func CompareNested(base, treat Nested, p float64, iters int, confidence, alpha float64, rng *rand.Rand) HierComparison {
	hc := HierComparison{P: Num(math.NaN()),
		Delta: NearestRank(treat.Pooled(), p) - NearestRank(base.Pooled(), p)}
	da, db := HierDraws(base, p, iters, rng), HierDraws(treat, p, iters, rng)
	if da == nil || db == nil {
		hc.CI = CI{Num(math.NaN()), Num(math.NaN())}
		hc.Note = "no data"
		return hc
	}
	for i := range db {
		if db[i] -= da[i]; math.IsNaN(db[i]) { // +Inf on both sides
			db[i] = 0
		}
	}
	hc.CI = percentileCI(db, confidence)
	if len(base) < MinReps || len(treat) < MinReps {
		hc.Note = fmt.Sprintf("insufficient repetitions (%d vs %d; at least %d a side)", len(base), len(treat), MinReps)
		return hc
	}
	hc.P = Num(PermutationP(base, treat, p, iters, rng))
	if mp := MinPermutationP(len(base), len(treat)); mp > alpha {
		hc.Note = fmt.Sprintf("%d vs %d repetitions cannot reach p < %g (smallest possible p %.2g)", len(base), len(treat), alpha, mp)
	}
	return hc
}

// PermutationP is the two-sided p-value of a permutation test over repetitions: the absolute
// difference of the pooled nearest-rank p-th percentiles (treat vs base) against the same
// difference under every reassignment of whole repetitions to the two sides (all of them when
// there are at most maxExact, else iters random ones plus the observed one). Under "no
// difference" repetitions are exchangeable, so the test's false-positive rate is at most alpha
// whatever the within- and between-repetition noise. Its resolution is set by the number of
// distinct reassignments: see MinPermutationP.
func PermutationP(base, treat Nested, p float64, iters int, rng *rand.Rand) float64 {
	if len(base) == 0 || len(treat) == 0 || len(base.Pooled()) == 0 || len(treat.Pooled()) == 0 {
		return math.NaN()
	}
	all := append(append(Nested{}, base...), treat...)
	m := newMixture(all)
	mult := make([]int, len(all))
	stat := func(inTreat []bool) float64 {
		q := func(side bool) float64 {
			total := 0
			for r := range all {
				mult[r] = 0
				if inTreat[r] == side {
					mult[r] = 1
					total += m.sizes[r]
				}
			}
			if total == 0 {
				return math.NaN()
			}
			return m.kth(mult, nearestRankIndex(total, p)+1)
		}
		d := q(true) - q(false)
		if math.IsNaN(d) { // +Inf on both sides: failed claims at this quantile either way
			return 0
		}
		return math.Abs(d)
	}
	assign := make([]bool, len(all))
	for r := len(base); r < len(all); r++ {
		assign[r] = true
	}
	observed := stat(assign)
	const maxExact = 5000
	if binomial(len(all), len(treat)) <= maxExact {
		hits, total := 0, 0
		eachSubset(len(all), len(treat), func(inTreat []bool) {
			total++
			if stat(inTreat) >= observed {
				hits++
			}
		})
		return float64(hits) / float64(total)
	}
	hits := 1
	for i := 0; i < iters; i++ {
		rng.Shuffle(len(assign), func(a, b int) { assign[a], assign[b] = assign[b], assign[a] })
		if stat(assign) >= observed {
			hits++
		}
	}
	return float64(hits) / float64(iters+1)
}

// MinPermutationP is the smallest p-value PermutationP can return for na vs nb repetitions:
// the observed split and its mirror image (when na == nb) are among C(na+nb, na) equally likely
// splits. 3 vs 3 repetitions give 0.1: no 3-vs-3 comparison can be significant at 0.05.
func MinPermutationP(na, nb int) float64 {
	c := binomial(na+nb, na)
	if c == 0 {
		return 1
	}
	if na == nb {
		return 2 / c
	}
	return 1 / c
}

func binomial(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	c := 1.0
	for i := 0; i < k; i++ {
		c = c * float64(n-i) / float64(i+1)
	}
	return math.Round(c)
}

// eachSubset calls f with every assignment of k of n repetitions to the treat side.
func eachSubset(n, k int, f func(inTreat []bool)) {
	in := make([]bool, n)
	var rec func(start, left int)
	rec = func(start, left int) {
		if left == 0 {
			f(in)
			return
		}
		for i := start; i <= n-left; i++ {
			in[i] = true
			rec(i+1, left-1)
			in[i] = false
		}
	}
	rec(0, k)
}

// kth is the target-th smallest (1-based) value of the repetitions weighted by mult.
func (m *mixture) kth(mult []int, target int) float64 {
	i := sort.Search(len(m.values), func(i int) bool {
		c := 0
		for r, w := range mult {
			if w > 0 {
				c += w * int(m.counts[r][i])
			}
		}
		return c >= target
	})
	return m.values[min(i, len(m.values)-1)]
}
