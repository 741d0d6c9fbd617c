// Package stats holds the small pure functions behind every reported number: nearest-rank
// quantiles (as ClusterLoader2 and agent-sandbox's own tools compute them), create-rate ceilings,
// bootstrap confidence intervals and the A/B comparison (Mann-Whitney U via x/perf/benchmath).
package stats

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"

	mstats "github.com/montanaflynn/stats"
	"golang.org/x/perf/benchmath"
)

// Quantiles are the nearest-rank summary of a sample.
type Quantiles struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// NearestRank is the smallest value with at least p% of the sample at or below it; NaN when empty.
func NearestRank(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	v, err := mstats.PercentileNearestRank(xs, p)
	if err != nil {
		return math.NaN()
	}
	return v
}

// Summarize computes nearest-rank p50/p90/p99 and the maximum.
func Summarize(xs []float64) Quantiles {
	q := Quantiles{N: len(xs), P50: NearestRank(xs, 50), P90: NearestRank(xs, 90), P99: NearestRank(xs, 99), Max: math.NaN()}
	if len(xs) > 0 {
		q.Max, _ = mstats.Max(xs)
	}
	return q
}

// Ceiling is the highest rate held over `window` consecutive per-second bins: the maximum over
// all windows of (sum of the window's counts)/window. With fewer bins than the window, the whole
// series is one window (a burst shorter than the window cannot claim a longer-held rate).
func Ceiling(perSecond []float64, window int) float64 {
	if len(perSecond) == 0 || window < 1 {
		return 0
	}
	if len(perSecond) < window {
		s := 0.0
		for _, v := range perSecond {
			s += v
		}
		return s / float64(window)
	}
	sum := 0.0
	for i := 0; i < window; i++ {
		sum += perSecond[i]
	}
	best := sum
	for i := window; i < len(perSecond); i++ {
		sum += perSecond[i] - perSecond[i-window]
		if sum > best {
			best = sum
		}
	}
	return best / float64(window)
}

// CI is a confidence interval.
type CI struct {
	Lo Num `json:"lo"`
	Hi Num `json:"hi"`
}

// Num is a float64 that survives JSON when it is not finite: +Inf is written "+Inf" (a claim that
// never became Ready stays in the sample as +Inf), NaN (no data) is written null.
type Num float64

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) { return []byte(numString(float64(n))), nil }

// UnmarshalJSON implements json.Unmarshaler.
func (n *Num) UnmarshalJSON(b []byte) error {
	v, err := parseNum(b)
	*n = Num(v)
	return err
}

