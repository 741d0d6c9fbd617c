package stats

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// roundDraws draws maxReps rounds of one comparison: each round's effect (sd roundSD on the log
// scale) is shared by the baseline's and the cell's repetition of that round, each repetition
// adds its own noise (sd repSD), and the cell's values are shifted by the factor 1+effect.
func roundDraws(rng *rand.Rand, maxReps int, roundSD, repSD, effect float64) [][2]float64 {
	out := make([][2]float64, maxReps)
	for r := range out {
		shared := rng.NormFloat64() * roundSD
		out[r] = [2]float64{
			math.Exp(shared + rng.NormFloat64()*repSD),
			math.Exp(math.Log1p(effect) + shared + rng.NormFloat64()*repSD),
		}
	}
	return out
}

// roundsTrial runs one simulated comparison over rounds (draws[r] is round r+1's baseline and
// cell value). The design replays its looks over the whole history in one call: Compare stops
// at the first look that settles, which is where the runner, looking after every round, would
// have closed the cell. naive reports whether a paired t-test at 0.05 after every round from
// the design's minimum would have called a difference at some look.
func roundsTrial(s *Sequential, draws [][2]float64) (verdict string, reps int, naive bool) {
	var base, treat []float64
	hist := make([][2][]float64, 0, len(draws))
	for r, d := range draws {
		base, treat = append(base, d[0]), append(treat, d[1])
		hist = append(hist, [2][]float64{base[: r+1 : r+1], treat[: r+1 : r+1]})
		if r+1 < s.MinReps {
			continue
		}
		if d, se, df, ok := PairedLog(base, treat); ok && se > 0 && !naive {
			naive = 2*distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.CDF(-math.Abs(d/se)) <= 0.05
		}
	}
	res := s.Compare(hist, true, false)
	if res.At < 0 {
		return res.Verdict, 0, naive
	}
	return res.Verdict, res.Looks[res.At].NBase, naive
}

// binomialLimit is the most false positives a rule of true rate alpha shows in sims trials but
// for a chance of about 0.1% (alpha plus 3 binomial standard deviations).
func binomialLimit(alpha float64, sims int) float64 {
	return alpha + 3*math.Sqrt(alpha*(1-alpha)/float64(sims))
}

// Calibration of the paired rule on A/A data with the lab's structure: every round has its own
// effect (sd 10% on the log scale) shared by the baseline's and the cell's repetition of that
// round (drift between bursts), and every repetition its own noise (sd 7%). Over 2000 simulated
// comparisons looked at after every round from 3 to 10, the paired sequential rule may call a
// difference at most alpha plus 3 binomial standard deviations of the time (0.065); a naive
// paired t-test at 0.05 after every round must exceed that on the same data, so the check
// demonstrably catches the repeated-looks defect. The designs have no equivalence stop: a stop
// for equivalence only ends a comparison before it could cross, so they bound the designs with
// one. (The designs share one memo of simulated paths: copies of one warmed design.)
func TestSequentialPairedCalibration(t *testing.T) {
	simulation(t)
	const sims = 2000
	limit := binomialLimit(0.05, sims)
	pocock := &Sequential{Alpha: 0.05, MinReps: 3, MaxReps: 10, Spending: SpendPocock, Paired: true}
	pocock.Bounds([]float64{0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1})
	obf := *pocock
	obf.Spending = SpendOBF
	for _, tc := range []struct {
		name string
		s    *Sequential
	}{
		{"pocock", pocock},
		{"obrien-fleming", &obf},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(2026, 1203))
			fp, naive, repsSum := 0, 0, 0
			for i := 0; i < sims; i++ {
				v, reps, nv := roundsTrial(tc.s, roundDraws(rng, tc.s.MaxReps, 0.10, 0.07, 0))
				if v == "faster" || v == "slower" {
					fp++
				}
				if nv {
					naive++
				}
				repsSum += reps
			}
			rate, naiveRate := float64(fp)/sims, float64(naive)/sims
			t.Logf("%s, paired: A/A false positives over all looks %.3f (limit %.3f; naive paired t after every round %.3f); mean rounds %.1f",
				tc.name, rate, limit, naiveRate, float64(repsSum)/sims)
			if rate > limit {
				t.Errorf("paired sequential false-positive rate %.3f, want <= %.3f", rate, limit)
			}
			if naiveRate <= limit {
				t.Errorf("naive paired rule: %.3f false positives; this check must show it above %.3f", naiveRate, limit)
			}
		})
	}
}

