package tune

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/brakes"
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/stats"
)

// Dim is one searched brake: its space (brakes.Tunable) with the range in use.
type Dim struct {
	Brake string `json:"brake"`
	brakes.Dimension
}

// Constraint is one of tune.constraints: Metric Op Bound, the bound a number in the metric's
// unit or Factor times the baseline's value (Relative).
type Constraint struct {
	Text     string  `json:"text"`
	Metric   string  `json:"metric"`
	Unit     string  `json:"unit"`
	Op       string  `json:"op"` // <=, <, >=, >
	Bound    float64 `json:"bound,omitempty"`
	Relative bool    `json:"relative,omitempty"`
	Factor   float64 `json:"factor,omitempty"`
}

// Spec is a tune's checked input.
type Spec struct {
	Dims          []Dim
	Objective     string // the summary metric minimised
	ObjectiveUnit string
	Constraints   []Constraint
	Budget        int // measured cells of the search, baseline included
	Candidates    int // first-round candidates; 0: sized from Budget (Plan)
	ConfirmReps   int
	Seed          int64
	// Paired says the evaluator runs repetition r of every candidate and of the baseline in the
	// same round, so each is compared with the baseline's repetition of its round.
	Paired bool
	// Design is the confirmation's design (a sequential design, or the fixed one at ConfirmReps).
	Design *stats.Sequential
	cfg    *config.Resolved
}

var (
	rangeRe      = regexp.MustCompile(`^([a-z0-9-]+)=([0-9A-Za-z.]+)\.\.([0-9A-Za-z.]+)$`)
	constraintRe = regexp.MustCompile(`^([A-Za-z0-9_.-]+?)\s*(<=|>=|<|>)\s*(.+)$`)
)

// FromConfig checks cfg's tune section against the brake registry and the metric catalogue and
// returns the search it asks for. Every error is a config.Error naming the key, where it came
// from and what was expected (exit 2 before anything touches a cluster).
func FromConfig(cfg *config.Resolved) (*Spec, error) {
	t := cfg.Tune
	sp := &Spec{Budget: t.Budget, Candidates: t.Candidates, ConfirmReps: t.ConfirmRepetitions, Paired: true, cfg: cfg}
	if len(t.Brakes) == 0 {
		return nil, cfg.Fail("tune.brakes", nil, "expected a non-empty list of tunable brakes from %s", strings.Join(brakes.Tunables(), ", "))
	}
	for _, n := range t.Brakes {
		b, ok := brakes.Get(n)
		tb, tunable := b.(brakes.Tunable)
		if !ok || !tunable {
			return nil, cfg.Fail("tune.brakes", nil, "expected tunable brakes from %s, got %q", strings.Join(brakes.Tunables(), ", "), n)
		}
		if slices.ContainsFunc(sp.Dims, func(d Dim) bool { return d.Brake == n }) {
			return nil, cfg.Fail("tune.brakes", nil, "brake %q is listed twice", n)
		}
		sp.Dims = append(sp.Dims, Dim{Brake: n, Dimension: tb.Space()})
	}
	seen := map[string]bool{}
	for _, r := range t.Ranges {
		if err := sp.applyRange(r, seen); err != nil {
			return nil, cfg.Fail("tune.ranges", nil, "%v", err)
		}
	}
	// Every end of every range must be a setting the brake takes (the brake's own Setting).
	for _, d := range sp.Dims {
		if d.Kind == brakes.KindBool {
			continue
		}
		for _, x := range []float64{d.Lo, d.Hi} {
			if _, err := sp.resolve(Setting{Values: map[string]string{d.Brake: d.exact(x)}}); err != nil {
				key := "tune.brakes"
				if seen[d.Brake] {
					key = "tune.ranges"
				}
				return nil, cfg.Fail(key, nil, "the range of %s [%s, %s] holds a setting the brake refuses: %v", d.Brake, d.exact(d.Lo), d.exact(d.Hi), errText(err))
			}
		}
	}
	units := analysis.MetricUnits()
	obj, unit, ok := metricKey(t.Objective, units)
	if !ok || (unit != "ms" && unit != "s") {
		return nil, cfg.Fail("tune.objective", nil, "expected a latency or duration metric of the summary to minimise (unit ms or s: claim.p99_ms, claim.p50_ms, pool.refill_s, ...), got %q", t.Objective)
	}
	sp.Objective, sp.ObjectiveUnit = obj, unit
	for i, c := range t.Constraints {
		con, err := parseConstraint(c, units)
		if err != nil {
			return nil, cfg.Fail("tune.constraints", nil, "item %d: %v", i, err)
		}
		sp.Constraints = append(sp.Constraints, con)
	}
	checks := []struct {
		bad       bool
		key, want string
		got       any
	}{
		{t.Budget < 2 || t.Budget > 10000, "tune.budget", "2 to 10000 cells (one cell: one repetition of one setting; the baseline's count)", t.Budget},
		{t.Candidates != 0 && (t.Candidates < 1 || t.Candidates > 1000), "tune.candidates", "0 (sized from tune.budget) or 1 to 1000", t.Candidates},
		{t.Candidates != 0 && t.Candidates+1 > t.Budget, "tune.candidates", fmt.Sprintf("at most tune.budget-1 = %d (each candidate and the baseline need a cell in the first round)", t.Budget-1), t.Candidates},
		{t.ConfirmRepetitions < stats.MinReps || t.ConfirmRepetitions > 1000, "tune.confirmRepetitions", fmt.Sprintf("%d to 1000 (the confirmation's test needs %d repetitions a side)", stats.MinReps, stats.MinReps), t.ConfirmRepetitions},
		{cfg.Matrix.Sequential && t.ConfirmRepetitions > stats.MaxSeqReps, "tune.confirmRepetitions", fmt.Sprintf("%d to %d with matrix.sequential true (the planned maximum of the sequential design)", stats.MinReps, stats.MaxSeqReps), t.ConfirmRepetitions},
		{len(cfg.Controller.Versions) > 1, "controller.versions", "at most one version for tune (it searches one controller's settings; compare versions with run --preset upgrade)", cfg.Controller.Versions},
		{len(cfg.Matrix.ControllerArgs) > 1, "matrix.controllerArgs", "at most one set of flags for tune (every cell gets it)", cfg.Matrix.ControllerArgs},
		{len(cfg.Matrix.Faults) != 1 || cfg.Matrix.Faults[0] != "none", "matrix.faults", "none for tune (a fault cell would multiply every candidate)", cfg.Matrix.Faults},
		{cfg.Workload.Mode == "ceiling", "workload.mode", "burst, poisson or steps for tune (it minimises a latency; a ceiling search finds a rate)", cfg.Workload.Mode},
	}
	for _, ch := range checks {
		if ch.bad {
			return nil, cfg.Fail(ch.key, nil, "expected %s, got %v", ch.want, ch.got)
		}
	}
	sp.Seed = t.Seed
	if sp.Seed == 0 {
		sp.Seed = cfg.Matrix.Seed
	}
	if sp.Seed == 0 {
		sp.Seed = time.Now().UnixNano()%1_000_000_000 + 1
	}
	sp.Design = ConfirmDesign(cfg.Matrix, t.ConfirmRepetitions, analysis.IsVerdictMetric(obj))
	return sp, nil
}

