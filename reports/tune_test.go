package reports

import (
	"bytes"
	"context"
	"html"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/tune"
)

// bowlEval is a planted response: max-refill-rate's effect on claim p99 is a bowl with its
// bottom at 20/s (depth d), plus noise; pool.refill_s is 300/rate.
type bowlEval struct {
	rng   *rand.Rand
	depth float64
}

func (e *bowlEval) Evaluate(_ context.Context, cands []tune.Setting, reps int) ([]tune.Observation, error) {
	var out []tune.Observation
	for r := 1; r <= reps; r++ {
		out = append(out, tune.Observation{Candidate: tune.Baseline, Rep: r, Objective: 10000 * math.Exp(0.05*e.rng.NormFloat64()),
			Metrics: map[string]float64{"pool.refill_s": 20}})
		for i, c := range cands {
			x, _ := strconv.ParseFloat(c.Values["max-refill-rate"], 64)
			l := math.Log(x / 20)
			out = append(out, tune.Observation{Candidate: i, Rep: r, Objective: 10000 * math.Exp(e.depth+0.25*l*l+0.05*e.rng.NormFloat64()),
				Metrics: map[string]float64{"pool.refill_s": 300 / x}})
		}
	}
	return out, nil
}

func tuneResult(t *testing.T, depth float64) *tune.Result {
	t.Helper()
	cfg, err := config.Loader{Suite: "warmpool-burst", Sets: []string{"tune.brakes=max-refill-rate", "tune.budget=24", "tune.seed=7", "tune.constraints=pool.refill_s<=60"}}.Load()
	if err != nil {
		t.Fatal(err)
	}
	sp, err := tune.FromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tune.Run(context.Background(), sp, &bowlEval{rng: rand.New(rand.NewPCG(1, 2)), depth: depth}, tune.Options{WithP: true})
	if err != nil {
		t.Fatal(err)
	}
	res.Suite = "warmpool-burst"
	res.Rounds[0].Results = "round-1/results.json"
	return res
}

// tune.html and the terminal summary carry every tried setting with its estimate, the
// confirmation's verdict, the bias note, where the budget went and the snippet; the page
// fetches nothing.
func TestTunePage(t *testing.T) {
	for _, tc := range []struct {
		depth     float64
		recommend bool
	}{{-0.4, true}, {0.2, false}} {
		res := tuneResult(t, tc.depth)
		if res.Recommendation.Recommend != tc.recommend {
			t.Fatalf("depth %g: recommendation %+v", tc.depth, res.Recommendation)
		}
		raw, err := TuneHTML(res, map[string]string{"round-1/results.json": "round-1/report.html"})
		if err != nil {
			t.Fatal(err)
		}
		page := html.UnescapeString(string(raw))
		var text bytes.Buffer
		TuneText(&text, res)
		wants := []string{"the winner's curse", "Where the budget went", "<svg", `href="round-1/report.html"`, "pool.refill_s <= 60", res.Recommendation.Why}
		for _, c := range res.Candidates {
			wants = append(wants, c.Item)
		}
		if tc.recommend {
			wants = append(wants, "Run the controller with "+res.Recommendation.Item, "- --sandbox-warm-pool-max-refill-rate=", "faster")
		} else {
			wants = append(wants, "Keep the defaults.", "keep the defaults (no brake flags)")
		}
		for _, w := range wants {
			if !strings.Contains(page, w) {
				t.Errorf("depth %g: tune.html lacks %q", tc.depth, w)
			}
		}
		if external.Match(raw) {
			t.Errorf("tune.html fetches from the network")
		}
		for _, w := range []string{res.Candidates[0].Item, "confirmation (fresh repetitions", "budget:", "recommendation: ", res.Recommendation.Snippet} {
			if !strings.Contains(text.String(), w) {
				t.Errorf("depth %g: terminal summary lacks %q:\n%s", tc.depth, w, text.String())
			}
		}
	}
}
