package tune

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/stats"
)

// Values are rounded to two significant digits within the range, in the brake's own notation.
func TestFormat(t *testing.T) {
	sp := loadSpec(t, "tune.brakes=max-refill-rate,replenish-delay,max-batch-size")
	rate, delay, batch := sp.Dims[0], sp.Dims[1], sp.Dims[2]
	cases := []struct {
		d    Dim
		x    float64
		want string
	}{
		{rate, 23.456, "23"}, {rate, 156, "160"}, {rate, 1.234, "1.2"}, {rate, 0.3, "1"}, {rate, 260, "200"},
		{delay, 4.66, "4.7s"}, {delay, 0.555, "560ms"}, {delay, 61, "1m0s"}, {delay, 0.1, "500ms"},
		{batch, 137, "140"}, {batch, 9.2, "10"},
	}
	for _, tc := range cases {
		if got := tc.d.format(tc.x); got != tc.want {
			t.Errorf("%s %g: %q, want %q", tc.d.Brake, tc.x, got, tc.want)
		}
	}
	s := sp.setting(map[string]string{"max-refill-rate": "20", "replenish-delay": "5s"})
	if s.Item != "max-refill-rate=20+replenish-delay=5s" {
		t.Errorf("item %q", s.Item)
	}
	sw := loadSpec(t, "tune.brakes=disable-claim-events,max-refill-rate")
	if got := sw.Item(Setting{Values: map[string]string{"disable-claim-events": "on", "max-refill-rate": "3"}}); got != "disable-claim-events+max-refill-rate=3" {
		t.Errorf("switch on: %q", got)
	}
	if got := sw.Item(Setting{Values: map[string]string{"disable-claim-events": "off"}}); got != "none" {
		t.Errorf("all off: %q", got)
	}
}

// Latin hypercube candidates: seeded, distinct, never the baseline; every stratum of each
// dimension holds one; a space of switches gives no more settings than it has.
func TestSample(t *testing.T) {
	sp := loadSpec(t, "tune.brakes=max-refill-rate,replenish-delay")
	a := sp.Sample(10, rand.New(rand.NewPCG(3, 4)), map[string]bool{"none": true})
	b := sp.Sample(10, rand.New(rand.NewPCG(3, 4)), map[string]bool{"none": true})
	if len(a) != 10 || !reflect.DeepEqual(a, b) {
		t.Fatalf("not seeded: %d %d", len(a), len(b))
	}
	strata := map[int]bool{}
	items := map[string]bool{}
	for _, p := range a {
		strata[int(p.u[0]*10)] = true
		if items[p.s.Item] || p.s.Item == "none" {
			t.Errorf("duplicate or baseline %q", p.s.Item)
		}
		items[p.s.Item] = true
		if _, err := sp.Flags(p.s); err != nil {
			t.Errorf("%s: %v", p.s.Item, err)
		}
	}
	if len(strata) != 10 {
		t.Errorf("strata of max-refill-rate %v", strata)
	}
	sw := loadSpec(t, "tune.brakes=disable-claim-events,separate-watch-connection")
	got := sw.Sample(sw.FirstRoundForTest(), rand.New(rand.NewPCG(1, 1)), map[string]bool{"none": true})
	if len(got) > 3 || len(got) == 0 {
		t.Errorf("two switches hold 3 settings besides none, got %d", len(got))
	}
	near := sp.Around([][]float64{{0.5, 0.5}}, 5, 0.05, 0, rand.New(rand.NewPCG(1, 2)), map[string]bool{"none": true})
	for _, p := range near {
		if math.Abs(p.u[0]-0.5) > 0.3 || p.u[0] < 0 || p.u[0] > 1 {
			t.Errorf("around 0.5: %v", p.u)
		}
	}
}

// FirstRoundForTest is the first iteration's candidate count.
func (sp *Spec) FirstRoundForTest() int {
	sh := sp.Schedule()
	if len(sh) == 0 {
		return 0
	}
	return sh[0].Candidates
}

