package ceiling

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// simCell runs one simulated ceiling cell: reps searches against a planted knee k. Repetition r
// has its own knee k x exp(o_r), o_r ~ N(0, sdRep) (the cluster's state that run), and each
// probe passes iff its rate < k x exp(o_r + e), e ~ N(0, sdProbe) per probe (probe-to-probe
// noise). k is the typical (geometric mean, median) knee over repetitions, the one to find.
func simCell(rng *rand.Rand, c Config, k float64, reps int, sdRep, sdProbe float64) []Result {
	out := make([]Result, reps)
	for r := range out {
		o := rng.NormFloat64() * sdRep
		s, err := New(c)
		if err != nil {
			panic(err)
		}
		for {
			rate, done := s.Next()
			if done {
				break
			}
			s.Record(rate, rate < k*math.Exp(o+rng.NormFloat64()*sdProbe), "")
		}
		out[r] = s.Result()
	}
	return out
}

// tInterval is the two-sided t interval at confidence of the geometric mean of xs.
func tInterval(xs []float64, confidence float64) (lo, hi float64) {
	n := float64(len(xs))
	m, v := 0.0, 0.0
	for _, x := range xs {
		m += math.Log(x)
	}
	m /= n
	for _, x := range xs {
		v += (math.Log(x) - m) * (math.Log(x) - m)
	}
	h := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(1-(1-confidence)/2) * math.Sqrt(v/(n-1)/n)
	return math.Exp(m - h), math.Exp(m + h)
}

// The "Done when": the search finds a planted knee within its stated tolerance and the
// interval contains it in >= 90% of simulated runs. Each scenario is 1000 simulated cells of R
// repetitions (fixed seeds); the knee k is drawn log-uniformly in [20, 200] claims/s per cell,
// so it falls anywhere against the search's grid (Start 5, Factor 2, Tolerance 15%).
//
// "Within tolerance": Ceiling in [k/(1+tol)^2, k x (1+tol)]. Without noise every repetition's
// Pass lies in [k/(1+tol), k) (TestSearchBracketsEveryKnee), so the geometric mean of Pass does
// too; the noise (a repetition's own knee and probe-to-probe noise, 5-10% on the log scale, as
// the lab's spread of claim p50 between repetitions, 5-12%) moves it by up to one more
// tolerance step either way. That holds while the tolerance is not finer than the noise: with
// a 5% tolerance under 10% noise the point lands within it in only ~70% of cells (printed, not
// asserted: a finer bisection does not beat the noise; more repetitions do), while the interval
// still covers.
//
// Negative controls on the same cells, each asserted to cover the knee in fewer than 85% of
// runs in a scenario: the naive interval (a t interval of Pass alone, ignoring that the knee is
// above Pass somewhere in the bracket) fails when repetitions agree (low noise: they share a
// bracket, the interval shrinks onto Pass); the mean bracket [geomean Pass, geomean Fail]
// (ignoring the spread between repetitions) fails when they do not (noisy); a t interval of the
// bracket midpoints fails in both.
func TestAggregateFindsPlantedKnee(t *testing.T) {
	c := Config{Start: 5, Factor: 2, Max: 1000, Tolerance: 0.15, MaxProbes: 20}
	const sims, confidence = 1000, 0.95
	tests := []struct {
		name            string
		reps            int
		sdRep, sdProbe  float64
		naiveFails      bool // the naive Pass interval must cover < 85% here
		meanBracketFail bool // the mean bracket must cover < 85% here
		cfg             *Config
		// pointLoose: the tolerance is finer than the noise, so the point estimate is not
		// claimed within it (only reported); the interval's coverage still is.
		pointLoose bool
	}{
		{"quiet: repetition 5%, probe 5%, R=3", 3, 0.05, 0.05, false, false, nil, false},
		{"noisy: repetition 10%, probe 10%, R=3", 3, 0.10, 0.10, false, true, nil, false},
		{"noisy: repetition 10%, probe 10%, R=5", 5, 0.10, 0.10, false, true, nil, false},
		{"repetition 10%, no probe noise, R=4", 4, 0.10, 0, false, true, nil, false},
		{"probe noise only 8%, R=3", 3, 0, 0.08, false, false, nil, false},
		{"almost none: repetition 1%, R=3", 3, 0.01, 0, true, false, nil, false},
		{"almost none: repetition 1%, R=5", 5, 0.01, 0, true, false, nil, false},
		{"tolerance 5% under noise 10%/10%, factor 3, R=3", 3, 0.10, 0.10, false, true, &Config{Start: 5, Factor: 3, Max: 1000, Tolerance: 0.05, MaxProbes: 20}, true},
		{"tolerance 30%, factor 1.5, quiet 5%/5%, R=3", 3, 0.05, 0.05, true, false, &Config{Start: 5, Factor: 1.5, Max: 1000, Tolerance: 0.30, MaxProbes: 20}, false},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := c
			if tc.cfg != nil {
				c = *tc.cfg
			}
			rng := rand.New(rand.NewPCG(2024, uint64(i)))
			within, covered, below, naive, meanBr, mid, probes := 0, 0, 0, 0, 0, 0, 0
			var widths []float64
			for s := 0; s < sims; s++ {
				k := 20 * math.Exp(rng.Float64()*math.Log(10))
				res := simCell(rng, c, k, tc.reps, tc.sdRep, tc.sdProbe)
				e := Aggregate(res, confidence)
				if e.Insufficient || e.AtLeast || e.Below || e.N != tc.reps {
					t.Fatalf("knee %v: %s", k, e.Text)
				}
				tol := 1 + c.Tolerance
				if e.Ceiling >= k/(tol*tol) && e.Ceiling <= k*tol {
					within++
				}
				if e.Ceiling <= k {
					below++
				}
				if e.Lo <= k && k <= e.Hi {
					covered++
				}
				widths = append(widths, e.Hi/e.Lo)
				var passes, fails, mids []float64
				for _, r := range res {
					passes, fails = append(passes, r.Pass), append(fails, r.Fail)
					mids = append(mids, math.Sqrt(r.Pass*r.Fail))
					probes += len(r.Probes)
				}
				if lo, hi := tInterval(passes, confidence); lo <= k && k <= hi {
					naive++
				}
				if geoMean(passes) <= k && k <= geoMean(fails) {
					meanBr++
				}
				if lo, hi := tInterval(mids, confidence); lo <= k && k <= hi {
					mid++
				}
			}
			sort.Float64s(widths)
			rate := func(n int) float64 { return float64(n) / sims }
			t.Logf("%s: point within [K/%.2f^2, K x %.2f] %.3f (at or below K %.3f); interval covers K %.3f (median Hi/Lo %.2f); naive Pass t-interval %.3f, mean bracket %.3f, midpoint t-interval %.3f; %.1f probes a search",
				tc.name, 1+c.Tolerance, 1+c.Tolerance, rate(within), rate(below), rate(covered), widths[sims/2], rate(naive), rate(meanBr), rate(mid), float64(probes)/sims/float64(tc.reps))
			if !tc.pointLoose && rate(within) < 0.9 {
				t.Errorf("point estimate within tolerance in %.3f of runs, want >= 0.9", rate(within))
			}
			if rate(covered) < 0.9 {
				t.Errorf("interval covers the knee in %.3f of runs, want >= 0.9", rate(covered))
			}
			if tc.naiveFails && rate(naive) >= 0.85 {
				t.Errorf("negative control: the naive Pass interval covers in %.3f; this scenario must show it below 0.85", rate(naive))
			}
			if tc.meanBracketFail && rate(meanBr) >= 0.85 {
				t.Errorf("negative control: the mean bracket covers in %.3f; this scenario must show it below 0.85", rate(meanBr))
			}
		})
	}
}

