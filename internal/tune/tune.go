// Package tune is `brakebench tune`: a search over brake settings within a budget of cells, for
// an objective the user states subject to constraints, ending in a confirmation A/B of the
// winner against no brake on fresh repetitions. It is pure: cells are run by an Evaluator (the
// CLI runs each round as an ordinary run of the suite; the tests run synthetic responses).
//
// The method, in order:
//
//   - candidates: Latin hypercube points over the searched brakes' ranges (log scale for rates,
//     delays and counts; switches on or off), seeded, rounded to two significant digits;
//   - successive halving: round k runs every surviving candidate and the baseline (no brake)
//     r_k repetitions, repetition j of each in the same round j; the survivors are ranked by the
//     repetition-level estimate of the objective's change against the baseline (the mean of the
//     per-round log ratios: paired by round, so a round's shared conditions cancel), candidates
//     that violate a constraint after those that do not, and the better half goes on. Each round
//     gets an equal share of what is left of the budget, so the fewer survivors get more
//     repetitions each: cells go where the decision is close;
//   - iterated racing: with a budget for it, the halving runs again (two or three iterations)
//     over candidates drawn around the last iteration's best two, which race on with their
//     repetitions so far: the first pass finds the region, the next ones search it;
//   - confirmation: the search's winner is biased (the smallest of many noisy estimates is low by
//     selection, the "winner's curse"), so its search estimates are never reused: the winner and
//     the baseline run again, on fresh repetitions, under the run's sequential (or fixed) design,
//     and are judged by the same test every run uses (internal/stats). A setting is recommended
//     only when that test says "faster" on the objective and every constraint holds on the
//     confirmation's repetitions; otherwise the recommendation is to keep the defaults, with why.
package tune

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/brakebench/brakebench/internal/stats"
)

// Baseline is Observation.Candidate for the no-brake cell.
const Baseline = -1

// Observation is one measured cell: a candidate's (or the baseline's) repetition.
type Observation struct {
	// Candidate indexes the settings Evaluate got; Baseline for the no-brake cell.
	Candidate int
	// Rep is 1..reps: repetition r of every candidate and of the baseline ran in the same round.
	Rep int
	// Objective is the cell's value of the objective; NaN when the cell has none (it failed),
	// +Inf for a latency quantile that a failed claim reached.
	Objective float64
	// Metrics are the cell's values of the constraints' metrics (NaN or absent: none).
	Metrics map[string]float64
}

// Evaluator runs cells: every candidate and the baseline reps times, repetition r of each in
// round r. It returns what was measured (a cell that failed may be missing or NaN).
type Evaluator interface {
	Evaluate(ctx context.Context, candidates []Setting, reps int) ([]Observation, error)
}

// Confirmer is an Evaluator that runs the confirmation A/B (winner against the baseline) itself,
// as one run under design, stopping where the design stops; the tune judges what it returns with
// the same design. Without it the tune runs the confirmation round by round through Evaluate.
type Confirmer interface {
	Confirm(ctx context.Context, winner Setting, design *stats.Sequential) ([]Observation, error)
}

// Options are how a tune reports.
type Options struct {
	// WithP computes the confirmation's repeated p-value (hundreds of boundary evaluations).
	WithP bool
	// Log receives a line per round and the verdict (nil: quiet).
	Log func(format string, args ...any)
}

// The search's fixed choices (TestTunerFindsPlantedOptimum measures them on planted responses).
const (
	// MinFirstReps is the fewest repetitions an iteration's first round gives each candidate
	// when the tune sizes it itself (tune.candidates 0).
	MinFirstReps = 1
	// Elites is how many settings an iteration hands to the next (the next one's candidates are
	// drawn around them, and they race again with their repetitions so far).
	Elites = 2
	// Flip is the chance that a candidate drawn around an elite has a switch flipped.
	Flip = 0.2
)

// sizeFor is how many candidates an iteration with share cells starts with: the most for which,
// in the halving rounds down to keep sharing the cells equally, the first round still gives each
// candidate and the baseline MinFirstReps repetitions; at least 1, at most limit.
func sizeFor(share, limit, keep int) int {
	best := 1
	for n := 2; n <= limit; n++ {
		if share/halvings(n, keep)/(n+1) >= MinFirstReps {
			best = n
		}
	}
	return best
}

