//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/browsertest"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/tune"
)

// TestTuneOnTheLab runs a tiny tune on the lab: warmpool-burst shrunk to 20 claims and a pool of
// 20, max-refill-rate searched within a budget of 6 cells (one round: two settings and the
// baseline, 2 repetitions each), the confirmation at 3 repetitions a side (the fixed design: one
// look). It checks the mechanics, never an answer: every round is an ordinary run whose cells
// carry the round's inline settings in rounds, the budget holds, the tune ends in a confirmation
// verdict on fresh repetitions (its own run, not a round's), the recommendation follows that
// verdict, and tune.json and tune.html are written and render without a network request.
func TestTuneOnTheLab(t *testing.T) {
	out := t.TempDir()
	stdout, err := runCLI(t, "tune", "warmpool-burst", "--out", out,
		"--set", "workload.pool=20", "--set", "workload.claims=20", "--set", "workload.refillTimeout=60s",
		"--set", "tune.brakes=max-refill-rate", "--set", "tune.budget=6", "--set", "tune.confirmRepetitions=3", "--set", "tune.seed=24")
	if err != nil {
		t.Fatalf("tune: %v", err)
	}
	matches, _ := filepath.Glob(filepath.Join(out, "tune-warmpool-burst-*", "tune.json"))
	if len(matches) != 1 {
		t.Fatalf("want one tune.json under %s, found %v", out, matches)
	}
	dir := filepath.Dir(matches[0])
	raw, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	var res tune.Result
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if res.Schema != tune.Schema || res.Suite != "warmpool-burst" || res.Incomplete != "" {
		t.Fatalf("tune.json: schema %q suite %q incomplete %q", res.Schema, res.Suite, res.Incomplete)
	}
	spent := 0
	for _, rd := range res.Rounds {
		spent += rd.Cells
		r, err := results.Read(rd.Results)
		if err != nil {
			t.Fatalf("round %d: %v", rd.Index, err)
		}
		reps := map[string]int{}
		for _, c := range r.Cells {
			if c.Error != "" {
				t.Errorf("round %d %s: %s", rd.Index, c.ID, c.Error)
			}
			reps[c.Name]++
			if c.Name != "none" {
				if v, ok := strings.CutPrefix(c.Name, "max-refill-rate="); !ok || c.Brake.Settings["max-refill-rate"] != v {
					t.Errorf("round %d %s: settings %v", rd.Index, c.ID, c.Brake.Settings)
				}
			}
		}
		for _, item := range append([]string{"none"}, rd.Candidates...) {
			if reps[item] != rd.Reps {
				t.Errorf("round %d: %s ran %d times, want %d (%v)", rd.Index, item, reps[item], rd.Reps, reps)
			}
		}
		// In rounds: repetition r of every setting before any repetition r+1.
		last := 0
		for _, id := range r.CellOrder {
			for _, c := range r.Cells {
				if c.ID == id {
					if c.Rep < last {
						t.Errorf("round %d: cell order %v is not in rounds", rd.Index, r.CellOrder)
					}
					last = c.Rep
				}
			}
		}
	}
	if spent != res.Spent || res.Spent > 6 || len(res.Rounds) == 0 {
		t.Errorf("spent %d (rounds %d) of a budget of 6", res.Spent, spent)
	}
	cf := res.Confirmation
	if cf == nil {
		t.Fatalf("no confirmation: %+v", res.Recommendation)
	}
	t.Logf("winner %s; confirmation %s: %s %v [%v, %v]; recommendation %+v", res.Winner, cf.Item, cf.Verdict, cf.Pct, cf.CI.Lo, cf.CI.Hi, res.Recommendation)
	if !slices.Contains([]string{"faster", "slower", "~"}, cf.Verdict) || cf.Item != res.Winner || cf.RepsWinner != 3 || cf.RepsBaseline != 3 {
		t.Errorf("confirmation %+v, winner %s", cf, res.Winner)
	}
	r, err := results.Read(cf.Results)
	if err != nil {
		t.Fatal(err)
	}
	creps := map[string]int{}
	for _, c := range r.Cells {
		creps[c.Name]++
	}
	if len(creps) != 2 || creps["none"] != 3 || creps[cf.Item] != 3 {
		t.Errorf("the confirmation's run has cells %v; want none and %s, 3 each", creps, cf.Item)
	}
	for _, rd := range res.Rounds {
		if rd.Results == cf.Results {
			t.Errorf("the confirmation reused round %d's run", rd.Index)
		}
	}
	rec := res.Recommendation
	switch {
	case rec.Recommend && (cf.Verdict != "faster" || rec.Item != cf.Item || !slices.Equal(rec.Flags, []string{"--sandbox-warm-pool-max-refill-rate=" + rec.Values["max-refill-rate"]})):
		t.Errorf("recommended %+v on a %s confirmation", rec, cf.Verdict)
	case !rec.Recommend && (cf.Verdict == "faster" || rec.Why == "" || !strings.Contains(rec.Snippet, "keep the defaults")):
		t.Errorf("kept the defaults %+v on a %s confirmation", rec, cf.Verdict)
	}
	if !strings.Contains(stdout, rec.Snippet) || !strings.Contains(stdout, "tune.html: ") {
		t.Errorf("stdout lacks the snippet or the page:\n%s", stdout)
	}
	dom, external := browsertest.Load(t, browsertest.Chromium(t), filepath.Join(dir, "tune.html"))
	for _, want := range []string{"brakebench tune: warmpool-burst", "Confirmation", "Every setting tried", "Where the budget went", cf.Item, "winner"} {
		if !bytes.Contains(dom, []byte(want)) {
			t.Errorf("rendered tune.html lacks %q", want)
		}
	}
	for _, u := range external {
		t.Errorf("tune.html made a request: %s", u)
	}
}
