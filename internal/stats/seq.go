package stats

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"
)

// Sequential is a group-sequential design for comparing a cell with its baseline over rounds of
// repetitions: a look after every round from MinReps to MaxReps repetitions a side, with the
// two-sided false-positive rate Alpha spent over the looks by a Lan-DeMets spending function of
// the information fraction, so that the chance of ever calling an A/A difference significant, at
// any look, is Alpha. EquivalencePct adds a second way to stop: a repeated confidence interval
// (valid at every look simultaneously) that lies inside +-EquivalencePct is the verdict "no
// change larger than EquivalencePct%". A design with MaxReps == MinReps (or Fixed) has one look:
// the fixed design.
type Sequential struct {
	Alpha          float64 `json:"alpha"`
	MinReps        int     `json:"minReps"`
	MaxReps        int     `json:"maxReps"`
	EquivalencePct float64 `json:"equivalencePct"`
	// Spending is "pocock" (alpha spent about evenly: early stops for large effects) or
	// "obrien-fleming" (little alpha early: more power at the last look).
	Spending string `json:"spending"`
	Fixed    bool   `json:"fixed,omitempty"` // one look at MaxReps with all of Alpha
	// StopOn are the metrics whose settled verdicts stop a cell (empty: all verdict metrics).
	// Other verdict metrics are judged by the same repeated intervals at whatever repetitions the
	// cell got: those intervals hold at every look whatever rule chose when to stop.
	StopOn []string `json:"stopOn,omitempty"`
	// Paired compares each repetition with the baseline's repetition of the same round (the runner
	// runs repetition r of every open cell, and of the baseline, in round r): a one-sample t on the
	// per-round log ratios, which removes what the cells of a round share (the lab's drift between
	// bursts) from the standard error. Compare's history then holds aligned pairs. Only for a
	// design whose rounds hold one repetition of each cell, never for the fixed design's order.
	Paired bool `json:"paired,omitempty"`

	bounds map[string][]float64   // memoized boundaries by alpha and look fractions
	paths  map[string][][]float64 // memoized simulated |Z| by look fractions
	orders map[string][][]int32   // each look's paths from the largest |Z| down
}

// Spending function names.
const (
	SpendPocock = "pocock"
	SpendOBF    = "obrien-fleming"
)

// Spent is the cumulative alpha spent by information fraction t (0..1).
func (s *Sequential) Spent(t float64) float64 {
	t = math.Min(math.Max(t, 0), 1)
	if t == 0 {
		return 0
	}
	if s.Fixed {
		if t >= 1 {
			return s.Alpha
		}
		return 0
	}
	if s.Spending == SpendOBF {
		z := normalQuantile(1 - s.Alpha/2)
		return 2 * (1 - normalCDF(z/math.Sqrt(t)))
	}
	return s.Alpha * math.Log(1+(math.E-1)*t)
}

// boundaryPaths is how many simulated standard Brownian paths the boundaries come from: a fixed
// seed makes them the same in every run; with 100,000 paths the simulated crossing probability
// of a look is within about +-0.0015 of the spent alpha. (MaxSeqReps bounds the looks, so the
// memoized paths stay under ~60 MB.)
const boundaryPaths = 100_000

// MaxSeqReps is the largest planned maximum the sequential design takes (matrix.repetitions);
// beyond it, run the fixed design.
const MaxSeqReps = 50