func numString(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return `"+Inf"`
	case math.IsInf(v, -1):
		return `"-Inf"`
	case math.IsNaN(v):
		return "null"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func parseNum(b []byte) (float64, error) {
	switch string(b) {
	case "", "null":
		return math.NaN(), nil
	case `"+Inf"`:
		return math.Inf(1), nil
	case `"-Inf"`:
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(string(b), 64)
}

// Bootstrap is the percentile bootstrap CI of stat over xs: `iters` resamples with replacement
// from a seeded generator (so a run's CIs are reproducible from its recorded seed).
func Bootstrap(xs []float64, stat func([]float64) float64, iters int, confidence float64, rng *rand.Rand) CI {
	if len(xs) == 0 {
		return CI{Num(math.NaN()), Num(math.NaN())}
	}
	if len(xs) == 1 {
		v := Num(stat(xs))
		return CI{v, v}
	}
	est := make([]float64, iters)
	buf := make([]float64, len(xs))
	for i := range est {
		for j := range buf {
			buf[j] = xs[rng.IntN(len(xs))]
		}
		est[i] = stat(buf)
	}
	return percentileCI(est, confidence)
}

// BootstrapDelta is the bootstrap CI of stat(b) - stat(a), resampling both independently.
func BootstrapDelta(a, b []float64, stat func([]float64) float64, iters int, confidence float64, rng *rand.Rand) CI {
	if len(a) == 0 || len(b) == 0 {
		return CI{Num(math.NaN()), Num(math.NaN())}
	}
	est := make([]float64, iters)
	ba, bb := make([]float64, len(a)), make([]float64, len(b))
	for i := range est {
		for j := range ba {
			ba[j] = a[rng.IntN(len(a))]
		}
		for j := range bb {
			bb[j] = b[rng.IntN(len(b))]
		}
		est[i] = stat(bb) - stat(ba)
	}
	return percentileCI(est, confidence)
}

// nearestRankIndex is the 0-based index of the nearest-rank p-th percentile in a sorted sample
// of n (as montanaflynn/stats computes it).
func nearestRankIndex(n int, p float64) int {
	if p >= 100 {
		return n - 1
	}
	k := int(math.Ceil(float64(n) * p / 100))
	if k < 1 {
		k = 1
	}
	return k - 1
}

func sortedCopy(xs []float64) []float64 {
	out := append([]float64(nil), xs...)
	sort.Float64s(out)
	return out
}

func percentileCI(est []float64, confidence float64) CI {
	sort.Float64s(est)
	alpha := (1 - confidence) / 2
	lo := est[int(math.Floor(alpha*float64(len(est)-1)))]
	hi := est[int(math.Ceil((1-alpha)*float64(len(est)-1)))]
	return CI{Num(lo), Num(hi)}
}

// Comparison is an A/B verdict between a baseline and a treatment sample.
type Comparison struct {
	P           Num     `json:"p"`           // two-sided p-value (Method); null when there is none
	Significant bool    `json:"significant"` // P < Alpha
	Alpha       float64 `json:"alpha"`
	// Delta is benchstat's formatted relative change of the medians ("+12.3%", or "~").
	Delta string `json:"delta"`
	// Method names the test ("" in results written before it was recorded: Mann-Whitney U over
	// the pooled values); Note says why there is no p-value or why it cannot be small.
	Method string `json:"method,omitempty"`
	Note   string `json:"note,omitempty"`
}

// Test names recorded in Comparison.Method.
const (
	MethodMWReps      = "mann-whitney over repetitions"
	MethodPermutation = "permutation over repetitions"
)

// CompareReps compares per-repetition values (one number per repetition: ceilings, refill
// times, correctness ratios) with the Mann-Whitney U test, as benchstat compares benchmark
// runs. Below MinReps a side it gives no p-value; when the repetitions cannot reach alpha at all
// (3 vs 3: the smallest two-sided p is 0.1) it says so.
func CompareReps(base, treat []float64, alpha float64) Comparison {
	c := Compare(base, treat, alpha)
	c.Method = MethodMWReps
	if len(base) < MinReps || len(treat) < MinReps {
		c.P, c.Significant, c.Delta = Num(math.NaN()), false, "~"
		c.Note = fmt.Sprintf("insufficient repetitions (%d vs %d; at least %d a side)", len(base), len(treat), MinReps)
		return c
	}
	if mp := math.Min(1, 2/binomial(len(base)+len(treat), len(base))); mp > alpha {
		c.Note = fmt.Sprintf("%d vs %d repetitions cannot reach p < %g (smallest possible p %.2g)", len(base), len(treat), alpha, mp)
	}
	return c
}

// CompareNestedQuantile is CompareNested as a Comparison (the pooled values' relative change
// formatted as benchstat does).
func CompareNestedQuantile(base, treat Nested, p float64, iters int, confidence, alpha float64, rng *rand.Rand) (Comparison, CI) {
	hc := CompareNested(base, treat, p, iters, confidence, alpha, rng)
	c := Comparison{P: hc.P, Alpha: alpha, Method: MethodPermutation, Note: hc.Note, Delta: "~"}
	c.Significant = !math.IsNaN(float64(hc.P)) && float64(hc.P) < alpha
	if c.Significant {
		b, t := NearestRank(base.Pooled(), p), NearestRank(treat.Pooled(), p)
		c.Delta = fmt.Sprintf("%+.1f%%", (t-b)/b*100)
	}
	return c, hc.CI
}

// Compare runs the Mann-Whitney U test (benchmath.AssumeNothing) at alpha.
func Compare(base, treat []float64, alpha float64) Comparison {
	th := benchmath.DefaultThresholds
	th.CompareAlpha = alpha
	a, b := benchmath.NewSample(base, &th), benchmath.NewSample(treat, &th)
	c := benchmath.AssumeNothing.Compare(a, b)
	out := Comparison{P: Num(c.P), Alpha: c.Alpha, Significant: c.P < c.Alpha}
	out.Delta = c.FormatDelta(Median(base), Median(treat))
	if math.IsNaN(c.P) {
		out.Significant = false
	}
	return out
}

// Median is the nearest-rank median.
func Median(xs []float64) float64 { return NearestRank(xs, 50) }

// P99 is the nearest-rank 99th percentile.
func P99(xs []float64) float64 { return NearestRank(xs, 99) }

// Mean of xs (NaN when empty).
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	m, _ := mstats.Mean(xs)
	return m
}

// MarshalJSON writes non-finite values as Num does.
func (q Quantiles) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf(`{"n":%d,"p50":%s,"p90":%s,"p99":%s,"max":%s}`, q.N,
		numString(q.P50), numString(q.P90), numString(q.P99), numString(q.Max))), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (q *Quantiles) UnmarshalJSON(b []byte) error {
	var raw struct {
		N                  int
		P50, P90, P99, Max Num
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*q = Quantiles{N: raw.N, P50: float64(raw.P50), P90: float64(raw.P90), P99: float64(raw.P99), Max: float64(raw.Max)}
	return nil
}