func TestAggregate(t *testing.T) {
	res := func(pass, fail float64, end End) Result {
		return Result{Pass: pass, Fail: fail, End: end, Probes: []Probe{{Rate: 5, OK: pass > 0}}}
	}
	inf := math.Inf(1)
	tests := []struct {
		name                     string
		in                       []Result
		ceiling, lo, hi          float64 // NaN: must be NaN; -1: only checked finite and ordered
		atLeast, below, insuffic bool
		text                     []string
	}{
		{"identical brackets: the bracket itself", []Result{res(80, 92, EndTolerance), res(80, 92, EndTolerance), res(80, 92, EndTolerance)},
			80, 80, 92, false, false, false, []string{"ceiling 80 claims/s (geometric mean of 3 repetitions' highest passing rate); the knee lies in [80, 92] claims/s (95%)", "[80, 92] [80, 92] [80, 92]"}},
		{"spread brackets", []Result{res(80, 92, EndTolerance), res(70, 80, EndTolerance), res(92, 106, EndTolerance)},
			math.Cbrt(80 * 70 * 92), -1, -1, false, false, false, []string{"the knee lies in"}},
		{"every repetition met Max", []Result{res(500, inf, EndMax), res(500, inf, EndMax)},
			500, 500, inf, true, false, false, []string{"at least 500 claims/s (lower bound, 95%)", "no repetition (2) broke the criterion", "raise the maximum"}},
		{"one repetition met Max", []Result{res(500, inf, EndMax)},
			500, 500, inf, true, false, false, []string{"at least 500 claims/s (one repetition's lower bound)"}},
		{"every repetition broke at Start", []Result{res(0, 5, EndStart), res(0, 5, EndStart), res(0, 5, EndStart)},
			0, 0, 5, false, true, false, []string{"below 5 claims/s", "every repetition (3) broke the criterion at the first rate offered", "lower the start rate"}},
		{"one broke at Start", []Result{res(0, 5, EndStart)}, 0, 0, 5, false, true, false, []string{"below 5 claims/s (one repetition's upper bound)"}},
		{"one finite bracket: insufficient", []Result{res(80, 92, EndTolerance)},
			80, math.NaN(), math.NaN(), false, false, true, []string{"insufficient repetitions: 1 of 1 with a finite bracket", "[80, 92]"}},
		{"one finite and one at Max: insufficient, open above", []Result{res(80, 92, EndTolerance), res(500, inf, EndMax)},
			200, -1, inf, true, false, true, []string{"insufficient repetitions: 1 of 2"}},
		{"two finite and one at Max: open above", []Result{res(80, 92, EndTolerance), res(80, 92, EndTolerance), res(500, inf, EndMax)},
			math.Cbrt(80 * 80 * 500), -1, inf, true, false, false, []string{"the knee lies in", ", +Inf] claims/s", "open above: 1 of 3 repetitions never broke the criterion"}},
		{"two finite and one broke at Start: open below", []Result{res(80, 92, EndTolerance), res(80, 92, EndTolerance), res(0, 5, EndStart)},
			0, 0, -1, false, true, false, []string{"[0, ", "open below: 1 of 3 repetitions broke it at the first rate offered"}},
		{"unprobed repetitions are skipped", []Result{{}, {}},
			math.NaN(), math.NaN(), math.NaN(), false, false, true, []string{"insufficient repetitions: none probed"}},
	}
	same := func(got, want float64) bool {
		switch {
		case math.IsNaN(want):
			return math.IsNaN(got)
		case want == -1:
			return !math.IsNaN(got) && got > 0
		case math.IsInf(want, 1):
			return math.IsInf(got, 1)
		}
		return math.Abs(got-want) <= 1e-9*math.Max(1, want)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := Aggregate(tc.in, 0.95)
			if !same(e.Ceiling, tc.ceiling) || !same(e.Lo, tc.lo) || !same(e.Hi, tc.hi) {
				t.Errorf("ceiling %v [%v, %v], want %v [%v, %v]", e.Ceiling, e.Lo, e.Hi, tc.ceiling, tc.lo, tc.hi)
			}
			if !math.IsNaN(e.Lo) && !math.IsNaN(e.Hi) && (e.Lo > e.Ceiling || e.Ceiling > e.Hi) {
				t.Errorf("ceiling %v outside [%v, %v]", e.Ceiling, e.Lo, e.Hi)
			}
			if e.AtLeast != tc.atLeast || e.Below != tc.below || e.Insufficient != tc.insuffic {
				t.Errorf("atLeast %v below %v insufficient %v, want %v %v %v", e.AtLeast, e.Below, e.Insufficient, tc.atLeast, tc.below, tc.insuffic)
			}
			for _, w := range tc.text {
				if !strings.Contains(e.Text, w) {
					t.Errorf("text %q does not say %q", e.Text, w)
				}
			}
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			var back Estimate
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if !same(back.Ceiling, e.Ceiling) && !(math.IsNaN(e.Ceiling) && math.IsNaN(back.Ceiling)) || back.Text != e.Text || back.AtLeast != e.AtLeast || back.N != e.N {
				t.Errorf("JSON round trip %s -> %+v", b, back)
			}
			if (math.IsInf(e.Hi, 1) != math.IsInf(back.Hi, 1)) || (math.IsNaN(e.Lo) != math.IsNaN(back.Lo)) {
				t.Errorf("JSON round trip lost Inf/NaN: %s", b)
			}
		})
	}
	// The interval widens with the spread and with fewer repetitions.
	spread := []Result{res(80, 92, EndTolerance), res(70, 80, EndTolerance), res(92, 106, EndTolerance)}
	e3 := Aggregate(spread, 0.95)
	e6 := Aggregate(append(spread, spread...), 0.95)
	e99 := Aggregate(spread, 0.99)
	if !(e6.Lo > e3.Lo && e6.Hi < e3.Hi && e99.Lo < e3.Lo && e99.Hi > e3.Hi) {
		t.Errorf("3 reps [%v, %v], 6 reps [%v, %v], 99%% [%v, %v]", e3.Lo, e3.Hi, e6.Lo, e6.Hi, e99.Lo, e99.Hi)
	}
	if Aggregate(spread, 7).Confidence != 0.95 {
		t.Errorf("confidence 7 not taken as 0.95")
	}
}

func TestResultJSON(t *testing.T) {
	s, _ := New(Config{Start: 5, Factor: 2, Max: 20, Tolerance: 0.1, MaxProbes: 9})
	for {
		rate, done := s.Next()
		if done {
			break
		}
		s.Record(rate, true, "met")
	}
	r := s.Result()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"fail":"+Inf"`) {
		t.Errorf("JSON %s lacks fail +Inf", b)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Pass != 20 || !math.IsInf(back.Fail, 1) || len(back.Probes) != 3 || back.End != EndMax || back.Stop != r.Stop {
		t.Errorf("round trip %+v", back)
	}
}