// limit is the most candidates an iteration tries: 4 per searched brake with a value, plus 4,
// and no more than the space holds.
func (sp *Spec) limit() int {
	if d := sp.distinct(); d > 0 {
		return d
	}
	return 4 + 4*sp.numericDims()
}

// Iterations is how many times the search halves: once over Latin hypercube candidates, then,
// for a space with values (not only switches) and a budget of 24 cells or more, again over
// candidates drawn around the first iteration's elites, and a third time for two or more
// searched values and 60 cells or more (iterated racing: a first pass finds the region, the next
// ones search it).
func (sp *Spec) Iterations() int {
	switch n := sp.numericDims(); {
	case n == 0 || sp.Budget < 24:
		return 1
	case n >= 2 && sp.Budget >= 60:
		return 3
	}
	return 2
}

// halvings is the rounds that halve n candidates down to keep: at least 1.
func halvings(n, keep int) int {
	k := 0
	for m := n; m > keep; m = (m + 1) / 2 {
		k++
	}
	return max(k, 1)
}

// roundReps is a round's repetitions: an equal share of what is left over the rounds left,
// spread over the n candidates and the baseline (the last round takes all that is left); at
// least 1 when one repetition of each fits at all.
func roundReps(left, roundsLeft, n int) int {
	r := left / max(roundsLeft, 1) / (n + 1)
	if roundsLeft <= 1 {
		r = left / (n + 1)
	}
	if r < 1 && n+1 <= left {
		r = 1
	}
	return r
}

// PlannedRound is a round of the schedule as planned before any result.
type PlannedRound struct {
	Iteration, Candidates, Reps, Cells int
}

// Schedule is the search as planned: each iteration's candidates halving to its elites (one in
// the last), the budget shared as the search shares it, every elite carried into the next
// iteration. (A round where a constraint eliminates more than half, or candidates the space
// cannot give, leave more for the rounds after it.)
func (sp *Spec) Schedule() []PlannedRound {
	var out []PlannedRound
	left, iters, carried := sp.Budget, sp.Iterations(), 0
	for it := 1; it <= iters; it++ {
		share, keep := sp.iteration(left, it)
		n := max(sp.first(share, keep, it), carried)
		k := halvings(n, keep)
		spent := 0
		for i := 0; i < k; i++ {
			r := roundReps(share-spent, k-i, n)
			if r < 1 {
				break
			}
			out = append(out, PlannedRound{Iteration: it, Candidates: n, Reps: r, Cells: (n + 1) * r})
			spent += (n + 1) * r
			n = max((n+1)/2, keep)
		}
		left -= spent
		carried = min(keep, n)
	}
	return out
}

// iteration is iteration it's share of the left cells (an equal share of what is left; the
// last takes all) and how many candidates it hands on (Elites; the last one 1).
func (sp *Spec) iteration(left, it int) (share, keep int) {
	iters := sp.Iterations()
	if it >= iters {
		return left, 1
	}
	return left / (iters - it + 1), Elites
}

// rng is the tune's random source: the candidates are drawn from it, so a seed gives a search.
func (sp *Spec) rng() *rand.Rand { return rand.New(rand.NewPCG(uint64(sp.Seed), 0x74756e65)) }

// FirstCandidates are the first iteration's candidates as Run draws them (for a dry run).
func (sp *Spec) FirstCandidates() []Setting {
	share, keep := sp.iteration(sp.Budget, 1)
	var out []Setting
	for _, p := range sp.Sample(sp.first(share, keep, 1), sp.rng(), map[string]bool{"none": true}) {
		out = append(out, p.s)
	}
	return out
}

// first is an iteration's candidate count: tune.candidates for the first iteration when set.
func (sp *Spec) first(share, keep, it int) int {
	if it == 1 && sp.Candidates > 0 {
		return sp.Candidates
	}
	return sizeFor(share, sp.limit(), keep)
}

type key struct{ round, rep int }

// cand is a candidate's record during the search.
type cand struct {
	s       Setting
	u       []float64
	iter    int // the iteration it was drawn in
	obj     map[key]float64
	met     map[key]map[string]float64
	reps    int
	last    int // last round run (1-based)
	fate    string
	est     estimate
	checks  []Check
	feasibl bool
}

// estimate is a candidate's change of the objective against the baseline on the log scale.
type estimate struct {
	mean, lo, hi float64 // lo, hi: NaN below 2 pairs
	n            int
}

