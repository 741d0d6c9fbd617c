// Package trend reads many runs of one suite over time and finds where a metric moved: per cell
// and metric, the series of values (with CIs) in run order, and its change points by E-divisive
// means (Matteson and James, 2014), the method behind Hunter/Otava and so kube-burner's Orion.
package trend

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// Options tune change-point detection.
type Options struct {
	// PValue is the significance a candidate change point must reach: Student's t-test between the
	// segments either side of it (as Hunter does after E-divisive proposes it), corrected for the
	// number of splits the search considered.
	PValue float64
	// MinWindow is the fewest runs on each side of a change point: a single spike is never a
	// change.
	MinWindow int
	// MinRuns is the fewest runs a series needs before anything is detected.
	MinRuns int
	// MinEffect is the smallest change of the mean (percent of the mean before) that is a change
	// point: a series that does not vary is "significantly" different after a step of a rounding
	// error (t is infinite), and such a step was flagged as a +0.0% regression. A step from a mean
	// of 0 to any other value is always large enough.
	MinEffect float64
}

// DefaultOptions are the defaults of `brakebench trend`.
var DefaultOptions = Options{PValue: 0.001, MinWindow: 3, MinRuns: 10, MinEffect: 5}

// ChangePoint is a detected change: the series' mean moved at Index (the first run after it).
type ChangePoint struct {
	Index      int     `json:"index"`
	Before     float64 `json:"meanBefore"` // mean of the segment before
	After      float64 `json:"meanAfter"`  // mean of the segment after
	ChangePct  float64 `json:"changePct"`
	P          float64 `json:"p"`
	Regression bool    `json:"regression,omitempty"` // the metric got worse (for metrics with a direction)
}

// ChangePoints finds the change points of xs (NaN values are left out of every computation and
// never separate segments). Each step splits a segment where the E-divisive statistic (alpha 1)
// is largest, keeps the split when Student's t-test between the two sides is significant at
// opt.PValue, and recurses into both sides. Nil below opt.MinRuns values.
func ChangePoints(xs []float64, opt Options) []ChangePoint {
	idx := make([]int, 0, len(xs)) // positions of the finite values
	vals := make([]float64, 0, len(xs))
	for i, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			idx = append(idx, i)
			vals = append(vals, x)
		}
	}
	if len(vals) < opt.MinRuns || len(vals) < 2*opt.MinWindow {
		return nil
	}
	// large reports whether a step between two means is at least opt.MinEffect percent.
	large := func(before, after float64) bool {
		return math.Abs(after-before) >= opt.MinEffect/100*math.Abs(before)
	}
	e := newEnergy(vals)
	var cps []ChangePoint
	var split func(a, b int)
	split = func(a, b int) {
		if b-a < 2*opt.MinWindow {
			return
		}
		best, bestQ := -1, math.Inf(-1)
		for t := a + opt.MinWindow; t <= b-opt.MinWindow; t++ {
			if q := e.q(a, t, b); q > bestQ {
				best, bestQ = t, q
			}
		}
		if best < 0 {
			return
		}
		// E-divisive's statistic leans towards balanced splits (its m n/(m+n) weight), so with few
		// runs its maximum can sit a run or two from the step. The split is placed where the mean
		// shift is clearest (the largest t statistic) within MinWindow runs of it.
		bestT := math.Inf(-1)
		cand := best
		for t := max(a+opt.MinWindow, cand-opt.MinWindow); t <= min(b-opt.MinWindow, cand+opt.MinWindow); t++ {
			if tt, _ := studentT(vals[a:t], vals[t:b]); tt > bestT {
				best, bestT = t, tt
			}
		}
		// The split is the best of many candidates, so its raw p-value understates the chance
		// of finding one that good in a series without a change: it is multiplied by the number
		// of candidate splits (Bonferroni), which keeps stationary series quiet even a year long.
		candidates := float64(b - a - 2*opt.MinWindow + 1)
		p := math.Min(1, studentP(vals[a:best], vals[best:b])*candidates)
		before, after := mean(vals[a:best]), mean(vals[best:b])
		if !(p < opt.PValue) || !large(before, after) {
			return
		}
		cp := ChangePoint{Index: idx[best], Before: before, After: after, P: p, ChangePct: (after - before) / before * 100}
		cps = append(cps, cp)
		split(a, best)
		split(best, b)
	}
	split(0, len(vals))
	sort.Slice(cps, func(i, j int) bool { return cps[i].Index < cps[j].Index })
	// The means either side of each change point, between its neighbours (the recursion's
	// segments were wider than that). A change point whose step between its neighbours is below
	// opt.MinEffect is dropped (the smallest first), and the means of the rest taken again.
	for {
		smallest := -1
		for k := range cps {
			lo, hi := 0, len(vals)
			if k > 0 {
				lo = position(idx, cps[k-1].Index)
			}
			if k+1 < len(cps) {
				hi = position(idx, cps[k+1].Index)
			}
			at := position(idx, cps[k].Index)
			cps[k].Before, cps[k].After = mean(vals[lo:at]), mean(vals[at:hi])
			cps[k].ChangePct = (cps[k].After - cps[k].Before) / cps[k].Before * 100
			if !large(cps[k].Before, cps[k].After) && (smallest < 0 || math.Abs(cps[k].ChangePct) < math.Abs(cps[smallest].ChangePct)) {
				smallest = k
			}
		}
		if smallest < 0 {
			return cps
		}
		cps = append(cps[:smallest], cps[smallest+1:]...)
	}
}

