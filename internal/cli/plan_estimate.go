package cli

import (
	"fmt"
	"io"
	"math"
	"sort"
	"time"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/suites"
)

// planEstimate prints the plan's design, its range of cells and, given an earlier run of the
// same cluster, the duration range from that run's cell times and the repetitions needed for a
// change of effect% in claim p99 at the spread that run measured.
func planEstimate(w io.Writer, cfg *config.Resolved, plan *suites.Plan, earlier *results.Results, from string, effect float64) {
	names := map[string]bool{}
	lo, hi := 0, 0
	for _, c := range plan.Cells {
		if c.NotApplicable == "" {
			hi++
			names[c.Name] = true
		}
	}
	lo = hi
	design := analysis.FixedDesign(cfg.Matrix.Repetitions)
	if plan.Design != nil {
		design = plan.Design
		lo = len(names) * plan.Design.MinReps
	}
	warm := cfg.Matrix.Warmup
	fmt.Fprintf(w, "design: %s\n", design.Describe())
	if lo == hi {
		fmt.Fprintf(w, "cells: %d", hi)
	} else {
		fmt.Fprintf(w, "cells: %d-%d (every cell settled at the first look .. every cell to the planned maximum)", lo, hi)
	}
	if warm > 0 {
		fmt.Fprintf(w, " + %d warm-up", warm)
	}
	fmt.Fprintln(w)
	if earlier == nil {
		fmt.Fprintln(w, "duration: pass --from an earlier results.json of this cluster to estimate it from measured cell times (README: a 300-claim cell took 60-110 s on the 2-core lab)")
		return
	}
	var secs []float64
	for _, c := range earlier.Cells {
		if t, ok := c.Phases["total"]; ok && c.Error == "" && t > 0 {
			secs = append(secs, t)
		}
	}
	if len(secs) == 0 {
		fmt.Fprintf(w, "duration: %s has no cell times\n", from)
	} else {
		sort.Float64s(secs)
		med := secs[len(secs)/2]
		d := func(n int) string {
			return (time.Duration(float64(n+warm)*med) * time.Second).Round(time.Minute).String()
		}
		fmt.Fprintf(w, "duration: %s-%s of cells at the median cell time of %s (%.0f s; lab up and down not counted)\n", d(lo), d(hi), from, med)
	}
	sd, df := analysis.Spread(earlier, "claim.p99_ms")
	what := "between repetitions"
	if design.PairedByRound() {
		sd, df = analysis.PairedSpread(earlier, 99)
		what = "of the per-round ratio to the baseline (paired design)"
	}
	if math.IsNaN(sd) {
		fmt.Fprintf(w, "repetitions: %s has fewer than 2 repetitions of any cell (and its baseline): no spread to plan with\n", from)
		return
	}
	n := analysis.RepsFor(effect, sd, design)
	need := fmt.Sprintf("%d a side", n)
	if n == 0 {
		need = "more than 1000 a side"
	}
	fmt.Fprintf(w, "repetitions: a %g%% change of claim p99 at 80%% power needs about %s at the spread measured in %s (%.1f%% %s, %d degrees of freedom); planned maximum %d\n",
		effect, need, from, (math.Exp(sd)-1)*100, what, df, cfg.Matrix.Repetitions)
}
