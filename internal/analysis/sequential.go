package analysis

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/stats"
)

// verdictMetrics are the metrics a warm-pool cell's verdict rests on: claim p50 and p99, each
// repetition's nearest-rank quantile of its claims (failed claims count as +Inf).
var verdictMetrics = []struct {
	key, label string
	p          float64
}{{"claim.p50_ms", "p50", 50}, {"claim.p99_ms", "p99", 99}}

// IsVerdictMetric reports whether key is one of the metrics a cell's verdict rests on.
func IsVerdictMetric(key string) bool {
	for _, v := range verdictMetrics {
		if v.key == key {
			return true
		}
	}
	return false
}

// CellState is where one cell name stands under the design after the rounds run so far.
type CellState struct {
	Open     bool
	Stopping results.Stopping
	Verdict  *results.Verdict
	// seq are the verdict metrics' sequential results (nil for the baseline).
	seq map[string]stats.SeqResult
}

// repValues is one cell name's per-repetition values of a verdict metric, by repetition number.
type repValues struct {
	reps []int
	vals []float64
}

func verdictValues(cells []*results.Cell, p float64) repValues {
	var rv repValues
	sorted := append([]*results.Cell(nil), cells...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Rep < sorted[j].Rep })
	for _, c := range sorted {
		l := latencies("")(c)
		if len(l) == 0 {
			continue
		}
		rv.reps = append(rv.reps, c.Rep)
		rv.vals = append(rv.vals, stats.NearestRank(l, p))
	}
	return rv
}

// pairedUpTo is the history of a paired comparison through round: entry r-1 holds the aligned
// pairs (base, treat) of the rounds up to r in which both had a measured repetition (repetition
// r of a cell and of its baseline ran in round r); a repetition missing on either side (failed,
// or not run) drops its round's pair.
func pairedUpTo(base, treat repValues, round int) [][2][]float64 {
	byRep := map[int]float64{}
	for i, r := range base.reps {
		if _, dup := byRep[r]; !dup {
			byRep[r] = base.vals[i]
		}
	}
	var b, t []float64
	seen := map[int]bool{}
	hist := make([][2][]float64, 0, round)
	next := 0 // treat.reps is sorted
	for r := 1; r <= round; r++ {
		for ; next < len(treat.reps) && treat.reps[next] <= r; next++ {
			rep := treat.reps[next]
			if bv, ok := byRep[rep]; ok && !seen[rep] {
				seen[rep] = true
				b, t = append(b, bv), append(t, treat.vals[next])
			}
		}
		hist = append(hist, [2][]float64{b[:len(b):len(b)], t[:len(t):len(t)]})
	}
	return hist
}

func (rv repValues) upTo(round int) []float64 {
	var out []float64
	for i, r := range rv.reps {
		if r <= round {
			out = append(out, rv.vals[i])
		}
	}
	return out
}