// Power and expected repetitions, paired against unpaired on the same simulated data, at the
// lab's measured spreads (2026-12-03, 300-claim job: log p99 spread 10-13.5% between
// repetitions, 6-9% for the per-round ratio cell/baseline): a round effect of sd 11.3% shared by
// both cells of a round plus 6.4% per repetition gives 13.0% between repetitions of one cell and
// 9.1% for the per-round log ratio. There the paired design (Pocock, 3 to 10, equivalence 15%)
// must settle 20% and 35% shifts in fewer expected repetitions than the unpaired one, with no
// less power. Without a round effect (the same 13% spread all per repetition) pairing has
// nothing to remove: those rows are printed to state its cost (n-1 instead of about 2n-2
// degrees of freedom, and a ratio that spreads sqrt(2) times a repetition), not asserted.
func TestSequentialPairedPower(t *testing.T) {
	simulation(t)
	paired := &Sequential{Alpha: 0.05, MinReps: 3, MaxReps: 10, Spending: SpendPocock, EquivalencePct: 15, Paired: true}
	unpaired := &Sequential{Alpha: 0.05, MinReps: 3, MaxReps: 10, Spending: SpendPocock, EquivalencePct: 15}
	type row struct{ power, eq, reps float64 }
	for _, tc := range []struct {
		name           string
		roundSD, repSD float64
		effect         float64
		sims           int
		assert         bool
	}{
		{"lab spreads", 0.113, 0.064, 0, 500, false},
		{"lab spreads", 0.113, 0.064, 0.20, 500, true},
		{"lab spreads", 0.113, 0.064, 0.35, 500, true},
		{"no round effect", 0, 0.13, 0.20, 300, false},
		{"no round effect", 0, 0.13, 0.35, 300, false},
	} {
		rng := rand.New(rand.NewPCG(uint64(tc.roundSD*1000)+7, uint64(tc.effect*1000)+11))
		var p, u row
		for i := 0; i < tc.sims; i++ {
			draws := roundDraws(rng, paired.MaxReps, tc.roundSD, tc.repSD, tc.effect)
			for _, x := range []struct {
				s *Sequential
				r *row
			}{{paired, &p}, {unpaired, &u}} {
				v, reps, _ := roundsTrial(x.s, draws)
				if v == "slower" {
					x.r.power++
				}
				if v == "equivalent" {
					x.r.eq++
				}
				x.r.reps += float64(reps)
			}
		}
		for _, r := range []*row{&p, &u} {
			n := float64(tc.sims)
			r.power, r.eq, r.reps = r.power/n, r.eq/n, r.reps/n
		}
		t.Logf("%-15s (between repetitions %4.1f%%, per-round ratio %4.1f%%), change %+3.0f%%: paired detected %.2f, equivalent %.2f, mean reps %.2f | unpaired detected %.2f, equivalent %.2f, mean reps %.2f",
			tc.name, math.Hypot(tc.roundSD, tc.repSD)*100, math.Sqrt2*tc.repSD*100, tc.effect*100, p.power, p.eq, p.reps, u.power, u.eq, u.reps)
		if tc.effect == 0 && (p.power > 0.04 || u.power > 0.04) {
			t.Errorf("%s, no effect: 'slower' in %.3f (paired) and %.3f (unpaired) of trials, want <= 0.04", tc.name, p.power, u.power)
		}
		if !tc.assert {
			continue
		}
		if p.reps >= u.reps {
			t.Errorf("%s, %+.0f%%: paired needs %.2f repetitions, unpaired %.2f: pairing should need fewer", tc.name, tc.effect*100, p.reps, u.reps)
		}
		if p.power < u.power-0.02 {
			t.Errorf("%s, %+.0f%%: paired power %.2f below unpaired %.2f", tc.name, tc.effect*100, p.power, u.power)
		}
	}
}

