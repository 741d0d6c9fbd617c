package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/pipeline"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/stats"
	"github.com/brakebench/brakebench/internal/tune"
	"github.com/brakebench/brakebench/reports"
	"github.com/brakebench/brakebench/suites"
)

func (a *app) tuneCmd() *cobra.Command {
	var dry bool
	cmd := &cobra.Command{
		Use:   "tune SUITE",
		Short: "Search brake settings for an objective within a budget of cells, then confirm the winner against no brake",
		Long: "Searches the settings of the brakes in tune.brakes (ranges from the brake registry or tune.ranges) for the\n" +
			"objective tune.objective (claim.p99_ms) subject to tune.constraints, within tune.budget cells: rounds of\n" +
			"successive halving, each an ordinary run of SUITE with the round's settings as inline matrix.brakes items\n" +
			"beside none. The search's winner is then run against no brake again on fresh repetitions (the search's own\n" +
			"numbers are biased low by selection) and recommended only when that confirmation finds it faster and every\n" +
			"constraint holds. Writes each round's results, tune.json and tune.html under --out, and prints the\n" +
			"controller args to paste.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.tune(cmd.Context(), args[0], dry)
		},
	}
	cmd.Flags().BoolVar(&dry, "dry-run", false, "print the search space, the schedule and the first round's settings, then exit (touches nothing)")
	return cmd
}

// prepareTune resolves the suite, the configuration and the search, and plans a probe round
// holding every searched brake at both ends of its range (its flags must exist in the controller
// version): everything that can be wrong with the input, before any cluster is touched.
func (a *app) prepareTune(ctx context.Context, name string, writesOut bool) (*config.Resolved, suites.Suite, *tune.Spec, error) {
	reg := suites.Default()
	if !slices.Contains(reg.Names(), name) {
		return nil, nil, nil, badInput(fmt.Errorf("no suite named %q (known: %s; `brakebench suites` describes them)", name, strings.Join(reg.Names(), ", ")))
	}
	s, err := reg.Get(name)
	if err != nil {
		return nil, nil, nil, badInput(err)
	}
	cfg, err := a.g.loader(name).Load()
	if err != nil {
		return nil, nil, nil, badInput(err)
	}
	sp, err := tune.FromConfig(cfg)
	if err != nil {
		return nil, nil, nil, badInput(err)
	}
	for _, d := range sp.Dims {
		if !slices.Contains(s.Brakes(), d.Brake) {
			return nil, nil, nil, badInput(cfg.Fail("tune.brakes", nil, "expected brakes suite %s takes (%s), got %q", name, strings.Join(s.Brakes(), ", "), d.Brake))
		}
	}
	if writesOut {
		if err := checkOut(cfg); err != nil {
			return nil, nil, nil, err
		}
	}
	if ctx.Err() != nil {
		return nil, nil, nil, interrupted("before planning; nothing was changed")
	}
	items := []string{"none"}
	for _, s := range probeSettings(sp) {
		if !slices.Contains(items, s.Item) {
			items = append(items, s.Item)
		}
	}
	probe := roundConfig(cfg, items, 1, false, nil, 0, sp.Seed)
	plan, err := s.Plan(probe, a.planContext(ctx))
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, nil, interrupted("while planning; nothing was changed")
		}
		return nil, nil, nil, badInput(err)
	}
	if plan.Primary != "brake" || !slices.Equal(plan.Names, items) {
		return nil, nil, nil, badInput(fmt.Errorf("suite %s cannot be tuned: tune needs one cell per brake setting with claim latencies (the warm-pool suites); its plan has %d cells named by %s for %d settings",
			name, len(plan.Names), plan.Primary, len(items)))
	}
	for _, c := range plan.Cells {
		if c.NotApplicable != "" {
			return nil, nil, nil, badInput(cfg.Fail("tune.brakes", nil, "expected brakes the controller version has: %s is not applicable: %s", c.Name, c.NotApplicable))
		}
	}
	return cfg, s, sp, nil
}

