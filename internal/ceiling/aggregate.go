package ceiling

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/brakebench/brakebench/internal/stats"
	"gonum.org/v1/gonum/stat/distuv"
)

// Estimate of a cell's ceiling over its repetitions (each repetition is one search).
type Estimate struct {
	// Ceiling is the geometric mean of the repetitions' Pass: rates the repetitions showed they
	// sustain, so conservative: below the knee by up to one bracket (1+Tolerance) when
	// repetitions agree; noise between them can put it above (TestAggregateFindsPlantedKnee
	// prints how often it is at or below the knee, and within [knee/(1+tol)^2, knee x (1+tol)]).
	// 0 when a repetition broke the criterion at Start; NaN with no repetitions.
	Ceiling float64
	// Lo and Hi bound the knee at Confidence (the rule is Aggregate's). Lo is 0 when a
	// repetition broke the criterion at Start, Hi +Inf when one never broke it; NaN when there
	// are too few repetitions for a bound, except that a single one-sided repetition states its
	// own bound (Lo its Pass with Hi +Inf, or Lo 0 with Hi its Fail).
	Lo, Hi     float64
	Confidence float64
	N          int // repetitions with at least one probe
	Finite     int // of them, with a finite bracket (0 < Pass, Fail < +Inf)
	// AtLeast: some repetition never broke the criterion (it met Max, or the probe cap came
	// first): the knee may lie above everything offered, Hi is +Inf. AtLeast alone (every
	// repetition so) is the one-sided answer ">= Lo".
	AtLeast bool
	// Below: some repetition broke the criterion at Start: Ceiling and Lo are 0. Below alone
	// (every repetition so) is the one-sided answer "< Hi".
	Below bool
	// Insufficient: fewer than 2 repetitions with a finite bracket, and not every repetition
	// one-sided the same way: no interval can be stated.
	Insufficient bool
	Text         string // the estimate in a sentence, with each repetition's bracket
}