// Bounds returns the |z| boundary of each look, given the looks' information fractions (strictly
// increasing, the last at most 1): the k-th boundary is such that a standard Brownian motion
// observed at those fractions (the test statistic under "no difference") crosses for the first
// time at look k with probability Spent(t_k) - Spent(t_{k-1}). A look whose increment is 0 gets
// an infinite boundary (it can only stop for equivalence).
//
// Under a paired design with more than one look the paths are not Brownian but the paired t
// statistic itself under "no difference" (pairedPathsAt): its looks, each converted to z, are
// less correlated than a Brownian motion's at small n (the standard deviation is re-estimated
// at every look), so Brownian boundaries would let it cross more often than spent (A/A
// simulation: 0.056-0.058 over looks 3..10 at alpha 0.05, TestSequentialPairedBounds). The paired t is exactly pivotal for normal
// log ratios, so boundaries from its own paths spend exactly what they say.
func (s *Sequential) Bounds(fractions []float64) []float64 {
	key := fmt.Sprint(s.Alpha, s.Spending, s.Fixed, fractions)
	if s.PairedByRound() {
		key = fmt.Sprint("paired ", s.MaxReps, " ", key)
	}
	if b, ok := s.bounds[key]; ok {
		return b
	}
	var z [][]float64
	var order [][]int32
	if s.PairedByRound() {
		z, order = s.pairedPathsAt(fractions)
	} else {
		z, order = s.pathsAt(fractions)
	}
	alive := make([]bool, boundaryPaths)
	for p := range alive {
		alive[p] = true
	}
	out := make([]float64, len(fractions))
	spentBefore := 0.0
	for j, t := range fractions {
		inc := s.Spent(t) - spentBefore
		spentBefore = s.Spent(t)
		crossN := int(math.Floor(inc * boundaryPaths))
		out[j] = math.Inf(1)
		// Walk the look's paths from the largest |Z| down: the crossN-th one still alive is the
		// boundary, and every alive path walked over crosses here.
		n := 0
		for _, p := range order[j] {
			if n >= crossN {
				break
			}
			if alive[p] {
				n++
				alive[p] = false
				out[j] = z[j][p]
			}
		}
	}
	if s.PairedByRound() {
		// the walk found |t| boundaries: each on the z scale of its look's degrees of freedom
		for j, f := range fractions {
			out[j] = tToZ(out[j], float64(pairsAt(f, s.MaxReps)-1))
		}
	}
	if s.bounds == nil {
		s.bounds = map[string][]float64{}
	}
	s.bounds[key] = out
	return out
}

// PairedByRound says comparisons pair each repetition with the baseline's of its round (Paired,
// and not the fixed design, whose order is not in rounds); the boundaries then come from the
// paired t statistic's own null paths.
func (s *Sequential) PairedByRound() bool { return s.Paired && !s.Fixed }

// pairsAt is the number of pairs at information fraction f of a paired design planned to
// maxReps rounds (at least 2: the fewest with a standard deviation).
func pairsAt(f float64, maxReps int) int {
	return max(int(math.Round(f*float64(maxReps))), 2)
}

// pairedPathsAt is |t| of every simulated path at each fraction of a paired design: the paired
// t statistic (mean over standard error) of standard normal log ratios after pairsAt(fraction)
// rounds, the statistic Compare computes under "no difference" (its distribution does not
// depend on the spread). The same fixed seed every time.
func (s *Sequential) pairedPathsAt(fractions []float64) ([][]float64, [][]int32) {
	key := fmt.Sprint("paired ", s.MaxReps, " ", fractions)
	if t, ok := s.paths[key]; ok {
		return t, s.orders[key]
	}
	rng := rand.New(rand.NewPCG(0x5e9, 0xb1))
	out := make([][]float64, len(fractions))
	order := make([][]int32, len(fractions))
	for j := range fractions {
		out[j] = make([]float64, boundaryPaths)
		order[j] = make([]int32, boundaryPaths)
	}
	for p := 0; p < boundaryPaths; p++ {
		n, mean, m2 := 0, 0.0, 0.0 // Welford's running mean and sum of squared deviations
		for j, f := range fractions {
			for k := pairsAt(f, s.MaxReps); n < k; {
				x := rng.NormFloat64()
				n++
				d := x - mean
				mean += d / float64(n)
				m2 += d * (x - mean)
			}
			out[j][p] = math.Abs(mean / math.Sqrt(m2/float64(n-1)/float64(n)))
			order[j][p] = int32(p)
		}
	}
	for j := range fractions {
		tj := out[j]
		slices.SortFunc(order[j], func(a, b int32) int { return cmp.Compare(tj[b], tj[a]) })
	}
	if s.paths == nil {
		s.paths, s.orders = map[string][][]float64{}, map[string][][]int32{}
	}
	s.paths[key], s.orders[key] = out, order
	return out, order
}

// tToZ is the z score with the same two-sided tail probability as |t| on Student's t with df
// degrees of freedom (as seqZ converts the statistic); +Inf stays +Inf.
func tToZ(t, df float64) float64 {
	if math.IsInf(t, 1) {
		return t
	}
	p := 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.CDF(-math.Abs(t))
	if z := normalQuantile(1 - p/2); p > 0 && !math.IsInf(z, 0) {
		return z
	}
	return 38 // beyond any boundary; finite so that repeatedP can bisect on it
}