// probeSettings are every searched brake at the low and at the high end of its range (switches on).
func probeSettings(sp *tune.Spec) []tune.Setting {
	var out []tune.Setting
	for _, end := range []int{0, 1} {
		values := map[string]string{}
		for _, d := range sp.Dims {
			switch {
			case d.Range() == "on/off":
				values[d.Brake] = "on"
			default:
				lo, hi, _ := strings.Cut(d.Range(), "..")
				values[d.Brake] = []string{lo, hi}[end]
			}
		}
		s := tune.Setting{Values: values}
		s.Item = sp.Item(s)
		out = append(out, s)
	}
	return out
}

// roundConfig is cfg for one run of the tune: matrix.brakes none and the items, reps
// repetitions, sequential or not (the search's rounds are not: every setting gets the round's
// repetitions), the confirmation stopping on the objective, warm-up cells only where asked
// (the first run: the lab is warm after it), and a seed per run.
func roundConfig(cfg *config.Resolved, items []string, reps int, sequential bool, stopOn []string, warmup int, seed int64) *config.Resolved {
	c := *cfg
	c.Matrix.Brakes = items
	c.Matrix.Repetitions = reps
	c.Matrix.Sequential = sequential
	c.Matrix.Warmup = warmup
	c.Matrix.Seed = seed
	if stopOn != nil {
		c.Matrix.StopOn = stopOn
	}
	return &c
}

func (a *app) tune(ctx context.Context, name string, dry bool) (err error) {
	cfg, s, sp, err := a.prepareTune(ctx, name, !dry)
	if err != nil {
		return err
	}
	if dry {
		a.tuneDryRun(cfg, name, sp)
		return nil
	}
	cluster, err := a.connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() { err = a.closeCluster(ctx, cluster, err) }()
	started := time.Now()
	dir := filepath.Join(cfg.Out, fmt.Sprintf("tune-%s-%s", name, started.Format("20060102-150405")))
	ev := &clusterEval{a: a, cluster: cluster, cfg: cfg, s: s, sp: sp, dir: dir, warmup: cfg.Matrix.Warmup}
	prog := a.progress()
	res, terr := tune.Run(ctx, sp, ev, tune.Options{WithP: true, Log: prog.Printf})
	if res == nil {
		return terr
	}
	res.Suite, res.StartedAt, res.EndedAt, res.Dir = name, started, time.Now(), dir
	for i := range res.Rounds {
		if i < len(ev.rounds) {
			res.Rounds[i].Results = ev.rounds[i]
		}
	}
	if res.Confirmation != nil {
		res.Confirmation.Results = ev.confirm
	}
	res.Notes = append(res.Notes, ev.notes...)
	if terr != nil {
		res.Incomplete = terr.Error()
		res.Recommendation = tune.Recommendation{Why: "the tune did not finish: " + terr.Error(), Snippet: tune.Snippet(nil)}
	}
	werr := writeTune(dir, res, a)
	a.keepControllerLog(ctx, cluster, dir)
	if terr != nil {
		return errors.Join(terr, werr)
	}
	if werr != nil {
		return werr
	}
	if len(ev.cellErrors) > 0 {
		return fmt.Errorf("%d cell(s) had errors: %s", len(ev.cellErrors), strings.Join(ev.cellErrors, "; "))
	}
	return nil
}

// writeTune writes tune.json and tune.html into dir and prints the summary and the snippet.
func writeTune(dir string, res *tune.Result, a *app) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(res, "", " ")
	if err != nil {
		return err
	}
	jsonPath := filepath.Join(dir, "tune.json")
	if err := os.WriteFile(jsonPath, raw, 0o644); err != nil {
		return err
	}
	links := map[string]string{}
	rel := func(results string) string {
		if results == "" {
			return ""
		}
		r, err := filepath.Rel(dir, filepath.Join(filepath.Dir(results), "report.html"))
		if err != nil {
			return ""
		}
		return filepath.ToSlash(r)
	}
	for _, r := range res.Rounds {
		links[r.Results] = rel(r.Results)
	}
	if res.Confirmation != nil {
		links["confirm"] = rel(res.Confirmation.Results)
	}
	page, err := reports.TuneHTML(res, links)
	if err != nil {
		return err
	}
	htmlPath := filepath.Join(dir, "tune.html")
	if err := os.WriteFile(htmlPath, page, 0o644); err != nil {
		return err
	}
	reports.TuneText(a.stdout, res)
	fmt.Fprintf(a.stdout, "\ntune.html: %s\ntune.json: %s\n", htmlPath, jsonPath)
	return nil
}