type tuner struct {
	sp      *Spec
	opt     Options
	cands   []*cand
	baseObj map[key]float64
	baseMet map[key]map[string]float64
	res     *Result
}

// Run searches sp's space with ev within sp.Budget cells, then confirms the winner. The Result
// is filled as far as the tune got when an error (an interrupted run) ends it early.
func Run(ctx context.Context, sp *Spec, ev Evaluator, opt Options) (*Result, error) {
	t := &tuner{sp: sp, opt: opt, baseObj: map[key]float64{}, baseMet: map[key]map[string]float64{}}
	t.res = &Result{Schema: Schema, Objective: sp.Objective, ObjectiveUnit: sp.ObjectiveUnit, Constraints: sp.Constraints,
		Dims: sp.Dims, Budget: sp.Budget, Seed: sp.Seed, Paired: sp.Paired, ConfirmDesign: sp.Design.Describe()}
	t.res.Notes = append(t.res.Notes, BiasNote)
	t.res.Method = t.method()
	winner, err := t.search(ctx, ev, sp.rng())
	t.summarize()
	if err != nil {
		return t.res, err
	}
	if winner == nil {
		t.res.Recommendation = t.keep(t.noWinnerWhy())
		t.log("recommendation: keep the defaults: %s", t.res.Recommendation.Why)
		return t.res, nil
	}
	t.res.Winner = winner.s.Item
	if err := t.confirm(ctx, ev, winner); err != nil {
		return t.res, err
	}
	return t.res, nil
}

func (t *tuner) log(format string, args ...any) {
	if t.opt.Log != nil {
		t.opt.Log(format, args...)
	}
}

// search runs the iterations of successive halving and returns the best feasible candidate of
// the last round (nil: none met the constraints, or nothing could run).
func (t *tuner) search(ctx context.Context, ev Evaluator, rng *rand.Rand) (*cand, error) {
	left, iters := t.sp.Budget, t.sp.Iterations()
	seen := map[string]bool{"none": true}
	var elites []*cand
	var firstN int
	round := 0
	for it := 1; it <= iters; it++ {
		share, keep := t.sp.iteration(left, it)
		n := t.sp.first(share, keep, it)
		var pool []*cand
		if it == 1 {
			for _, p := range t.sp.Sample(n, rng, seen) {
				pool = append(pool, t.newCand(p, it))
			}
			firstN = max(len(pool), 1)
		} else {
			pool = append(pool, elites...)
			var us [][]float64
			for _, e := range elites {
				us = append(us, e.u)
			}
			// The step: a first-iteration stratum's width, halved in each later iteration.
			sigma := 1 / float64(firstN) / math.Pow(2, float64(it-2))
			for _, p := range t.sp.Around(us, n-len(pool), sigma, Flip, rng, seen) {
				pool = append(pool, t.newCand(p, it))
			}
		}
		if len(pool) == 0 {
			break
		}
		alive, spent, err := t.halve(ctx, ev, pool, share, keep, it, &round)
		left -= spent
		if err != nil {
			return nil, err
		}
		if len(alive) == 0 {
			break
		}
		elites = alive
	}
	if left > 0 {
		t.res.Spending = append(t.res.Spending, Spend{What: "search budget not spent (rounds share it in whole repetitions)", Cells: left})
	}
	if len(elites) == 0 {
		return nil, nil
	}
	t.rank(elites)
	best := elites[0]
	for _, c := range elites[1:] {
		c.fate = fmt.Sprintf("out after round %d: %s", round, t.why(c, 1, len(elites)))
	}
	if !best.feasibl {
		best.fate = "best of the last round, but " + strings.Join(violations(best.checks), "; ")
		return nil, nil
	}
	if best.est.n == 0 {
		best.fate = "best of the last round, but without a repetition compared with the baseline"
		return nil, nil
	}
	best.fate = "winner of the search"
	return best, nil
}

func (t *tuner) newCand(p point, it int) *cand {
	c := &cand{s: p.s, u: p.u, iter: it, obj: map[key]float64{}, met: map[key]map[string]float64{}}
	t.cands = append(t.cands, c)
	return c
}