// The paired comparison on hand-made rounds: it pairs by position, drops rounds missing a side,
// counts pairs as its repetitions, and reports a failed claim at the quantile as no test.
func TestSequentialComparePaired(t *testing.T) {
	nan := math.NaN()
	rounds := func(base, treat []float64) [][2][]float64 {
		var h [][2][]float64
		for r := 1; r <= len(base); r++ {
			h = append(h, [2][]float64{base[:r], treat[:r]})
		}
		return h
	}
	s := &Sequential{Alpha: 0.05, MinReps: 3, MaxReps: 10, Spending: SpendPocock, EquivalencePct: 15, Paired: true}
	// The estimate from the complete rounds 1, 4 and 5 of the case with missing sides.
	complete := (math.Exp((math.Log(110.0/100)+math.Log(77.0/70)+math.Log(130.0/120))/3) - 1) * 100
	for _, tc := range []struct {
		name        string
		base, treat []float64
		verdict     string
		look        int     // pairs at the verdict's look (0: no look)
		pct         float64 // the estimate at that look (NaN: not checked)
		note        string
	}{
		// Rounds drift by +-40% but every cell is 10% (+-1%) above its round's baseline: unpaired
		// this is noise, paired a settled slowdown at the first look.
		{"drifting rounds, steady ratio", []float64{100, 140, 70, 120}, []float64{110, 153, 77.5, 132}, "slower", 3, nan, ""},
		{"missing sides drop their rounds", []float64{100, nan, 140, 70, 120}, []float64{110, 150, nan, 77, 130}, "slower", 3, complete, ""},
		{"a failed claim: no test", []float64{100, 140, 70}, []float64{110, math.Inf(1), 77}, "~", 3, nan, "not finite"},
		{"two rounds: insufficient", []float64{100, 140}, []float64{110, 154}, "insufficient repetitions", 0, nan, "fewer than 3 rounds"},
		{"two complete rounds of three: insufficient", []float64{100, nan, 70}, []float64{110, 154, 77}, "insufficient repetitions", 0, nan, "fewer than 3 rounds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.Compare(rounds(tc.base, tc.treat), false, true)
			if r.Verdict != tc.verdict {
				t.Fatalf("verdict %q, want %q (note %q, looks %+v)", r.Verdict, tc.verdict, r.Note, r.Looks)
			}
			if tc.look > 0 {
				if l := r.Looks[r.At]; l.NBase != tc.look || l.NTreat != tc.look {
					t.Errorf("verdict at %d/%d pairs, want %d", l.NBase, l.NTreat, tc.look)
				}
				if l := r.Looks[r.At]; !math.IsNaN(tc.pct) && math.Abs(l.Pct-tc.pct) > 1e-9 {
					t.Errorf("estimate %.6f%%, want the mean log ratio of the complete rounds %.6f%%", l.Pct, tc.pct)
				}
			}
			if tc.note != "" && !strings.Contains(r.Note, tc.note) {
				t.Errorf("note %q, want it to say %q", r.Note, tc.note)
			}
			// the repeated p-value is at most alpha exactly when the look crossed
			if crossed := r.Verdict == "slower" || r.Verdict == "faster"; !math.IsNaN(r.P) && crossed != (r.P <= s.Alpha) {
				t.Errorf("verdict %q but repeated p %.4g (alpha %g)", r.Verdict, r.P, s.Alpha)
			}
		})
	}
	// The same drifting rounds unpaired: the round effect swamps the 10% change.
	unpaired := *s
	unpaired.Paired = false
	if r := unpaired.Compare(rounds([]float64{100, 140, 70, 120}, []float64{110, 153, 77.5, 132}), false, false); r.Verdict != "~" {
		t.Errorf("unpaired verdict on drifting rounds %q, want ~", r.Verdict)
	}
	if d := s.Describe(); !strings.Contains(d, "paired by round") {
		t.Errorf("Describe() = %q, want it to say paired by round", d)
	}
	if d := unpaired.Describe(); strings.Contains(d, "paired") {
		t.Errorf("unpaired Describe() = %q mentions pairing", d)
	}
}