// tuneDryRun prints what a tune would do: the space, the objective, the schedule and the first
// round's settings with their flags.
func (a *app) tuneDryRun(cfg *config.Resolved, name string, sp *tune.Spec) {
	w := a.stdout
	fmt.Fprintf(w, "tune %s on cluster provider %q, seed %d\n", name, cfg.Cluster.Provider, sp.Seed)
	for _, d := range sp.Dims {
		key := d.Key
		if key == "" {
			key = "(a switch)"
		}
		scale := ""
		if d.Log {
			scale = ", log scale"
		}
		fmt.Fprintf(w, "  searches %-26s %s %s%s (controller default: %s)\n", d.Brake, key, d.Range(), scale, d.Default)
	}
	fmt.Fprintf(w, "  minimises %s", sp.Objective)
	for i, c := range sp.Constraints {
		if i == 0 {
			fmt.Fprint(w, " subject to ")
		} else {
			fmt.Fprint(w, ", ")
		}
		fmt.Fprint(w, c.Text)
	}
	fmt.Fprintf(w, "\n  budget: %d search cells (the baseline's included), then the confirmation: at most %d cells (%s)\n", sp.Budget, 2*sp.Design.MaxReps, sp.Design.Describe())
	fmt.Fprintln(w, "  planned rounds (iteration: settings x repetitions = cells; each an ordinary run of the suite with none beside the settings):")
	total := 0
	for i, r := range sp.Schedule() {
		total += r.Cells
		fmt.Fprintf(w, "    %d. iteration %d: %d x %d + the baseline x %d = %d cells\n", i+1, r.Iteration, r.Candidates, r.Reps, r.Reps, r.Cells)
	}
	fmt.Fprintf(w, "    %d of %d cells planned", total, sp.Budget)
	if n := cfg.Matrix.Warmup; n > 0 {
		fmt.Fprintf(w, "; before the first round %d unmeasured warm-up cell(s) (matrix.warmup)", n)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "  the first round's settings (drawn with the seed):")
	for _, st := range sp.FirstCandidates() {
		flags, err := sp.Flags(st)
		f := strings.Join(flags, " ")
		if err != nil {
			f = err.Error()
		}
		fmt.Fprintf(w, "    %-44s %s\n", st.Item, f)
	}
}

// clusterEval runs the tune's cells as ordinary runs of the suite on the connected cluster.
type clusterEval struct {
	a       *app
	cluster provider.Cluster
	cfg     *config.Resolved
	s       suites.Suite
	sp      *tune.Spec
	dir     string
	warmup  int
	runs    int
	// rounds are the search rounds' results.json, confirm the confirmation's.
	rounds     []string
	confirm    string
	notes      []string
	cellErrors []string
}

// Evaluate runs one search round: none and the candidates, reps repetitions each, in rounds
// (repetition r of every setting back to back, in an order shuffled per round with the seed).
func (e *clusterEval) Evaluate(ctx context.Context, cands []tune.Setting, reps int) ([]tune.Observation, error) {
	label := fmt.Sprintf("round-%d", len(e.rounds)+1)
	res, path, err := e.runOnce(ctx, label, cands, reps, false, nil)
	e.rounds = append(e.rounds, path)
	return e.observe(res, cands), err
}

// Confirm runs the confirmation: none and the winner under design, as one run.
func (e *clusterEval) Confirm(ctx context.Context, w tune.Setting, d *stats.Sequential) ([]tune.Observation, error) {
	var stopOn []string
	if !d.Fixed {
		stopOn = []string{e.sp.Objective}
	}
	res, path, err := e.runOnce(ctx, "confirm", []tune.Setting{w}, d.MaxReps, !d.Fixed, stopOn)
	e.confirm = path
	return e.observe(res, []tune.Setting{w}), err
}