// ConfirmDesign is the confirmation's design: the run's sequential design (matrix.sequential,
// minRepetitions, equivalence, spending, paired) planned to reps and stopping on the objective,
// or the fixed design at reps when matrix.sequential is off, reps is not above
// matrix.minRepetitions, or the objective is not a metric the runner's stopping rule reads
// (claim p50 and p99).
func ConfirmDesign(m config.Matrix, reps int, verdictObjective bool) *stats.Sequential {
	if !m.Sequential || reps <= m.MinRepetitions || !verdictObjective {
		return analysis.FixedDesign(reps)
	}
	return &stats.Sequential{Alpha: 0.05, MinReps: m.MinRepetitions, MaxReps: reps, EquivalencePct: m.Equivalence, Spending: m.Spending, Paired: m.Paired}
}

// errText is a config.Error's message without its source (the tune key is the error's subject).
func errText(err error) string {
	if ce, ok := err.(*config.Error); ok {
		return ce.Msg
	}
	return err.Error()
}

// applyRange reads one tune.ranges item.
func (sp *Spec) applyRange(item string, seen map[string]bool) error {
	m := rangeRe.FindStringSubmatch(strings.TrimSpace(item))
	if m == nil {
		return fmt.Errorf(`expected items "BRAKE=LO..HI" (max-refill-rate=5..80, replenish-delay=1s..30s), got %q`, item)
	}
	i := slices.IndexFunc(sp.Dims, func(d Dim) bool { return d.Brake == m[1] })
	if i < 0 {
		return fmt.Errorf("%q: %s is not in tune.brakes", item, m[1])
	}
	d := &sp.Dims[i]
	if d.Kind == brakes.KindBool {
		return fmt.Errorf("%q: %s is a switch (searched on and off) and has no range", item, d.Brake)
	}
	if seen[d.Brake] {
		return fmt.Errorf("%q: %s has a range already", item, d.Brake)
	}
	seen[d.Brake] = true
	lo, err := d.parse(m[2])
	if err != nil {
		return fmt.Errorf("%q: %v", item, err)
	}
	hi, err := d.parse(m[3])
	if err != nil {
		return fmt.Errorf("%q: %v", item, err)
	}
	if !(lo < hi) || (d.Log && lo <= 0) {
		return fmt.Errorf("%q: expected LO below HI (and above 0: %s is searched on the log scale)", item, d.Brake)
	}
	d.Lo, d.Hi = lo, hi
	return nil
}