// Aggregate combines repetitions' searches into an estimate of the knee: the typical (geometric
// mean over repetitions) rate at which the criterion breaks.
//
// The rule. Each repetition r gives a bracket [Pass_r, Fail_r] holding its own knee (up to the
// probe-to-probe noise of that repetition), so log Pass_r is at or below log knee_r and log
// Fail_r at or above it. The interval is
//
//	Lo = exp(mean log Pass - t * sd(log Pass)/sqrt(n)),  Hi = exp(mean log Fail + t * sd(log Fail)/sqrt(n))
//
// with t the Student t quantile at 1-(1-confidence)/2 on n-1 degrees of freedom: one-sided
// bounds, each at 1-(1-confidence)/2, of the expected log Pass (at or below the log knee) and
// of the expected log Fail (at or above it). Lo can be above the knee only by being above the
// expected log Pass, probability (1-confidence)/2 under the t model; likewise Hi; so [Lo, Hi]
// holds the knee with probability at least confidence (Bonferroni), more when brackets are wide
// against the spread. Its width is the mean bracket plus the spread between repetitions: both
// are real. Two things the argument idealizes, checked by simulation instead
// (TestAggregateFindsPlantedKnee, 1000 cells per scenario, R = 3-5, noise 0-10% per repetition
// and per probe, tolerance 5-30%): probe noise can let a Pass land above its repetition's knee,
// and the grid makes repetitions' brackets coincide rather than vary independently. Coverage of
// the planted knee at confidence 0.95 was 0.96-1.00 in every scenario.
//
// Why not a t interval of the midpoints (or of Pass) alone: the search's rates come from a
// deterministic grid (Start x Factor^k, then midpoints), so repetitions whose knees are close
// share a bracket, and where inside it the knee lies is the same unknown for all of them: it does
// not average out, and a t interval of identical midpoints has zero width anywhere in the
// bracket. Why not the mean bracket alone: it ignores the spread between repetitions. The
// simulations in the tests show each of these failing to cover a planted knee where this rule
// does.
//
// Censored repetitions keep the rule valid: a repetition that met Max (or stopped at the probe
// cap before any failure) has Fail +Inf, so Hi is +Inf (AtLeast); one that broke at Start has
// Pass 0, so Lo and Ceiling are 0 (Below). Every repetition censored the same way is a one-sided
// answer (">= Lo" or "< Hi") and says so; no number is made up for the open side. Fewer than 2
// finite brackets otherwise is Insufficient. A confidence outside (0, 1) means 0.95.
func Aggregate(results []Result, confidence float64) Estimate {
	if !(confidence > 0 && confidence < 1) {
		confidence = 0.95
	}
	e := Estimate{Confidence: confidence, Ceiling: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	var passes, fails []float64
	for _, r := range results {
		if len(r.Probes) == 0 {
			continue
		}
		passes, fails = append(passes, r.Pass), append(fails, r.Fail)
		switch {
		case r.Pass <= 0:
			e.Below = true
		case math.IsInf(r.Fail, 1):
			e.AtLeast = true
		default:
			e.Finite++
		}
	}
	e.N = len(passes)
	if e.N == 0 {
		e.Insufficient = true
		e.Text = "insufficient repetitions: none probed"
		return e
	}
	alpha := (1 - confidence) / 2
	e.Ceiling, e.Lo = geoMean(passes), lowerBound(passes, alpha)
	e.Hi = upperBound(fails, alpha)
	if e.N == 1 && e.Finite == 0 {
		// One one-sided repetition: its own bound is the statement (it met Pass, or broke at Fail).
		e.Lo, e.Hi = passes[0], fails[0]
	}
	brackets := bracketsText(passes, fails)
	pct := confidence * 100
	switch {
	case e.Below && !e.AtLeast && e.Finite == 0:
		e.Text = fmt.Sprintf("below %s claims/s (%s): every repetition (%d) broke the criterion at the first rate offered; lower the start rate to find the ceiling. Repetitions: %s",
			Rate(e.Hi), boundKind("upper", e.N, pct), e.N, brackets)
	case e.AtLeast && !e.Below && e.Finite == 0:
		e.Text = fmt.Sprintf("at least %s claims/s (%s): no repetition (%d) broke the criterion up to the highest rate it offered; raise the maximum to find the ceiling. Repetitions: %s",
			Rate(e.Lo), boundKind("lower", e.N, pct), e.N, brackets)
	case e.Finite < 2:
		e.Insufficient = true
		e.Text = fmt.Sprintf("insufficient repetitions: %d of %d with a finite bracket, at least 2 needed for an interval. Repetitions: %s", e.Finite, e.N, brackets)
	default:
		e.Text = fmt.Sprintf("ceiling %s claims/s (geometric mean of %d repetitions' highest passing rate); the knee lies in [%s, %s] claims/s (%.0f%%). Repetitions: %s",
			Rate(e.Ceiling), e.N, Rate(e.Lo), Rate(e.Hi), pct, brackets)
		var open []string
		if e.AtLeast {
			open = append(open, fmt.Sprintf("open above: %d of %d repetitions never broke the criterion", countInf(fails), e.N))
		}
		if e.Below {
			open = append(open, fmt.Sprintf("open below: %d of %d repetitions broke it at the first rate offered", countZero(passes), e.N))
		}
		if len(open) > 0 {
			e.Text += " (" + strings.Join(open, "; ") + ")"
		}
	}
	return e
}

// boundKind says what a one-sided bound is: a t bound at pct over n >= 2 repetitions, or the
// single repetition's own.
func boundKind(side string, n int, pct float64) string {
	if n < 2 {
		return "one repetition's " + side + " bound"
	}
	return fmt.Sprintf("%s bound, %.0f%%", side, pct)
}

// geoMean of positive values; 0 when any is 0; exactly the value when all are the same.
func geoMean(xs []float64) float64 {
	if allSame(xs) {
		return xs[0]
	}
	s := 0.0
	for _, x := range xs {
		if x <= 0 {
			return 0
		}
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(xs)))
}