// halve runs successive-halving rounds over pool within share cells until keep candidates are
// left, and returns them with the cells spent. round counts the search's rounds.
func (t *tuner) halve(ctx context.Context, ev Evaluator, pool []*cand, share, keep, it int, round *int) ([]*cand, int, error) {
	alive := append([]*cand(nil), pool...)
	k := halvings(len(alive), keep)
	spent := 0
	for i := 0; i < k; i++ {
		reps := roundReps(share-spent, k-i, len(alive))
		if reps < 1 {
			t.res.Notes = append(t.res.Notes, fmt.Sprintf("the budget ran out in iteration %d before its round %d", it, i+1))
			break
		}
		*round++
		settings := make([]Setting, len(alive))
		for j, c := range alive {
			settings[j] = c.s
		}
		cells := (len(alive) + 1) * reps
		t.log("search round %d (iteration %d): %d settings and the baseline, %d repetitions each (%d cells; %d of the budget of %d left before it)",
			*round, it, len(alive), reps, cells, t.sp.Budget-t.res.Spent, t.sp.Budget)
		obs, err := ev.Evaluate(ctx, settings, reps)
		spent += cells
		t.res.Spent += cells
		rd := Round{Index: *round, Iteration: it, Reps: reps, Cells: cells}
		for _, c := range alive {
			rd.Candidates = append(rd.Candidates, c.s.Item)
		}
		t.res.Spending = append(t.res.Spending, Spend{What: fmt.Sprintf("search round %d (iteration %d): %d settings x %d repetitions + the baseline x %d", *round, it, len(alive), reps, reps), Cells: cells})
		if err != nil {
			t.res.Rounds = append(t.res.Rounds, rd)
			return nil, spent, err
		}
		t.record(*round, alive, obs)
		t.rank(alive)
		next := max((len(alive)+1)/2, keep)
		if i == k-1 {
			next = min(keep, len(alive))
		}
		for j, c := range alive {
			c.last = *round
			if j >= next {
				c.fate = fmt.Sprintf("out after round %d: %s", *round, t.why(c, j, len(alive)))
			}
		}
		alive = alive[:next]
		for _, c := range alive {
			rd.Kept = append(rd.Kept, c.s.Item)
		}
		t.res.Rounds = append(t.res.Rounds, rd)
		t.log("  kept %s", strings.Join(rd.Kept, ", "))
	}
	return alive, spent, nil
}

// record files a round's observations under (round, rep).
func (t *tuner) record(round int, alive []*cand, obs []Observation) {
	for _, o := range obs {
		k := key{round, o.Rep}
		if o.Candidate == Baseline {
			t.baseObj[k], t.baseMet[k] = o.Objective, o.Metrics
			continue
		}
		if o.Candidate < 0 || o.Candidate >= len(alive) {
			continue
		}
		c := alive[o.Candidate]
		c.obj[k], c.met[k] = o.Objective, o.Metrics
	}
	for _, c := range alive {
		c.reps = len(c.obj)
	}
}

// rank orders alive best first: settings meeting every constraint first, then by the estimated
// change of the objective (lower first; no estimate last).
func (t *tuner) rank(alive []*cand) {
	for _, c := range alive {
		c.est = t.estimate(c)
		c.checks = t.checksOf(c.obj, c.met, t.baseMet, func(k key) bool { _, ok := c.obj[k]; return ok })
		c.feasibl = len(violations(c.checks)) == 0
	}
	sort.SliceStable(alive, func(i, j int) bool {
		a, b := alive[i], alive[j]
		if a.feasibl != b.feasibl {
			return a.feasibl
		}
		return lessNaNLast(a.est.mean, b.est.mean)
	})
}

func lessNaNLast(a, b float64) bool {
	switch {
	case math.IsNaN(a):
		return false
	case math.IsNaN(b):
		return true
	}
	return a < b
}

func (t *tuner) why(c *cand, rank, n int) string {
	if v := violations(c.checks); len(v) > 0 {
		return strings.Join(v, "; ")
	}
	return fmt.Sprintf("rank %d of %d (%s)", rank+1, n, pctText(c.est.mean))
}