// pathsAt is |Z| of every simulated path at each fraction: a standard Brownian motion W(t)
// observed at the fractions, standardized (Z = W(t)/sqrt(t)). The same fixed seed every time.
func (s *Sequential) pathsAt(fractions []float64) ([][]float64, [][]int32) {
	key := fmt.Sprint(fractions)
	if z, ok := s.paths[key]; ok {
		return z, s.orders[key]
	}
	rng := rand.New(rand.NewPCG(0x5e9, 0xb0))
	w := make([]float64, boundaryPaths)
	out := make([][]float64, len(fractions))
	order := make([][]int32, len(fractions))
	prev := 0.0
	for j, t := range fractions {
		step := math.Sqrt(math.Max(t-prev, 0))
		prev = t
		out[j] = make([]float64, boundaryPaths)
		order[j] = make([]int32, boundaryPaths)
		for p := range w {
			w[p] += step * rng.NormFloat64()
			out[j][p] = math.Abs(w[p] / math.Sqrt(t))
			order[j][p] = int32(p)
		}
		zj := out[j]
		sort.Slice(order[j], func(a, b int) bool { return zj[order[j][a]] > zj[order[j][b]] })
	}
	if s.paths == nil {
		s.paths, s.orders = map[string][][]float64{}, map[string][][]int32{}
	}
	s.paths[key], s.orders[key] = out, order
	return out, order
}

// WelchLog compares per-repetition values on the log scale (ratios of geometric means): the
// difference of mean logs (treat - base), its standard error and Welch-Satterthwaite degrees of
// freedom. ok is false with fewer than 2 values a side or any value that is not finite and
// positive (a failed claim at this quantile).
func WelchLog(base, treat []float64) (d, se, df float64, ok bool) {
	la, okA := logs(base)
	lb, okB := logs(treat)
	if !okA || !okB || len(la) < 2 || len(lb) < 2 {
		return 0, 0, 0, false
	}
	ma, va := meanVar(la)
	mb, vb := meanVar(lb)
	na, nb := float64(len(la)), float64(len(lb))
	qa, qb := va/na, vb/nb
	se = math.Sqrt(qa + qb)
	if se == 0 {
		return mb - ma, 0, na + nb - 2, true
	}
	df = (qa + qb) * (qa + qb) / (qa*qa/(na-1) + qb*qb/(nb-1))
	return mb - ma, se, df, true
}

// PairedLog compares aligned per-repetition values on the log scale: base[i] and treat[i] ran
// in the same round. It returns the mean of the per-round log ratios log(treat/base), its
// standard error (their standard deviation over sqrt(n)) and n-1 degrees of freedom, over the n
// pairs with both sides measured (a NaN on either side drops the pair). ok is false with fewer
// than 2 pairs or any paired value that is not finite and positive (a failed claim at this
// quantile).
func PairedLog(base, treat []float64) (d, se, df float64, ok bool) {
	diffs, ok := logRatios(base, treat)
	if !ok || len(diffs) < 2 {
		return 0, 0, 0, false
	}
	m, v := meanVar(diffs)
	n := float64(len(diffs))
	return m, math.Sqrt(v / n), n - 1, true
}

// pairs are the aligned pairs with both sides measured (not NaN), in order.
func pairs(base, treat []float64) (b, t []float64) {
	for i := 0; i < min(len(base), len(treat)); i++ {
		if !math.IsNaN(base[i]) && !math.IsNaN(treat[i]) {
			b, t = append(b, base[i]), append(t, treat[i])
		}
	}
	return b, t
}

// logRatios are log(treat[i]/base[i]) over the pairs with both sides measured; false when a
// paired value is not finite and positive.
func logRatios(base, treat []float64) ([]float64, bool) {
	b, t := pairs(base, treat)
	lb, okB := logs(b)
	lt, okT := logs(t)
	if !okB || !okT {
		return nil, false
	}
	out := make([]float64, len(lb))
	for i := range lb {
		out[i] = lt[i] - lb[i]
	}
	return out, true
}

func logs(xs []float64) ([]float64, bool) {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		if math.IsNaN(x) {
			continue
		}
		if x <= 0 || math.IsInf(x, 0) {
			return nil, false
		}
		out = append(out, math.Log(x))
	}
	return out, true
}