// runOnce plans and runs one run of the suite and writes its results under dir/label.
func (e *clusterEval) runOnce(ctx context.Context, label string, cands []tune.Setting, reps int, sequential bool, stopOn []string) (*results.Results, string, error) {
	items := []string{"none"}
	for _, c := range cands {
		items = append(items, c.Item)
	}
	e.runs++
	cfg := roundConfig(e.cfg, items, reps, sequential, stopOn, e.warmup, e.sp.Seed+int64(e.runs))
	if e.warmup > 0 {
		e.notes = append(e.notes, fmt.Sprintf("%s began with %d unmeasured warm-up cell(s) of none (matrix.warmup), outside the budget; the later runs found the cluster warm", label, e.warmup))
	}
	e.warmup = 0
	plan, err := e.s.Plan(cfg, e.a.planContext(ctx))
	if err != nil {
		return nil, "", fmt.Errorf("%s: plan: %w", label, err)
	}
	if plan.Design == nil {
		// The fixed design shuffles every cell in one order; the tune compares each repetition
		// with the baseline's of its round, so it runs them in rounds.
		plan.Cells = byRounds(plan.Cells, rand.New(rand.NewPCG(uint64(cfg.Matrix.Seed), 0x726f756e64)))
	}
	e.a.progress().Printf("tune %s: %s x %d repetitions", label, strings.Join(items, ", "), reps)
	res, err := e.a.execute(ctx, e.cluster, cfg, e.s, plan)
	if res == nil {
		return nil, "", err
	}
	res.CellAxes, res.AxisPrimary = plan.Axes, plan.Primary
	out, ferr := pipeline.Finish(res, nil, pipeline.Options{Dir: filepath.Join(e.dir, label), NoGates: true, Stdout: e.a.stdout, Stderr: e.a.stderr})
	for _, ce := range out.CellErrors {
		e.cellErrors = append(e.cellErrors, label+": "+ce)
	}
	if res.Incomplete != "" && err == nil {
		err = fmt.Errorf("%s: %s", label, res.Incomplete)
	}
	return res, out.Results, errors.Join(err, ferr)
}

// byRounds orders cells in rounds: repetition r of every setting together, shuffled per round.
func byRounds(cells []suites.PlannedCell, rng *rand.Rand) []suites.PlannedCell {
	out := append([]suites.PlannedCell(nil), cells...)
	slices.SortStableFunc(out, func(a, b suites.PlannedCell) int { return a.Rep - b.Rep })
	for i := 0; i < len(out); {
		j := i
		for j < len(out) && out[j].Rep == out[i].Rep {
			j++
		}
		round := out[i:j]
		rng.Shuffle(len(round), func(x, y int) { round[x], round[y] = round[y], round[x] })
		i = j
	}
	return out
}

// observe turns a run's measured cells into the tune's observations: the objective and the
// constraints' metrics of each repetition (NaN where a cell has none).
func (e *clusterEval) observe(res *results.Results, cands []tune.Setting) []tune.Observation {
	if res == nil {
		return nil
	}
	index := map[string]int{"none": tune.Baseline}
	for i, c := range cands {
		index[c.Item] = i
	}
	var out []tune.Observation
	for i := range res.Cells {
		c := &res.Cells[i]
		k, ok := index[c.Name]
		if !ok || c.NotApplicable != "" || c.Error != "" {
			continue
		}
		obj, ok := analysis.CellMetric(c, e.sp.Objective)
		if !ok {
			obj = math.NaN()
		}
		o := tune.Observation{Candidate: k, Rep: c.Rep, Objective: obj, Metrics: map[string]float64{}}
		for _, con := range e.sp.Constraints {
			v, _ := analysis.CellMetric(c, con.Metric)
			o.Metrics[con.Metric] = v
		}
		out = append(out, o)
	}
	return out
}
