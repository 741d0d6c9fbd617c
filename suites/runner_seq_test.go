package suites

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/stats"
)

// burstCell is a cell of 100 claims whose latencies centre on p50 ms, with a per-repetition
// random effect of sd spread (log scale).
func burstCell(rng *rand.Rand, p50, spread float64) results.Cell {
	e := math.Exp(rng.NormFloat64() * spread)
	var c results.Cell
	for i := 0; i < 100; i++ {
		l := p50 * e * math.Exp(rng.NormFloat64()*0.3)
		c.Claims = append(c.Claims, results.Claim{Name: fmt.Sprint(i), LatencyMS: &l, LaunchType: "warm"})
	}
	return c
}

// The sequential runner: rounds of one repetition of every open cell; a cell 40% slower than the
// baseline stops at the first look (3 repetitions), a cell identical to it runs to the planned
// maximum or stops for equivalence, the baseline runs while any compared cell runs, and the
// summary says for each how many repetitions it got and why it stopped.
func TestRunCellsSequential(t *testing.T) {
	cfg := config.Default()
	cfg.Matrix.Brakes = []string{"none", "slow", "same"}
	cfg.Matrix.Repetitions, cfg.Matrix.MinRepetitions, cfg.Matrix.Equivalence = 8, 3, 0
	design := sequentialDesign(cfg.Matrix)
	if design == nil || !design.Paired {
		t.Fatalf("the default matrix settings give %+v, want a sequential design paired by round", design)
	}
	cfg.Matrix.Paired = false
	if d := sequentialDesign(cfg.Matrix); d == nil || d.Paired {
		t.Errorf("matrix.paired=false gives %+v, want the two-sample sequential design", d)
	}
	var cells []PlannedCell
	for _, n := range cfg.Matrix.Brakes {
		for rep := 1; rep <= cfg.Matrix.Repetitions; rep++ {
			cells = append(cells, PlannedCell{ID: fmt.Sprintf("%s#%d", n, rep), Name: n, Rep: rep})
		}
	}
	plan := &Plan{Names: cfg.Matrix.Brakes, Baseline: "none", Design: design, Cells: inRounds(cells, rand.New(rand.NewPCG(1, 2)))}
	// Rounds: every cell's repetition r comes before any repetition r+1.
	for i := 1; i < len(plan.Cells); i++ {
		if plan.Cells[i].Rep < plan.Cells[i-1].Rep {
			t.Fatalf("cell order is not in rounds: %s after %s", plan.Cells[i].ID, plan.Cells[i-1].ID)
		}
	}
	env := runnerEnv(t)
	rng := rand.New(rand.NewPCG(3, 4))
	ran := map[string]int{}
	res := &results.Results{}
	runCells(context.Background(), env, plan, res, func(PlannedCell) string { return "" },
		func(ctx context.Context, sc *Scope, pc PlannedCell, idx int) results.Cell {
			ran[pc.Name]++
			p50 := 1000.0
			if pc.Name == "slow" {
				p50 = 1400
			}
			return burstCell(rng, p50, 0.03)
		}, nil)
	if ran["slow"] != 3 {
		t.Errorf("slow ran %d repetitions, want 3 (settled at the first look)", ran["slow"])
	}
	if ran["same"] != 8 || ran["none"] != 8 {
		t.Errorf("same ran %d, none %d; want the planned maximum 8 for both (no equivalence stop)", ran["same"], ran["none"])
	}
	sum := analysis.SummarizeDesign(res.Cells, plan.Names, plan.Baseline, 1, plan.Design)
	byName := map[string]results.Summary{}
	for _, s := range sum {
		byName[s.Name] = s
	}
	slow, same, none := byName["slow"], byName["same"], byName["none"]
	if slow.Stopping == nil || slow.Stopping.Reason != "effect" || slow.Stopping.Reps != 3 || slow.Verdict == nil || slow.Verdict.Metrics[0].Verdict != "slower" {
		t.Errorf("slow: stopping %+v verdict %+v", slow.Stopping, slow.Verdict)
	}
	if same.Stopping == nil || same.Stopping.Reason != "max" || !strings.Contains(same.Stopping.Detail, "planned maximum of 8") {
		t.Errorf("same: stopping %+v", same.Stopping)
	}
	if none.Stopping == nil || none.Stopping.Reason != "baseline" || none.Verdict != nil {
		t.Errorf("none: stopping %+v verdict %+v", none.Stopping, none.Verdict)
	}
	for _, m := range slow.Metrics {
		if analysis.IsVerdictMetric(m.Key) && (m.Delta == nil || !strings.HasPrefix(m.Delta.Comparison.Method, "group-sequential")) {
			t.Errorf("slow %s: the comparison row is not the design's: %+v", m.Key, m.Delta)
		}
	}
	for _, v := range slow.Verdict.Metrics {
		if math.IsNaN(float64(v.P)) || float64(v.P) > 0.05 || math.IsNaN(float64(v.MDEPct)) || !strings.Contains(v.Text, "slower") {
			t.Errorf("slow verdict %+v", v)
		}
	}
}