func meanVar(xs []float64) (m, v float64) {
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return m, v / float64(len(xs)-1)
}

// Look is one comparison's state at one look.
type Look struct {
	NBase, NTreat int
	Fraction      float64 // information fraction
	Z             float64 // the t statistic as a z score with the same two-sided tail probability
	Bound         float64 // |z| boundary of this look
	Nominal       float64 // the two-sided nominal p level this look rejects at
	Pct           float64 // estimated change, % (ratio of geometric means)
	CI            CI      // repeated confidence interval of Pct at this look
}

// SeqResult is a comparison's verdict under the design, replayed over its looks.
type SeqResult struct {
	// Verdict: "faster" / "slower" (lower / higher than the baseline beyond the boundary),
	// "equivalent", "~" (looks remain, or the planned maximum was reached unsettled) or
	// "insufficient repetitions".
	Verdict string
	Settled bool // the verdict cannot change with more repetitions
	Looks   []Look
	At      int // index into Looks of the look the verdict rests on (the last one when unsettled)
	// P is the repeated p-value at that look: the smallest alpha at which the design would have
	// stopped there. Valid whatever the looks: P <= a at some look has probability <= a under "no
	// difference".
	P      float64
	MDEPct float64 // 80% power at the planned maximum, at the spread measured at that look
	Note   string
}

// Compare replays the design's looks over a comparison's history: history[k] is (base, treat)
// per-repetition values as they stood after round k+1 (rounds without new repetitions on either
// side are not looks). Under a paired design base[i] and treat[i] are the repetitions of one
// round (NaN: that side has none), and a look counts the rounds with both. atMax says the
// history ended at the planned maximum (no more rounds): an unsettled comparison is then "~" for
// good. withP computes the repeated p-value (a few hundred boundary evaluations; the stopping
// decision does not need it).
func (s *Sequential) Compare(history [][2][]float64, atMax, withP bool) SeqResult {
	res := SeqResult{Verdict: "insufficient repetitions", P: math.NaN(), MDEPct: math.NaN(), At: -1}
	type pt struct {
		na, nb      int
		d, se, df   float64
		ok          bool
		base, treat []float64
	}
	var pts []pt
	for _, h := range history {
		if s.PairedByRound() {
			base, treat := pairs(h[0], h[1])
			n := len(base)
			if n < s.MinReps || (len(pts) > 0 && pts[len(pts)-1].na == n) {
				continue
			}
			d, se, df, ok := PairedLog(base, treat)
			pts = append(pts, pt{n, n, d, se, df, ok, base, treat})
			continue
		}
		na, nb := countFinite(h[0]), countFinite(h[1])
		if na < s.MinReps || nb < s.MinReps {
			continue
		}
		if len(pts) > 0 && pts[len(pts)-1].na == na && pts[len(pts)-1].nb == nb {
			continue
		}
		d, se, df, ok := WelchLog(h[0], h[1])
		pts = append(pts, pt{na, nb, d, se, df, ok, h[0], h[1]})
	}
	if len(pts) == 0 {
		res.Note = fmt.Sprintf("fewer than %d repetitions a side", s.MinReps)
		if s.PairedByRound() {
			res.Note = fmt.Sprintf("fewer than %d rounds with a repetition of both", s.MinReps)
		}
		return res
	}
	imax := float64(s.MaxReps) / 2
	var fractions []float64
	for _, p := range pts {
		f := math.Min(info(p.na, p.nb)/imax, 1)
		if s.PairedByRound() {
			f = math.Min(float64(p.na)/float64(s.MaxReps), 1)
		}
		if len(fractions) > 0 && f <= fractions[len(fractions)-1] {
			f = math.Min(fractions[len(fractions)-1]+1e-6, 1)
		}
		fractions = append(fractions, f)
	}
	if s.Fixed {
		// One look, at whatever was measured, with all of alpha.
		fractions[len(fractions)-1] = 1
		pts, fractions = pts[len(pts)-1:], fractions[len(fractions)-1:]
	}
	bounds := s.Bounds(fractions)
	res.Verdict = "~"
	for k, p := range pts {
		l := Look{NBase: p.na, NTreat: p.nb, Fraction: fractions[k], Bound: bounds[k], Nominal: 2 * (1 - normalCDF(bounds[k]))}
		res.Looks = append(res.Looks, l)
		res.At = k
		if !p.ok {
			res.Note = "a repetition's value is not finite (failed claims at this quantile): no test"
			if s.PairedByRound() {
				res.Note = "a paired repetition's value is not finite (failed claims at this quantile): no test"
			}
			res.Looks[k].Pct, res.Looks[k].CI = math.NaN(), CI{Num(math.NaN()), Num(math.NaN())}
			continue
		}
		z, half := seqZ(p.d, p.se, p.df, l.Nominal)
		res.Looks[k].Z = z
		res.Looks[k].Pct = (math.Exp(p.d) - 1) * 100
		res.Looks[k].CI = CI{Num((math.Exp(p.d-half) - 1) * 100), Num((math.Exp(p.d+half) - 1) * 100)}
		res.Note = ""
		switch {
		case math.Abs(z) >= l.Bound:
			res.Verdict, res.Settled = "slower", true
			if p.d < 0 {
				res.Verdict = "faster"
			}
		case s.EquivalencePct > 0 && float64(res.Looks[k].CI.Lo) > -s.EquivalencePct && float64(res.Looks[k].CI.Hi) < s.EquivalencePct:
			res.Verdict, res.Settled = "equivalent", true
		}
		if res.Settled {
			break
		}
	}
	if !res.Settled && atMax {
		res.Settled = true
	}
	last := pts[res.At]
	if last.ok {
		res.MDEPct = s.mde(last.base, last.treat)
		if withP {
			res.P = s.repeatedP(fractions[:res.At+1], math.Abs(res.Looks[res.At].Z))
		}
	}
	return res
}