func TestPairedLogAndMDE(t *testing.T) {
	d, se, df, ok := PairedLog([]float64{100, 200, math.NaN(), 50}, []float64{110, 240, 30, 50})
	l1, l2, l3 := math.Log(1.1), math.Log(1.2), 0.0
	m := (l1 + l2 + l3) / 3
	sd := math.Sqrt(((l1-m)*(l1-m) + (l2-m)*(l2-m) + (l3-m)*(l3-m)) / 2)
	if !ok || math.Abs(d-m) > 1e-12 || math.Abs(se-sd/math.Sqrt(3)) > 1e-12 || df != 2 {
		t.Errorf("PairedLog = %v %v %v %v, want %v %v 2 true", d, se, df, ok, m, sd/math.Sqrt(3))
	}
	if _, _, _, ok := PairedLog([]float64{100, 0, 90}, []float64{100, 100, 90}); ok {
		t.Error("PairedLog with a zero value: ok, want no test")
	}
	if _, _, _, ok := PairedLog([]float64{100, math.NaN()}, []float64{100, 90}); ok {
		t.Error("PairedLog with one pair: ok, want no test")
	}
	// 10 rounds, sd 0.09, t with 9 df: (2.262+0.883)*0.09/sqrt(10) = 0.0895 -> +9.4%.
	if got := MDEPairedPct(0.09, 10, 1.96); math.Abs(got-9.4) > 0.2 {
		t.Errorf("MDEPairedPct = %.2f, want ~9.4", got)
	}
	if got := MDEPairedPct(0.09, 1, 1.96); !math.IsNaN(got) {
		t.Errorf("MDEPairedPct with one round = %v, want NaN", got)
	}
}

// The paired boundaries spend what they say: on paired t statistics of normal log ratios
// (simulated independently of the paths the boundaries came from), the crossing probability by
// each look is the spending function's value, within 0.004 (3 standard errors at 60,000 paths
// plus the boundaries' own simulation error). Brownian boundaries fail this: the paired t,
// re-estimating its spread at every look, crossed them 0.057 of the time by the last look.
func TestSequentialPairedBounds(t *testing.T) {
	fr := []float64{0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}
	pocock := &Sequential{Alpha: 0.05, MinReps: 3, MaxReps: 10, Spending: SpendPocock, Paired: true}
	pocock.Bounds(fr)
	obf := *pocock // shares the memo of simulated paths
	obf.Spending = SpendOBF
	for _, s := range []*Sequential{pocock, &obf} {
		b := s.Bounds(fr)
		tb := make([]float64, len(fr)) // each boundary back on its look's t scale
		for j, f := range fr {
			tb[j] = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(pairsAt(f, s.MaxReps) - 1)}.Quantile(normalCDF(b[j]))
		}
		rng := rand.New(rand.NewPCG(3, 4))
		const n = 60000
		crossed := make([]int, len(fr))
		xs := make([]float64, 0, s.MaxReps)
		for i := 0; i < n; i++ {
			xs = xs[:0]
			for j, f := range fr {
				for len(xs) < pairsAt(f, s.MaxReps) {
					xs = append(xs, rng.NormFloat64())
				}
				m, v := meanVar(xs)
				if math.Abs(m/math.Sqrt(v/float64(len(xs)))) >= tb[j] {
					crossed[j]++
					break
				}
			}
		}
		cum := 0
		for j, f := range fr {
			cum += crossed[j]
			if got, want := float64(cum)/n, s.Spent(f); math.Abs(got-want) > 0.004 {
				t.Errorf("%s look %d (%d pairs): crossed by then %.4f, spending function %.4f", s.Spending, j+1, pairsAt(f, s.MaxReps), got, want)
			}
		}
		t.Logf("%s paired boundaries |z|: %.2f; crossed by the last look %.4f", s.Spending, b, float64(cum)/n)
	}
}
