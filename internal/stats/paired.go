package stats

import (
	"math"
	"sort"
)

// PairedRatio summarizes paired measurements num[i]/den[i] (for example the load generator's
// create rate over a plain client's, measured back to back in round i) with a distribution-free
// confidence interval for the median ratio: the sign-test interval, bounded by order statistics
// of the ratios. It assumes only that the pairs are independent and that a pair's ratio is as
// likely above as below the true median, not that noise is normal: a shared machine's noise
// comes in bursts and outliers.
type PairedRatio struct {
	Ratios []float64 // per pair, in input order
	Median float64   // the median ratio
	// Lo and Hi bound the median ratio; each lies on its wrong side of the true median with
	// probability at most Alpha (Hi is a one-sided upper bound at 1-Alpha, Lo a lower bound).
	// NaN when there are too few pairs for any bound at Alpha.
	Lo, Hi float64
	Alpha  float64
	// Rank is the order statistic (1-based, among the sorted ratios) that is Hi; Lo is
	// n+1-Rank. Hi < x means at least Rank of the n pairs were below x.
	Rank int
}

// Paired computes the ratios num[i]/den[i] and the sign-test bounds at alpha. The upper bound
// is the Rank-th smallest ratio, with Rank the smallest u such that P(Binomial(n, 1/2) >= u) <=
// alpha: for the bound to fall below the true median, u or more of n ratios must, which happens
// with probability P(Binomial(n, 1/2) >= u) when each ratio falls below it with probability 1/2.
func Paired(num, den []float64, alpha float64) PairedRatio {
	n := min(len(num), len(den))
	pr := PairedRatio{Alpha: alpha, Lo: math.NaN(), Hi: math.NaN(), Median: math.NaN()}
	for i := 0; i < n; i++ {
		pr.Ratios = append(pr.Ratios, num[i]/den[i])
	}
	if n == 0 {
		return pr
	}
	sorted := append([]float64(nil), pr.Ratios...)
	sort.Float64s(sorted)
	if n%2 == 1 {
		pr.Median = sorted[n/2]
	} else {
		pr.Median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	for u := (n + 1) / 2; u <= n; u++ {
		if BinomialUpperTail(n, u) <= alpha {
			pr.Rank = u
			pr.Hi, pr.Lo = sorted[u-1], sorted[n-u]
			break
		}
	}
	return pr
}

// BinomialUpperTail is P(X >= k) for X ~ Binomial(n, 1/2), exact for the small n of paired
// benchmark rounds.
func BinomialUpperTail(n, k int) float64 {
	if k <= 0 {
		return 1
	}
	if k > n {
		return 0
	}
	total := 0.0
	c := 1.0 // C(n, 0)
	for j := 0; j <= n; j++ {
		if j >= k {
			total += c
		}
		c = c * float64(n-j) / float64(j+1)
	}
	return total / math.Pow(2, float64(n))
}