func info(na, nb int) float64 { return 1 / (1/float64(na) + 1/float64(nb)) }

func countFinite(xs []float64) int {
	n := 0
	for _, x := range xs {
		if !math.IsNaN(x) {
			n++
		}
	}
	return n
}

// seqZ turns a Welch t statistic into the z score with the same two-sided tail probability, and
// returns the half-width (log scale) of the interval at two-sided level nominal.
func seqZ(d, se, df, nominal float64) (z, half float64) {
	if se == 0 {
		if d == 0 {
			return 0, 0
		}
		return math.Copysign(math.Inf(1), d), 0
	}
	t := d / se
	return math.Copysign(tToZ(math.Abs(t), df), t), distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1-nominal/2) * se
}

// repeatedP is the smallest alpha for which the design, with the same looks, would have stopped
// at the last of them with statistic |z| (bisection; the boundary falls as alpha grows).
func (s *Sequential) repeatedP(fractions []float64, absZ float64) float64 {
	if math.IsInf(absZ, 1) || absZ >= 38 {
		return 0
	}
	if s.bounds == nil {
		s.bounds = map[string][]float64{}
	}
	probe := *s
	lo, hi := 1e-6, 1.0
	crosses := func(a float64) bool {
		probe.Alpha = a
		b := probe.Bounds(fractions)
		return absZ >= b[len(b)-1]
	}
	if !crosses(hi) {
		return 1
	}
	if crosses(lo) {
		return lo
	}
	for i := 0; i < 14; i++ {
		mid := math.Sqrt(lo * hi)
		if crosses(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	s.paths, s.orders = probe.paths, probe.orders
	return hi
}

// mde is the smallest change (%) a comparison of the planned maximum of repetitions a side would
// detect with 80% power at the last look's boundary, at the spread between repetitions
// measured (pooled standard deviation of the log values; under a paired design the standard
// deviation of the per-round log ratios).
func (s *Sequential) mde(base, treat []float64) float64 {
	if s.PairedByRound() {
		diffs, _ := logRatios(base, treat)
		if len(diffs) < 2 {
			return math.NaN()
		}
		_, v := meanVar(diffs)
		return MDEPairedPct(math.Sqrt(v), s.MaxReps, s.lastBound())
	}
	la, _ := logs(base)
	lb, _ := logs(treat)
	if len(la) < 2 || len(lb) < 2 {
		return math.NaN()
	}
	_, va := meanVar(la)
	_, vb := meanVar(lb)
	sd := math.Sqrt(((float64(len(la))-1)*va + (float64(len(lb))-1)*vb) / float64(len(la)+len(lb)-2))
	return MDEPct(sd, s.MaxReps, s.MaxReps, s.lastBound())
}

// lastBound is the |z| boundary of the last of the planned looks MinReps..MaxReps (the fixed
// design's single one: all of alpha).
func (s *Sequential) lastBound() float64 {
	if s.Fixed {
		return normalQuantile(1 - s.Alpha/2)
	}
	n := float64(s.MaxReps)
	var fr []float64
	for r := s.MinReps; r <= s.MaxReps; r++ {
		fr = append(fr, float64(r)/n)
	}
	b := s.Bounds(fr)
	if c := b[len(b)-1]; !math.IsInf(c, 1) {
		return c
	}
	return normalQuantile(1 - s.Alpha/2)
}

// MDEPct is the smallest relative change (%) a two-sample comparison of na and nb repetitions
// detects with 80% power at two-sided boundary c (1.96 for a single look at alpha 0.05), for
// values whose logs spread with standard deviation sd between repetitions. The boundary and the
// power quantile are Student's t with na+nb-2 degrees of freedom (the intervals' own
// distribution): at 3 a side the normal quantiles would state a third smaller an MDE than the
// test can see.
func MDEPct(sd float64, na, nb int, c float64) float64 {
	if na < 2 || nb < 2 || math.IsNaN(sd) {
		return math.NaN()
	}
	se := sd * math.Sqrt(1/float64(na)+1/float64(nb))
	return (math.Exp(tPower(c, float64(na+nb-2))*se) - 1) * 100
}

// MDEPairedPct is MDEPct for the paired comparison of n rounds: the smallest relative change (%)
// detected with 80% power at boundary c, for per-round log ratios (treat/baseline) that spread
// with standard deviation sd; Student's t with n-1 degrees of freedom.
func MDEPairedPct(sd float64, n int, c float64) float64 {
	if n < 2 || math.IsNaN(sd) {
		return math.NaN()
	}
	return (math.Exp(tPower(c, float64(n-1))*sd/math.Sqrt(float64(n))) - 1) * 100
}

// tPower is (boundary + 80% power quantile) on Student's t with df degrees of freedom, for a
// boundary c given on the normal scale (the same tail probability).
func tPower(c, df float64) float64 {
	td := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}
	return td.Quantile(normalCDF(c)) + td.Quantile(0.8)
}

// MDERel is MDEPct for a metric compared on its raw per-repetition values (ceilings, counts):
// the smallest change, as % of the baseline median, a comparison at alpha detects with 80%
// power at the measured standard deviations. NaN when it cannot be estimated (fewer than 2
// repetitions a side, a zero baseline, or no spread at all).
func MDERel(base, treat []float64, alpha float64) float64 {
	base, treat = finite(base), finite(treat)
	if len(base) < 2 || len(treat) < 2 {
		return math.NaN()
	}
	_, va := meanVar(base)
	_, vb := meanVar(treat)
	m := Median(base)
	if m == 0 || (va == 0 && vb == 0) {
		return math.NaN()
	}
	se := math.Sqrt(va/float64(len(base)) + vb/float64(len(treat)))
	return tPower(normalQuantile(1-alpha/2), float64(len(base)+len(treat)-2)) * se / math.Abs(m) * 100
}

func finite(xs []float64) []float64 {
	var out []float64
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
}

// Describe is a one-line statement of the design for reports.
func (s *Sequential) Describe() string {
	if s.Fixed {
		return fmt.Sprintf("fixed design: %d repetitions a side, one test at alpha %g", s.MaxReps, s.Alpha)
	}
	eq := ""
	if s.EquivalencePct > 0 {
		eq = fmt.Sprintf(", or when the repeated interval lies within +-%s%% (equivalence)", strconv.FormatFloat(s.EquivalencePct, 'g', -1, 64))
	}
	design := "sequential design"
	if s.PairedByRound() {
		design = "sequential design, paired by round (each repetition against the baseline's of the same round)"
	}
	return fmt.Sprintf("%s: a look after every round from %d to %d repetitions a side, alpha %g spent %s-style over the looks; a cell stops when its verdict crosses the boundary%s",
		design, s.MinReps, s.MaxReps, s.Alpha, strings.ReplaceAll(s.Spending, "obrien-fleming", "O'Brien-Fleming"), eq)
}

func normalCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

func normalQuantile(p float64) float64 {
	return distuv.UnitNormal.Quantile(p)
}