// An interrupted sequential run says so: the cells open at the time stop for that reason, and
// the run is marked incomplete.
func TestRunCellsSequentialInterrupted(t *testing.T) {
	design := &stats.Sequential{Alpha: 0.05, MinReps: 3, MaxReps: 6, Spending: stats.SpendPocock}
	var cells []PlannedCell
	for _, n := range []string{"none", "x"} {
		for rep := 1; rep <= 6; rep++ {
			cells = append(cells, PlannedCell{ID: fmt.Sprintf("%s#%d", n, rep), Name: n, Rep: rep})
		}
	}
	plan := &Plan{Names: []string{"none", "x"}, Baseline: "none", Design: design, Cells: inRounds(cells, rand.New(rand.NewPCG(5, 6)))}
	env := runnerEnv(t)
	rng := rand.New(rand.NewPCG(7, 8))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	res := &results.Results{}
	runCells(ctx, env, plan, res, func(PlannedCell) string { return "" },
		func(ctx context.Context, sc *Scope, pc PlannedCell, idx int) results.Cell {
			if n++; n == 5 {
				cancel()
			}
			return burstCell(rng, 1000, 0.2)
		}, nil)
	if !strings.HasPrefix(res.Incomplete, "interrupted after 5 of ") {
		t.Errorf("incomplete %q", res.Incomplete)
	}
	sum := analysis.SummarizeDesign(res.Cells, plan.Names, plan.Baseline, 1, plan.Design)
	if st := sum[1].Stopping; st == nil || st.Reason != "interrupted" {
		t.Errorf("x after an interrupt: %+v", st)
	}
}

// The fixed design's cells are shuffled across repetitions: an interrupt says how many of all the
// planned cells ran (a repetition-number change is not a round boundary there).
func TestRunCellsFixedInterruptedCount(t *testing.T) {
	plan := &Plan{Names: []string{"none", "x"}, Baseline: "none", Cells: []PlannedCell{
		{ID: "x#2", Name: "x", Rep: 2}, {ID: "none#1", Name: "none", Rep: 1}, {ID: "x#1", Name: "x", Rep: 1}, {ID: "none#2", Name: "none", Rep: 2},
	}}
	env := runnerEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	res := &results.Results{}
	runCells(ctx, env, plan, res, func(PlannedCell) string { return "" },
		func(ctx context.Context, sc *Scope, pc PlannedCell, idx int) results.Cell {
			if n++; n == 2 {
				cancel()
			}
			return results.Cell{}
		}, nil)
	if res.Incomplete != "interrupted after 2 of 4 cells" {
		t.Errorf("incomplete %q, want interrupted after 2 of 4 cells", res.Incomplete)
	}
}