// Sequential replays the design over the cells measured so far (round is the last round run)
// and returns each cell name's state: a compared cell is open until every verdict metric is
// settled (an effect beyond the boundary, or equivalence) or it reached the design's maximum; the
// baseline is open while any compared cell is. final says no more rounds will run (the run ended
// or was interrupted): every state is then closed, with the reason. withP computes the
// repeated p-values (for the summary; the runner's stopping decisions do not need them).
// Cells of a kind without verdict metrics (gang, autoscale) run every round to the maximum.
// Under a paired design (d.PairedByRound()) each repetition is compared with the baseline's
// repetition of the same number, which ran in the same round.
func Sequential(cells []results.Cell, names []string, baseline string, d *stats.Sequential, round int, final, withP bool) map[string]*CellState {
	groups := map[string][]*results.Cell{}
	na := map[string]bool{}
	for i := range cells {
		c := &cells[i]
		if c.NotApplicable != "" {
			na[c.Name] = true
			continue
		}
		if c.Error == "" {
			groups[c.Name] = append(groups[c.Name], c)
		}
	}
	design := "sequential"
	if d.Fixed {
		design = "fixed"
	}
	paired := d.PairedByRound()
	out := map[string]*CellState{}
	baseValues := map[string]repValues{}
	for _, vm := range verdictMetrics {
		baseValues[vm.key] = verdictValues(groups[baseline], vm.p)
	}
	anyOpen := false
	for _, name := range names {
		if na[name] || name == baseline {
			continue
		}
		st := &CellState{Stopping: results.Stopping{Design: design, Paired: paired, Reps: len(groups[name]), MinReps: d.MinReps, MaxReps: d.MaxReps}, seq: map[string]stats.SeqResult{}}
		out[name] = st
		settled, verdictable := true, false
		v := &results.Verdict{}
		for _, vm := range verdictMetrics {
			tv := verdictValues(groups[name], vm.p)
			bv := baseValues[vm.key]
			if len(tv.vals) == 0 || len(bv.vals) == 0 {
				continue
			}
			verdictable = true
			var hist [][2][]float64
			if paired {
				hist = pairedUpTo(bv, tv, round)
			} else {
				for r := 1; r <= round; r++ {
					hist = append(hist, [2][]float64{bv.upTo(r), tv.upTo(r)})
				}
			}
			dd := d
			if d.Fixed {
				cp := *d
				cp.MaxReps = max(len(bv.vals), len(tv.vals))
				dd = &cp
			}
			res := dd.Compare(hist, round >= d.MaxReps || final, withP)
			st.seq[vm.key] = res
			mv := metricVerdict(vm.key, vm.label, res, d)
			v.Metrics = append(v.Metrics, mv)
			if !res.Settled && stopsOn(d, vm.key) {
				settled = false
			}
		}
		if verdictable {
			st.Verdict = v
		}
		st.Open = !final && round < d.MaxReps && (!verdictable || !settled || d.Fixed)
		st.Stopping.Reason, st.Stopping.Detail = stopReason(st, d, verdictable, final, round)
		if st.Open {
			anyOpen = true
		}
	}
	if _, ok := groups[baseline]; ok || !na[baseline] {
		st := &CellState{Open: anyOpen && !final && round < d.MaxReps,
			Stopping: results.Stopping{Design: design, Paired: paired, Reps: len(groups[baseline]), MinReps: d.MinReps, MaxReps: d.MaxReps, Reason: "baseline"}}
		st.Stopping.Detail = fmt.Sprintf("the baseline: %d repetitions, run while any compared cell ran", st.Stopping.Reps)
		if d.Fixed {
			st.Stopping.Reason, st.Stopping.Detail = "fixed", fmt.Sprintf("fixed design: %d repetitions", st.Stopping.Reps)
		}
		out[baseline] = st
	}
	return out
}

func stopReason(st *CellState, d *stats.Sequential, verdictable, final bool, round int) (string, string) {
	n := st.Stopping.Reps
	switch {
	case d.Fixed:
		return "fixed", fmt.Sprintf("fixed design: %d repetitions", n)
	case st.Open:
		return "open", fmt.Sprintf("open after %d repetitions", n)
	case !verdictable:
		if round >= d.MaxReps {
			return "max", fmt.Sprintf("no verdict metrics: ran the planned %d repetitions", n)
		}
		return "interrupted", fmt.Sprintf("stopped after %d repetitions, before the planned %d", n, d.MaxReps)
	}
	var effect, equiv, open []string
	for _, vm := range verdictMetrics {
		r, ok := st.seq[vm.key]
		if !ok || !stopsOn(d, vm.key) {
			continue
		}
		switch r.Verdict {
		case "faster", "slower":
			effect = append(effect, vm.label+" "+r.Verdict)
		case "equivalent":
			equiv = append(equiv, vm.label)
		default:
			open = append(open, vm.label)
		}
	}
	switch {
	case len(open) == 0 && len(effect) > 0:
		s := fmt.Sprintf("stopped after %d repetitions: %s beyond the boundary", n, strings.Join(effect, ", "))
		if len(equiv) > 0 {
			s += fmt.Sprintf("; %s no change larger than %g%%", strings.Join(equiv, ", "), d.EquivalencePct)
		}
		return "effect", s
	case len(open) == 0:
		return "equivalence", fmt.Sprintf("stopped after %d repetitions: %s no change larger than %g%%", n, strings.Join(equiv, ", "), d.EquivalencePct)
	case round >= d.MaxReps:
		return "max", fmt.Sprintf("ran the planned maximum of %d repetitions; %s not settled", d.MaxReps, strings.Join(open, ", "))
	}
	return "interrupted", fmt.Sprintf("the run ended after %d repetitions (planned up to %d); %s not settled", n, d.MaxReps, strings.Join(open, ", "))
}