// tBound is exp(mean log xs + sign x t_{1-alpha, n-1} x sd/sqrt(n)) for n >= 2 positive finite
// values (exactly the value when all are the same); NaN for fewer.
func tBound(xs []float64, alpha, sign float64) float64 {
	n := len(xs)
	switch {
	case n < 2:
		return math.NaN()
	case allSame(xs):
		return xs[0]
	}
	m, v := 0.0, 0.0
	for _, x := range xs {
		m += math.Log(x)
	}
	m /= float64(n)
	for _, x := range xs {
		d := math.Log(x) - m
		v += d * d
	}
	sd := math.Sqrt(v / float64(n-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(1 - alpha)
	return math.Exp(m + sign*t*sd/math.Sqrt(float64(n)))
}

// lowerBound of the knee from the Pass values: 0 when any is 0 (the knee may be anywhere below
// Start); else the t bound (NaN for fewer than 2).
func lowerBound(passes []float64, alpha float64) float64 {
	if countZero(passes) > 0 {
		return 0
	}
	return tBound(passes, alpha, -1)
}

// upperBound of the knee from the Fail values: +Inf when any is +Inf; else the t bound (NaN for
// fewer than 2).
func upperBound(fails []float64, alpha float64) float64 {
	if countInf(fails) > 0 {
		return math.Inf(1)
	}
	return tBound(fails, alpha, 1)
}

func allSame(xs []float64) bool {
	for _, x := range xs {
		if x != xs[0] {
			return false
		}
	}
	return len(xs) > 0
}

func countZero(xs []float64) (n int) {
	for _, x := range xs {
		if x <= 0 {
			n++
		}
	}
	return n
}

func countInf(xs []float64) (n int) {
	for _, x := range xs {
		if math.IsInf(x, 1) {
			n++
		}
	}
	return n
}

func bracketsText(passes, fails []float64) string {
	parts := make([]string, len(passes))
	for i := range passes {
		parts[i] = fmt.Sprintf("[%s, %s]", Rate(passes[i]), Rate(fails[i]))
	}
	return strings.Join(parts, " ")
}

type estimateJSON struct {
	Ceiling      stats.Num `json:"ceiling"`
	Lo           stats.Num `json:"lo"`
	Hi           stats.Num `json:"hi"`
	Confidence   float64   `json:"confidence"`
	N            int       `json:"n"`
	Finite       int       `json:"finite"`
	AtLeast      bool      `json:"atLeast,omitempty"`
	Below        bool      `json:"below,omitempty"`
	Insufficient bool      `json:"insufficient,omitempty"`
	Text         string    `json:"text"`
}

// MarshalJSON writes +Inf as "+Inf" and NaN as null (stats.Num), which encoding/json refuses.
func (e Estimate) MarshalJSON() ([]byte, error) {
	return json.Marshal(estimateJSON{stats.Num(e.Ceiling), stats.Num(e.Lo), stats.Num(e.Hi), e.Confidence, e.N, e.Finite, e.AtLeast, e.Below, e.Insufficient, e.Text})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *Estimate) UnmarshalJSON(b []byte) error {
	var j estimateJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = Estimate{float64(j.Ceiling), float64(j.Lo), float64(j.Hi), j.Confidence, j.N, j.Finite, j.AtLeast, j.Below, j.Insufficient, j.Text}
	return nil
}

type resultJSON struct {
	Pass   stats.Num `json:"pass"`
	Fail   stats.Num `json:"fail"`
	Probes []Probe   `json:"probes"`
	End    End       `json:"end,omitempty"`
	Stop   string    `json:"stop,omitempty"`
}

// MarshalJSON writes a Fail of +Inf as "+Inf" (stats.Num), which encoding/json refuses.
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(resultJSON{stats.Num(r.Pass), stats.Num(r.Fail), r.Probes, r.End, r.Stop})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *Result) UnmarshalJSON(b []byte) error {
	var j resultJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = Result{float64(j.Pass), float64(j.Fail), j.Probes, j.End, j.Stop}
	return nil
}