func position(idx []int, i int) int { return sort.SearchInts(idx, i) }

// energy holds prefix sums of the pairwise distances |x_i - x_j| so that every sum over a
// rectangle of the distance matrix costs O(1).
type energy struct {
	n int
	p [][]float64 // p[i][j] = sum of d[i'][j'] for i' < i, j' < j
}

func newEnergy(xs []float64) *energy {
	n := len(xs)
	e := &energy{n: n, p: make([][]float64, n+1)}
	for i := range e.p {
		e.p[i] = make([]float64, n+1)
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			e.p[i+1][j+1] = math.Abs(xs[i]-xs[j]) + e.p[i][j+1] + e.p[i+1][j] - e.p[i][j]
		}
	}
	return e
}

// rect is the sum of d[i][j] over a <= i < b, c <= j < d.
func (e *energy) rect(a, b, c, d int) float64 {
	return e.p[b][d] - e.p[a][d] - e.p[b][c] + e.p[a][c]
}

// q is the E-divisive statistic of splitting [a, b) at t (alpha = 1):
// (m n / (m + n)) * (2/(m n) between - 1/C(m,2) within-left - 1/C(n,2) within-right).
func (e *energy) q(a, t, b int) float64 {
	m, n := float64(t-a), float64(b-t)
	between := e.rect(a, t, t, b)
	left := e.rect(a, t, a, t) / 2 // each unordered pair twice
	right := e.rect(t, b, t, b) / 2
	var wl, wr float64
	if m > 1 {
		wl = left / (m * (m - 1) / 2)
	}
	if n > 1 {
		wr = right / (n * (n - 1) / 2)
	}
	return m * n / (m + n) * (2*between/(m*n) - wl - wr)
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func variance(xs []float64, m float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s / float64(len(xs)-1)
}

// studentT is Student's two-sample t statistic (pooled variance; its absolute value) and its
// degrees of freedom. The pooled variance keeps a short segment's chance calm from looking like
// certainty (Welch's per-segment variance made 3-run segments at a series' edge "significant").
func studentT(a, b []float64) (t, df float64) {
	if len(a) < 2 || len(b) < 2 {
		return 0, 0
	}
	ma, mb := mean(a), mean(b)
	df = float64(len(a) + len(b) - 2)
	pooled := (variance(a, ma)*float64(len(a)-1) + variance(b, mb)*float64(len(b)-1)) / df
	se := math.Sqrt(pooled * (1/float64(len(a)) + 1/float64(len(b))))
	if se == 0 {
		if ma == mb {
			return 0, df
		}
		return math.Inf(1), df
	}
	return math.Abs(ma-mb) / se, df
}

// studentP is the two-sided p-value of Student's t-test between a and b (1 when undefined).
func studentP(a, b []float64) float64 {
	t, df := studentT(a, b)
	if df <= 0 {
		return 1
	}
	if math.IsInf(t, 1) {
		return 0
	}
	return 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(t)
}