// A dry run's first settings are the ones the tune runs first.
func TestFirstCandidatesAreRunFirst(t *testing.T) {
	sp := loadSpec(t, "tune.seed=9")
	ev := &simEval{w: world{effect: func(map[string]float64) float64 { return 0 }}, sp: sp, rng: rand.New(rand.NewPCG(1, 2))}
	res, err := Run(context.Background(), sp, ev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range sp.FirstCandidates() {
		want = append(want, s.Item)
	}
	if !slices.Equal(res.Rounds[0].Candidates, want) || len(want) != sp.Schedule()[0].Candidates {
		t.Errorf("first round %v, dry run %v", res.Rounds[0].Candidates, want)
	}
}

// The schedule never plans more than the budget, and a tiny budget still runs one round.
func TestScheduleWithinBudget(t *testing.T) {
	for _, brakes := range []string{"max-refill-rate", "max-refill-rate,replenish-delay", "disable-claim-events", "max-refill-rate,replenish-delay,kube-api-qps"} {
		for _, b := range []int{2, 3, 6, 12, 24, 40, 60, 100, 333} {
			sp := loadSpec(t, "tune.brakes="+brakes, "tune.budget="+itoa(b))
			sum := 0
			for _, r := range sp.Schedule() {
				sum += r.Cells
				if r.Cells != (r.Candidates+1)*r.Reps || r.Reps < 1 {
					t.Errorf("%s %d: round %+v", brakes, b, r)
				}
			}
			if sum > b || sum == 0 {
				t.Errorf("%s budget %d: schedule %v plans %d cells", brakes, b, sp.Schedule(), sum)
			}
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// A repetition with a failed claim (+Inf) ranks its setting last; a round whose baseline failed
// compares nothing; constraints judge the median, a missing value counting as the worst.
func TestEstimateAndChecks(t *testing.T) {
	sp := loadSpec(t, "tune.brakes=max-refill-rate", "tune.constraints=pool.refill_s<=60,cpu.kube-apiserver_s<=1.1*baseline")
	tu := &tuner{sp: sp, baseObj: map[key]float64{{1, 1}: 1000, {1, 2}: 1000, {1, 3}: math.Inf(1)}, baseMet: map[key]map[string]float64{
		{1, 1}: {"cpu.kube-apiserver_s": 10}, {1, 2}: {"cpu.kube-apiserver_s": 12}, {1, 3}: {"cpu.kube-apiserver_s": 11}}}
	good := &cand{obj: map[key]float64{{1, 1}: 800, {1, 2}: 900, {1, 3}: 500}, met: map[key]map[string]float64{
		{1, 1}: {"pool.refill_s": 30, "cpu.kube-apiserver_s": 11}, {1, 2}: {"pool.refill_s": 50, "cpu.kube-apiserver_s": 12}, {1, 3}: {"pool.refill_s": 70, "cpu.kube-apiserver_s": 12}}}
	failed := &cand{obj: map[key]float64{{1, 1}: 700, {1, 2}: math.Inf(1)}, met: map[key]map[string]float64{{1, 1}: {}, {1, 2}: {}}}
	e := tu.estimate(good)
	if e.n != 2 || math.Abs(e.mean-(math.Log(0.8)+math.Log(0.9))/2) > 1e-12 || math.IsNaN(e.lo) {
		t.Errorf("good: %+v (the round with a failed baseline must drop out)", e)
	}
	if e := tu.estimate(failed); !math.IsInf(e.mean, 1) {
		t.Errorf("failed claim: %+v", e)
	}
	alive := []*cand{failed, good}
	tu.rank(alive)
	if alive[0] != good {
		t.Errorf("a setting with failed claims ranked first")
	}
	if !good.feasibl || good.checks[0].Value != 50 || math.Abs(float64(good.checks[1].Bound)-12.1) > 1e-9 {
		t.Errorf("good checks %+v", good.checks)
	}
	if failed.feasibl || !strings.Contains(strings.Join(violations(failed.checks), ";"), "violates pool.refill_s <= 60 (none in time against 60)") {
		t.Errorf("failed checks %v", violations(failed.checks))
	}
}

// failingEval fails on its second call (an interrupted run): the result so far comes back with
// the error, and nothing is recommended.
type failingEval struct{ simEval }

func (f *failingEval) Evaluate(ctx context.Context, c []Setting, reps int) ([]Observation, error) {
	if f.calls >= 1 {
		f.calls++
		return nil, errors.New("interrupted")
	}
	return f.simEval.Evaluate(ctx, c, reps)
}

func TestInterrupted(t *testing.T) {
	sp := loadSpec(t, "tune.brakes=max-refill-rate", "tune.budget=40", "tune.seed=3")
	ev := &failingEval{simEval{w: world{effect: func(map[string]float64) float64 { return -0.2 }}, sp: sp, rng: rand.New(rand.NewPCG(1, 2))}}
	res, err := Run(context.Background(), sp, ev, Options{})
	if err == nil || res == nil || res.Recommendation.Recommend || len(res.Rounds) != 2 || res.Spent != res.Rounds[0].Cells+res.Rounds[1].Cells {
		t.Fatalf("err %v result %+v", err, res)
	}
}

// confirmer runs the confirmation itself and lies about nothing: the tune recomputes the verdict
// from its observations with the design it handed over.
type confirmer struct {
	simEval
	design *stats.Sequential
	winner Setting
	effect float64
}

func (c *confirmer) Confirm(_ context.Context, w Setting, d *stats.Sequential) ([]Observation, error) {
	c.design, c.winner = d, w
	var out []Observation
	for r := 1; r <= d.MaxReps; r++ {
		c.cells += 2
		out = append(out, Observation{Candidate: Baseline, Rep: r, Objective: 1000 * math.Exp(0.05*c.rng.NormFloat64())},
			Observation{Candidate: 0, Rep: r, Objective: 1000 * math.Exp(c.effect+0.05*c.rng.NormFloat64())})
	}
	return out, nil
}

func TestConfirmer(t *testing.T) {
	for _, tc := range []struct {
		effect  float64
		verdict string
		rec     bool
	}{{-0.3, "faster", true}, {0.3, "slower", false}} {
		sp := loadSpec(t, "tune.brakes=max-refill-rate", "tune.budget=12", "tune.seed=5", "tune.confirmRepetitions=4", "matrix.sequential=false")
		ev := &confirmer{simEval: simEval{w: world{effect: func(map[string]float64) float64 { return -0.3 }, repSD: 0.01}, sp: sp, rng: rand.New(rand.NewPCG(1, 2))}, effect: tc.effect}
		res, err := Run(context.Background(), sp, ev, Options{WithP: true})
		if err != nil {
			t.Fatal(err)
		}
		if ev.design != sp.Design || ev.winner.Item != res.Winner || ev.calls != len(res.Rounds) {
			t.Fatalf("confirm got design %p (want %p), winner %s (%s), %d search calls for %d rounds", ev.design, sp.Design, ev.winner.Item, res.Winner, ev.calls, len(res.Rounds))
		}
		cf := res.Confirmation
		if cf.Verdict != tc.verdict || res.Recommendation.Recommend != tc.rec || cf.RepsWinner != 4 || res.ConfirmCells != 8 || math.IsNaN(float64(cf.P)) {
			t.Errorf("effect %g: confirmation %+v, recommendation %+v", tc.effect, cf, res.Recommendation)
		}
		if tc.rec {
			r := res.Recommendation
			if !slices.Equal(r.Flags, []string{"--sandbox-warm-pool-max-refill-rate=" + r.Values["max-refill-rate"]}) ||
				r.Snippet != "# agent-sandbox controller container, add to args:\n- "+r.Flags[0]+"\n" {
				t.Errorf("recommendation %+v", r)
			}
		}
		raw, err := json.Marshal(res)
		if err != nil || !strings.Contains(string(raw), `"recommendation":{`) || !strings.Contains(string(raw), BiasNote[:40]) {
			t.Errorf("tune.json: %v %s", err, raw)
		}
	}
}