// estimate is the mean of the per-round log ratios of c's objective to the baseline's (paired),
// or the difference of mean logs over the rounds c ran in (unpaired), with a 95% t interval
// from two pairs on. A repetition at +Inf (a failed claim) makes it +Inf: worst.
func (t *tuner) estimate(c *cand) estimate {
	e := estimate{mean: math.NaN(), lo: math.NaN(), hi: math.NaN()}
	keys := make([]key, 0, len(c.obj))
	for k := range c.obj {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].round < keys[j].round || (keys[i].round == keys[j].round && keys[i].rep < keys[j].rep)
	})
	var b, v []float64
	inf := false
	for _, k := range keys {
		x := c.obj[k]
		if math.IsNaN(x) || x <= 0 {
			continue
		}
		bx, ok := t.baseObj[k]
		if t.sp.Paired && (!ok || !finitePos(bx)) {
			continue // the round has no baseline to compare with
		}
		if math.IsInf(x, 1) {
			inf = true
		}
		v = append(v, x)
		if t.sp.Paired {
			b = append(b, bx)
		}
	}
	if !t.sp.Paired {
		rounds := map[int]bool{}
		for _, k := range keys {
			rounds[k.round] = true
		}
		for k, bx := range t.baseObj {
			if rounds[k.round] && finitePos(bx) {
				b = append(b, bx)
			}
		}
	}
	e.n = len(v)
	switch {
	case len(v) == 0 || len(b) == 0:
		e.n = 0
		return e
	case inf:
		e.mean = math.Inf(1)
		return e
	}
	var d, se, df float64
	var ok bool
	if t.sp.Paired {
		d, se, df, ok = stats.PairedLog(b, v)
	} else {
		d, se, df, ok = stats.WelchLog(b, v)
	}
	if !ok {
		e.mean = meanLog(v) - meanLog(b)
		return e
	}
	e.mean = d
	if half := tHalf(se, df); !math.IsNaN(half) {
		e.lo, e.hi = d-half, d+half
	}
	return e
}

func finitePos(x float64) bool { return x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }

func meanLog(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += math.Log(x)
	}
	return s / float64(len(xs))
}

// Check is one constraint judged on a set of repetitions.
type Check struct {
	Constraint string    `json:"constraint"`
	Value      stats.Num `json:"value"` // the median of the setting's repetitions
	Bound      stats.Num `json:"bound"` // the bound it was held to (the baseline's median times F when relative)
	Held       bool      `json:"held"`
	Note       string    `json:"note,omitempty"`
}

// checksOf judges every constraint on a setting's repetitions (obj's keys) against the
// baseline's repetitions of the same rounds: the median of the setting's values (a repetition
// without a value counts as the worst one: a refill that never finished did not finish within
// the bound) against the bound, or against F times the baseline's median (of the repetitions
// with a value). A median at the bound holds for <= and >=.
func (t *tuner) checksOf(obj map[key]float64, met, baseMet map[key]map[string]float64, in func(key) bool) []Check {
	var out []Check
	for _, con := range t.sp.Constraints {
		var vals, base []float64
		for k := range obj {
			x, ok := met[k][con.Metric]
			if !ok || math.IsNaN(x) {
				x = math.Inf(1)
				if con.Op == ">=" || con.Op == ">" {
					x = math.Inf(-1)
				}
			}
			vals = append(vals, x)
		}
		for k, m := range baseMet {
			if x, ok := m[con.Metric]; ok && !math.IsNaN(x) && in(k) {
				base = append(base, x)
			}
		}
		out = append(out, judge(con, vals, base))
	}
	return out
}