// stopsOn reports whether a settled verdict of key is needed to stop a cell.
func stopsOn(d *stats.Sequential, key string) bool {
	if len(d.StopOn) == 0 {
		return true
	}
	for _, k := range d.StopOn {
		if k == key {
			return true
		}
	}
	return false
}

func metricVerdict(key, label string, r stats.SeqResult, d *stats.Sequential) results.MetricVerdict {
	mv := results.MetricVerdict{Key: key, Verdict: r.Verdict, Pct: stats.Num(math.NaN()), P: stats.Num(r.P), MDEPct: stats.Num(r.MDEPct),
		CI: stats.CI{Lo: stats.Num(math.NaN()), Hi: stats.Num(math.NaN())}, EquivalencePct: d.EquivalencePct}
	if r.At >= 0 {
		l := r.Looks[r.At]
		mv.Pct, mv.CI, mv.Look = stats.Num(l.Pct), l.CI, min(l.NBase, l.NTreat)
	}
	mde := "MDE n/a"
	if !math.IsNaN(r.MDEPct) {
		mde = fmt.Sprintf("MDE %.0f%%", r.MDEPct)
	}
	est := ""
	if !math.IsNaN(float64(mv.Pct)) {
		est = fmt.Sprintf("%+.1f%% [%+.1f, %+.1f]", float64(mv.Pct), float64(mv.CI.Lo), float64(mv.CI.Hi))
	}
	pv := ""
	if !math.IsNaN(r.P) {
		pv = fmt.Sprintf("p=%.3g, ", r.P)
	}
	switch r.Verdict {
	case "faster", "slower":
		mv.Text = fmt.Sprintf("%s %s %s (%ssettled at %d reps)", label, est, r.Verdict, pv, mv.Look)
	case "equivalent":
		mv.Text = fmt.Sprintf("%s no change larger than %g%% (%s, %d reps, %s)", label, d.EquivalencePct, est, mv.Look, mde)
	case "~":
		if r.Settled {
			mv.Text = fmt.Sprintf("%s ~ not settled at %d reps (%s; %s)", label, mv.Look, est, mde)
		} else {
			mv.Text = fmt.Sprintf("%s ~ open at %d reps (%s; %s)", label, mv.Look, est, mde)
		}
		if r.Note != "" && est == "" {
			mv.Text = fmt.Sprintf("%s ~ (%s)", label, r.Note)
		}
	default:
		mv.Text = fmt.Sprintf("%s insufficient repetitions (%s)", label, r.Note)
	}
	return mv
}

// sequentialRow replaces a verdict metric's comparison with the design's: the repeated p-value,
// the verdict, and the repeated confidence interval (as an absolute difference) in place of the
// fixed-design test, so the comparison table and gates read what the design concluded.
func sequentialRow(m *results.Metric, r stats.SeqResult, d *stats.Sequential, base float64) {
	if m.Delta == nil || r.At < 0 {
		return
	}
	l := r.Looks[r.At]
	c := &m.Delta.Comparison
	c.P, c.Alpha = stats.Num(r.P), d.Alpha
	c.Significant = r.Verdict == "faster" || r.Verdict == "slower"
	c.Method = fmt.Sprintf("group-sequential Welch t on log repetition quantiles (%s spending, look %d of up to %d)", d.Spending, r.At+1, d.MaxReps-d.MinReps+1)
	if d.PairedByRound() {
		c.Method = fmt.Sprintf("group-sequential paired t on per-round log ratios of repetition quantiles, paired by round (%s spending, look %d of up to %d)", d.Spending, r.At+1, d.MaxReps-d.MinReps+1)
	}
	c.Delta = "~"
	if c.Significant {
		c.Delta = fmt.Sprintf("%+.1f%%", l.Pct)
	}
	c.Note = ""
	if r.Verdict == "equivalent" {
		c.Note = fmt.Sprintf("no change larger than %g%%", d.EquivalencePct)
	}
	if !math.IsNaN(float64(l.CI.Lo)) {
		m.Delta.CI = stats.CI{Lo: stats.Num(base * float64(l.CI.Lo) / 100), Hi: stats.Num(base * float64(l.CI.Hi) / 100)}
	}
	m.Delta.MDEPct = stats.Num(r.MDEPct)
}