// parse reads a value of the dimension's kind (seconds for a duration).
func (d Dim) parse(v string) (float64, error) {
	switch d.Kind {
	case brakes.KindDuration:
		x, err := time.ParseDuration(v)
		if err != nil {
			return 0, fmt.Errorf("expected a duration like 5s or 250ms, got %q", v)
		}
		return x.Seconds(), nil
	case brakes.KindInt:
		x, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("expected a whole number, got %q", v)
		}
		return float64(x), nil
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("expected a number, got %q", v)
	}
	return x, nil
}

// format writes x (in the dimension's unit) as the brake's value: two significant digits (a
// candidate's name stays readable; settings closer than that are not told apart by a benchmark),
// within the range.
func (d Dim) format(x float64) string {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 2, 64), 64)
	return d.exact(math.Min(math.Max(r, d.Lo), d.Hi))
}

// Range is the searched range in the brake's notation ("1..200", "500ms..1m0s", "on/off").
func (d Dim) Range() string {
	if d.Kind == brakes.KindBool {
		return "on/off"
	}
	return d.exact(d.Lo) + ".." + d.exact(d.Hi)
}

// exact writes x as the brake's value, unrounded.
func (d Dim) exact(r float64) string {
	switch d.Kind {
	case brakes.KindInt:
		return strconv.Itoa(int(math.Round(r)))
	case brakes.KindDuration:
		return time.Duration(r * float64(time.Second)).Round(time.Millisecond).String()
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// metricKey finds a summary metric by key, its unit suffix (_ms, _s) optional as in gates.
func metricKey(k string, units map[string]string) (string, string, bool) {
	if u, ok := units[k]; ok {
		return k, u, true
	}
	for _, suf := range []string{"_ms", "_s"} {
		if u, ok := units[k+suf]; ok {
			return k + suf, u, true
		}
	}
	return "", "", false
}

// parseConstraint reads "METRIC<=VALUE" (<, >=, >), VALUE a number, "baseline" or "F*baseline".
func parseConstraint(s string, units map[string]string) (Constraint, error) {
	m := constraintRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return Constraint{}, fmt.Errorf(`expected "METRIC<=VALUE" (or <, >=, >), VALUE a number, baseline or F*baseline (pool.refill_s<=60, cpu.kube-apiserver_s<=1.1*baseline), got %q`, s)
	}
	key, unit, ok := metricKey(m[1], units)
	if !ok {
		var near []string
		for k := range units {
			if strings.HasPrefix(k, strings.SplitN(m[1], ".", 2)[0]+".") {
				near = append(near, k)
			}
		}
		sort.Strings(near)
		hint := ""
		if len(near) > 0 {
			hint = " (known here: " + strings.Join(near, ", ") + ")"
		}
		return Constraint{}, fmt.Errorf("%q: unknown metric %s%s", s, m[1], hint)
	}
	c := Constraint{Text: key + " " + m[2] + " " + strings.ReplaceAll(strings.TrimSpace(m[3]), " ", ""), Metric: key, Unit: unit, Op: m[2]}
	rhs := strings.ReplaceAll(strings.TrimSpace(m[3]), " ", "")
	f, rel := rhs, false
	if rhs == "baseline" {
		f, rel = "1", true
	} else if a, ok := strings.CutSuffix(rhs, "*baseline"); ok {
		f, rel = a, true
	} else if b, ok := strings.CutPrefix(rhs, "baseline*"); ok {
		f, rel = b, true
	}
	x, err := strconv.ParseFloat(f, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || (rel && x <= 0) {
		return Constraint{}, fmt.Errorf("%q: expected a number, baseline or F*baseline (F above 0) right of %s, got %q", s, m[2], m[3])
	}
	if rel {
		c.Relative, c.Factor = true, x
	} else {
		c.Bound = x
	}
	return c, nil
}

// Flags are the controller flags of a setting (none for the baseline).
func (sp *Spec) Flags(s Setting) ([]string, error) {
	cb, err := sp.resolve(s)
	if err != nil {
		return nil, err
	}
	return cb.Flags(), nil
}

// resolve is the setting as matrix.brakes resolves it (the brakes' own checks).
func (sp *Spec) resolve(s Setting) (brakes.Combination, error) {
	return brakes.Resolve(sp.cfg, sp.Item(s), nil)
}