func judge(con Constraint, vals, base []float64) Check {
	ch := Check{Constraint: con.Text, Value: stats.Num(median(vals)), Bound: stats.Num(con.Bound)}
	if con.Relative {
		if len(base) == 0 {
			ch.Bound, ch.Note = stats.Num(math.NaN()), "the baseline has no value in these rounds"
			return ch
		}
		ch.Bound = stats.Num(con.Factor * median(base))
	}
	v, b := float64(ch.Value), float64(ch.Bound)
	switch con.Op {
	case "<=":
		ch.Held = v <= b
	case "<":
		ch.Held = v < b
	case ">=":
		ch.Held = v >= b
	case ">":
		ch.Held = v > b
	}
	return ch
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	if math.IsInf(s[n/2-1], 0) || math.IsInf(s[n/2], 0) {
		return s[n/2-1]/2 + s[n/2]/2
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// violations are the checks that did not hold, in words.
func violations(cs []Check) []string {
	var out []string
	for _, c := range cs {
		if !c.Held {
			s := fmt.Sprintf("violates %s (%s against %s)", c.Constraint, numText(float64(c.Value)), numText(float64(c.Bound)))
			if c.Note != "" {
				s = fmt.Sprintf("cannot judge %s: %s", c.Constraint, c.Note)
			}
			out = append(out, s)
		}
	}
	return out
}

func numText(x float64) string {
	switch {
	case math.IsNaN(x):
		return "no value"
	case math.IsInf(x, 1):
		return "none in time"
	}
	return fmt.Sprintf("%.4g", x)
}

// pctText writes a log-scale change as a percentage.
func pctText(d float64) string {
	switch {
	case math.IsNaN(d):
		return "no estimate"
	case math.IsInf(d, 1):
		return "failed claims"
	}
	return fmt.Sprintf("%+.1f%%", (math.Exp(d)-1)*100)
}

func pct(d float64) stats.Num {
	if math.IsNaN(d) {
		return stats.Num(math.NaN())
	}
	return stats.Num((math.Exp(d) - 1) * 100)
}

// confirm runs the winner against the baseline on fresh repetitions and judges it.
func (t *tuner) confirm(ctx context.Context, ev Evaluator, w *cand) error {
	d := t.sp.Design
	cf := &Confirmation{Item: w.s.Item, Design: d.Describe()}
	t.res.Confirmation = cf
	t.log("confirmation: %s against no brake on fresh repetitions (%s)", w.s.Item, d.Describe())
	var obs []Observation
	var err error
	if c, ok := ev.(Confirmer); ok {
		obs, err = c.Confirm(ctx, w.s, d)
	} else {
		obs, err = t.confirmByRounds(ctx, ev, w.s, d)
	}
	base, treat := map[int]Observation{}, map[int]Observation{}
	for _, o := range obs {
		if o.Candidate == Baseline {
			base[o.Rep] = o
		} else if o.Candidate == 0 {
			treat[o.Rep] = o
		}
	}
	cf.RepsWinner, cf.RepsBaseline = len(treat), len(base)
	cells := len(treat) + len(base)
	t.res.ConfirmCells = cells
	t.res.Spending = append(t.res.Spending, Spend{What: fmt.Sprintf("confirmation: %s x %d + the baseline x %d, fresh repetitions (planned at most %d a side)", w.s.Item, len(treat), len(base), d.MaxReps), Cells: cells})
	if err != nil {
		cf.Verdict = "interrupted"
		return err
	}
	sr := d.Compare(history(base, treat), true, t.opt.WithP)
	cf.Verdict, cf.Note, cf.P, cf.MDEPct = sr.Verdict, sr.Note, stats.Num(sr.P), stats.Num(sr.MDEPct)
	cf.Pct, cf.CI = stats.Num(math.NaN()), stats.CI{Lo: stats.Num(math.NaN()), Hi: stats.Num(math.NaN())}
	if sr.At >= 0 {
		l := sr.Looks[sr.At]
		cf.Pct, cf.CI, cf.Look = stats.Num(l.Pct), l.CI, min(l.NBase, l.NTreat)
	}
	tObj, tMet := map[key]float64{}, map[key]map[string]float64{}
	bMet := map[key]map[string]float64{}
	for r, o := range treat {
		tObj[key{0, r}], tMet[key{0, r}] = o.Objective, o.Metrics
	}
	for r, o := range base {
		bMet[key{0, r}] = o.Metrics
	}
	cf.Checks = t.checksOf(tObj, tMet, bMet, func(key) bool { return true })
	v := violations(cf.Checks)
	switch {
	case sr.Verdict == "faster" && len(v) == 0:
		flags, ferr := t.sp.Flags(w.s)
		if ferr != nil {
			return ferr
		}
		t.res.Recommendation = Recommendation{Recommend: true, Item: w.s.Item, Values: w.s.Values, Flags: flags, Snippet: Snippet(flags),
			Why: fmt.Sprintf("the confirmation on fresh repetitions found %s %s than no brake: %s %s [%s, %s] (%s), and every constraint held there",
				w.s.Item, sr.Verdict, t.sp.Objective, pctText(math.Log1p(float64(cf.Pct)/100)), ciText(cf.CI.Lo), ciText(cf.CI.Hi), pText(cf.P))}
	case sr.Verdict == "faster":
		t.res.Recommendation = t.keep(fmt.Sprintf("%s was faster on the confirmation's repetitions but %s there", w.s.Item, strings.Join(v, "; ")))
	default:
		why := fmt.Sprintf("the confirmation on fresh repetitions did not find %s faster than no brake: %s, %s %s [%s, %s] at %d repetitions a side",
			w.s.Item, verdictWords(sr.Verdict), t.sp.Objective, pctText(math.Log1p(float64(cf.Pct)/100)), ciText(cf.CI.Lo), ciText(cf.CI.Hi), cf.Look)
		if sr.Note != "" {
			why += " (" + sr.Note + ")"
		}
		if len(v) > 0 {
			why += "; and it " + strings.Join(v, "; ")
		}
		t.res.Recommendation = t.keep(why)
	}
	t.log("confirmation verdict: %s; %s", cf.Verdict, t.res.Recommendation.Why)
	return nil
}

func verdictWords(v string) string {
	switch v {
	case "~":
		return "no settled difference"
	case "equivalent":
		return "no change larger than the equivalence margin"
	}
	return v
}

func ciText(x stats.Num) string {
	if math.IsNaN(float64(x)) {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", float64(x))
}

func pText(p stats.Num) string {
	if math.IsNaN(float64(p)) {
		return "repeated p not computed"
	}
	return fmt.Sprintf("repeated p=%.2g", float64(p))
}

// confirmByRounds runs the confirmation one round at a time through Evaluate, looking after
// each round as the runner's sequential design does, up to the design's planned maximum.
func (t *tuner) confirmByRounds(ctx context.Context, ev Evaluator, w Setting, d *stats.Sequential) ([]Observation, error) {
	if d.Fixed {
		return ev.Evaluate(ctx, []Setting{w}, d.MaxReps)
	}
	var all []Observation
	base, treat := map[int]Observation{}, map[int]Observation{}
	for r := 1; r <= d.MaxReps; r++ {
		obs, err := ev.Evaluate(ctx, []Setting{w}, 1)
		for _, o := range obs {
			o.Rep = r
			all = append(all, o)
			if o.Candidate == Baseline {
				base[r] = o
			} else if o.Candidate == 0 {
				treat[r] = o
			}
		}
		if err != nil {
			return all, err
		}
		if d.Compare(history(base, treat), r >= d.MaxReps, false).Settled {
			break
		}
	}
	return all, nil
}

// history is a comparison's looks as the design's Compare reads them: after round r, the
// per-repetition values of both sides aligned by repetition (NaN where one has none).
func history(base, treat map[int]Observation) [][2][]float64 {
	last := 0
	for r := range base {
		last = max(last, r)
	}
	for r := range treat {
		last = max(last, r)
	}
	val := func(m map[int]Observation, r int) float64 {
		if o, ok := m[r]; ok {
			return o.Objective
		}
		return math.NaN()
	}
	var b, tr []float64
	var out [][2][]float64
	for r := 1; r <= last; r++ {
		b, tr = append(b, val(base, r)), append(tr, val(treat, r))
		out = append(out, [2][]float64{append([]float64(nil), b...), append([]float64(nil), tr...)})
	}
	return out
}

// tHalf is the half-width of a 95% t interval at standard error se with df degrees of freedom.
func tHalf(se, df float64) float64 {
	if df < 1 || math.IsNaN(se) {
		return math.NaN()
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.975) * se
}

func (t *tuner) keep(why string) Recommendation {
	return Recommendation{Why: why, Snippet: Snippet(nil)}
}

func (t *tuner) noWinnerWhy() string {
	switch {
	case len(t.cands) == 0:
		return "the space holds no setting besides none"
	case t.res.Spent == 0:
		return "the budget does not hold one repetition of a setting and the baseline"
	}
	for _, c := range t.cands {
		if c.fate != "" && strings.HasPrefix(c.fate, "best of the last round, but") {
			return "no setting was confirmed: the search's best " + strings.TrimPrefix(c.fate, "best of the last round, but ")
		}
	}
	return "the search ended without a setting to confirm"
}

// summarize fills the result's table of every tried setting.
func (t *tuner) summarize() {
	t.res.Candidates = nil
	for _, c := range t.cands {
		if c.reps > 0 && c.est.n == 0 && math.IsNaN(c.est.mean) {
			c.est = t.estimate(c)
		}
		t.res.Candidates = append(t.res.Candidates, Candidate{Item: c.s.Item, Values: c.s.Values, Reps: c.reps, Iteration: c.iter, Rounds: c.last,
			Pct: pct(c.est.mean), CI: stats.CI{Lo: pct(c.est.lo), Hi: pct(c.est.hi)}, Compared: c.est.n, Checks: c.checks, Feasible: c.feasibl, Fate: c.fate})
	}
}