func (st *CellState) seqResult(key string) (stats.SeqResult, bool) {
	if st == nil {
		return stats.SeqResult{}, false
	}
	r, ok := st.seq[key]
	return r, ok
}

// extraNames are the cell names that are not in names, in order of appearance.
func extraNames(cells []results.Cell, names []string) []string {
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	var out []string
	for _, c := range cells {
		if !seen[c.Name] {
			seen[c.Name] = true
			out = append(out, c.Name)
		}
	}
	return out
}

// Spread is the spread between repetitions of a per-repetition metric in a run: the pooled
// standard deviation of its log values within each cell name (cells with at least 2 finite,
// positive values), and the degrees of freedom behind it. NaN when no cell has two.
func Spread(r *results.Results, key string) (sd float64, df int) {
	var pool pooledSpread
	for _, s := range r.Summary {
		for _, m := range s.Metrics {
			if m.Key != key {
				continue
			}
			var ls []float64
			for _, v := range m.PerRep {
				if f := float64(v); f > 0 && !math.IsInf(f, 0) && !math.IsNaN(f) {
					ls = append(ls, math.Log(f))
				}
			}
			pool.add(ls)
		}
	}
	return pool.sd()
}

// PairedSpread is the spread of the per-round log ratio (cell / baseline, same repetition
// number) of a verdict metric's quantile p in a run, pooled over the compared cells (each
// around its own mean), with its degrees of freedom; NaN when no cell has two pairs. In a
// fixed-design run, repetitions with one number did not share a round, so the estimate carries
// no round effect to cancel (about sqrt(2) times the spread between repetitions): conservative.
func PairedSpread(r *results.Results, p float64) (sd float64, df int) {
	groups := map[string][]*results.Cell{}
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.Error == "" && c.NotApplicable == "" {
			groups[c.Name] = append(groups[c.Name], c)
		}
	}
	base := verdictValues(groups[r.Baseline], p)
	byRep := map[int]float64{}
	for i, rep := range base.reps {
		byRep[rep] = base.vals[i]
	}
	var pool pooledSpread
	for name, cells := range groups {
		if name == r.Baseline {
			continue
		}
		tv := verdictValues(cells, p)
		var ls []float64
		for i, rep := range tv.reps {
			b, ok := byRep[rep]
			if t := tv.vals[i]; ok && b > 0 && t > 0 && !math.IsInf(b, 0) && !math.IsInf(t, 0) {
				ls = append(ls, math.Log(t/b))
			}
		}
		pool.add(ls)
	}
	return pool.sd()
}

// pooledSpread pools the spread of several samples, each around its own mean.
type pooledSpread struct {
	ss float64
	df int
}

// add counts one sample (fewer than 2 values add nothing).
func (p *pooledSpread) add(ls []float64) {
	if len(ls) < 2 {
		return
	}
	mean := stats.Mean(ls)
	for _, l := range ls {
		p.ss += (l - mean) * (l - mean)
	}
	p.df += len(ls) - 1
}

// sd is the pooled standard deviation and its degrees of freedom (NaN, 0 for none).
func (p pooledSpread) sd() (float64, int) {
	if p.df == 0 {
		return math.NaN(), 0
	}
	return math.Sqrt(p.ss / float64(p.df)), p.df
}

// RepsFor is about the repetitions a side at which a comparison has 80% power for a change of
// effectPct at spread sd (for a paired design, the spread of per-round log ratios: PairedSpread),
// judged at the design's last boundary (1.96 for the fixed design):
// the boundary plus the 80% power quantile over the standard error of the difference. 0 when
// more than 1000 would be needed or sd is unknown.
func RepsFor(effectPct, sd float64, d *stats.Sequential) int {
	if math.IsNaN(sd) || effectPct <= 0 {
		return 0
	}
	c := 1.96
	if !d.Fixed {
		var fr []float64
		for r := d.MinReps; r <= d.MaxReps; r++ {
			fr = append(fr, float64(r)/float64(d.MaxReps))
		}
		if b := d.Bounds(fr); !math.IsInf(b[len(b)-1], 1) {
			c = b[len(b)-1]
		}
	}
	for n := 2; n <= 1000; n++ {
		mde := stats.MDEPct(sd, n, n, c)
		if d.PairedByRound() {
			mde = stats.MDEPairedPct(sd, n, c)
		}
		if mde <= effectPct {
			return n
		}
	}
	return 0
}
