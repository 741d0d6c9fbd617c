package analysis

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/stats"
)

// A paired design pairs each repetition with the baseline's of the same repetition number (the
// same round), and a failed repetition on either side drops its round: here the baseline's
// repetition 2 and the cell's repetition 5 failed, so the pairs are rounds 1, 3, 4 and 6. The
// rounds drift by -30%..+50% while the cell stays about 10% above its round's baseline: paired,
// that is a settled slowdown; unpaired (and under the fixed design, which is never paired) the
// drift swamps it.
func TestSequentialPairsByRound(t *testing.T) {
	drift := []float64{1.0, 1.5, 0.7, 1.3, 0.8, 1.1}
	ratio := []float64{1.10, 1.12, 1.09, 1.11, 1.10, 1.105}
	mk := func(name string, rep int, v float64, failed bool) results.Cell {
		c := results.Cell{Name: name, Rep: rep}
		if failed {
			c.Error = "claims timed out"
			return c
		}
		for i := 0; i < 20; i++ {
			l := v
			c.Claims = append(c.Claims, results.Claim{Name: fmt.Sprint(i), LatencyMS: &l, LaunchType: "warm"})
		}
		return c
	}
	var cells []results.Cell
	// appended out of round order: pairing goes by Rep, not by position
	for _, rep := range []int{3, 1, 2, 6, 4, 5} {
		r := rep - 1
		cells = append(cells, mk("both", rep, 100*drift[r]*ratio[r], rep == 5), mk("none", rep, 100*drift[r], rep == 2))
	}
	names := []string{"none", "both"}
	pairedRounds := []int{1, 3, 4, 6}
	want := 0.0
	for _, r := range pairedRounds {
		want += math.Log(ratio[r-1])
	}
	want = (math.Exp(want/float64(len(pairedRounds))) - 1) * 100

	for _, tc := range []struct {
		name     string
		d        stats.Sequential
		paired   bool
		verdict  string
		nb, nt   int     // the look's repetitions a side (pairs when paired)
		pct      float64 // NaN: not checked
		inMethod string
	}{
		{"paired", stats.Sequential{Alpha: 0.05, MinReps: 4, MaxReps: 6, Spending: stats.SpendPocock, Paired: true}, true, "slower", 4, 4, want, "paired by round"},
		{"unpaired", stats.Sequential{Alpha: 0.05, MinReps: 4, MaxReps: 6, Spending: stats.SpendPocock}, false, "~", 5, 5, math.NaN(), "Welch"},
		{"fixed design stays unpaired", stats.Sequential{Alpha: 0.05, MinReps: 3, MaxReps: 6, Fixed: true, Paired: true}, false, "~", 5, 5, math.NaN(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.d
			states := Sequential(cells, names, "none", &d, 6, true, true)
			st := states["both"]
			if st == nil || st.Verdict == nil {
				t.Fatalf("no verdict for both: %+v", states)
			}
			if st.Stopping.Paired != tc.paired || states["none"].Stopping.Paired != tc.paired {
				t.Errorf("stopping records paired %v (baseline %v), want %v", st.Stopping.Paired, states["none"].Stopping.Paired, tc.paired)
			}
			for _, key := range []string{"claim.p50_ms", "claim.p99_ms"} {
				r, ok := st.seqResult(key)
				if !ok || r.At < 0 {
					t.Fatalf("%s: no look (%+v)", key, r)
				}
				l := r.Looks[r.At]
				if r.Verdict != tc.verdict || l.NBase != tc.nb || l.NTreat != tc.nt {
					t.Errorf("%s: verdict %q at %d/%d, want %q at %d/%d (note %q)", key, r.Verdict, l.NBase, l.NTreat, tc.verdict, tc.nb, tc.nt, r.Note)
				}
				if !math.IsNaN(tc.pct) && math.Abs(l.Pct-tc.pct) > 1e-9 {
					t.Errorf("%s: estimate %+.6f%%, want the mean log ratio of rounds %v, %+.6f%%", key, l.Pct, pairedRounds, tc.pct)
				}
			}
			if tc.d.Fixed {
				return
			}
			sum := SummarizeDesign(cells, names, "none", 1, &d)
			for _, s := range sum {
				if s.Name != "both" {
					continue
				}
				for _, m := range s.Metrics {
					if m.Key == "claim.p99_ms" && (m.Delta == nil || !strings.Contains(m.Delta.Comparison.Method, tc.inMethod)) {
						t.Errorf("p99 comparison %+v: want its method to say %q", m.Delta, tc.inMethod)
					}
				}
				if s.Stopping == nil || s.Stopping.Paired != tc.paired {
					t.Errorf("summary stopping %+v: want paired %v", s.Stopping, tc.paired)
				}
			}
		})
	}
}

// The paired history is aligned by repetition number round by round: a round missing either
// side adds no pair, and each entry holds only the rounds up to it.
func TestPairedUpTo(t *testing.T) {
	base := repValues{reps: []int{1, 3, 4, 5}, vals: []float64{10, 30, 40, 50}}
	treat := repValues{reps: []int{1, 2, 4, 5}, vals: []float64{11, 21, 41, 51}}
	hist := pairedUpTo(base, treat, 5)
	want := [][2][]float64{
		{{10}, {11}},
		{{10}, {11}},
		{{10}, {11}},
		{{10, 40}, {11, 41}},
		{{10, 40, 50}, {11, 41, 51}},
	}
	if got, w := fmt.Sprint(hist), fmt.Sprint(want); got != w {
		t.Errorf("pairedUpTo = %s, want %s", got, w)
	}
}
