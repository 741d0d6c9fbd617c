// Package ceiling finds the highest sustained claim rate that still meets a stated criterion
// (the "ceiling", or knee, of a warm-pool cell) and its uncertainty over repetitions. It holds the
// pure algorithm only: the search over offered rates (Search), the judgement of one probe's
// steady part (Criteria.Judge) and the estimate over repetitions (Aggregate). Running a probe
// against a cluster is the suites' job.
//
// One repetition of a ceiling cell is one Search: open-loop probes at increasing rates, geometric
// steps (Start, Start x Factor, ...) while every probe passes, then bisection at the geometric
// midpoint between the highest rate that passed and the lowest that failed, until that bracket
// is within Tolerance, Max has passed, Start has failed, or MaxProbes probes have run. Each
// repetition gives a bracket [Pass, Fail] holding its knee; Aggregate combines the repetitions'
// brackets, the repetition being the unit of inference as everywhere in brakebench.
package ceiling

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Config of one search (one repetition of a ceiling cell).
type Config struct {
	Start     float64 `json:"start"`     // first offered rate, claims/s (>0)
	Factor    float64 `json:"factor"`    // geometric step while every probe passed (>1, e.g. 2)
	Max       float64 `json:"max"`       // highest rate ever offered (>=Start)
	Tolerance float64 `json:"tolerance"` // bisection stops when lowestFail/highestPass <= 1+Tolerance (e.g. 0.15)
	MaxProbes int     `json:"maxProbes"` // hard cap on probes per search
}

// Validate says what is wrong with c, every problem at once, each naming its field.
func (c Config) Validate() error {
	var errs []error
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if !finite(c.Start) || c.Start <= 0 {
		errs = append(errs, fmt.Errorf("ceiling: Start %v must be a finite rate above 0 claims/s (the first rate offered)", c.Start))
	}
	if !finite(c.Factor) || c.Factor <= 1 {
		errs = append(errs, fmt.Errorf("ceiling: Factor %v must be above 1 (the geometric step while every probe passes)", c.Factor))
	}
	if !finite(c.Max) || c.Max < c.Start {
		errs = append(errs, fmt.Errorf("ceiling: Max %v must be a finite rate at or above Start %v (the highest rate ever offered)", c.Max, c.Start))
	}
	if !finite(c.Tolerance) || c.Tolerance <= 0 {
		errs = append(errs, fmt.Errorf("ceiling: Tolerance %v must be above 0 (bisection stops when lowest failing / highest passing rate <= 1+Tolerance)", c.Tolerance))
	}
	if c.MaxProbes < 1 {
		errs = append(errs, fmt.Errorf("ceiling: MaxProbes %d must be at least 1 (the cap on probes per search)", c.MaxProbes))
	}
	return errors.Join(errs...)
}

// Probe is one probe's outcome as recorded.
type Probe struct {
	Rate   float64 `json:"rate"`   // offered rate, claims/s
	OK     bool    `json:"ok"`     // the probe met the criterion
	Reason string  `json:"reason"` // Criteria.Judge's reason
}

// End says why a search ended.
type End string

// How a search ends.
const (
	EndTolerance End = "tolerance" // the bracket [Pass, Fail] is within 1+Tolerance
	EndMax       End = "max"       // Max met the criterion: the knee is at or above it (Fail is +Inf)
	EndStart     End = "start"     // the first rate offered broke the criterion: the knee is below it (Pass is 0)
	EndProbes    End = "probes"    // MaxProbes probes ran before any of the above
)

// Result of one search.
type Result struct {
	// Pass is the highest rate that met the criterion below Fail (0 if none); Fail the lowest
	// rate that broke it (+Inf if none). The repetition's knee lies in [Pass, Fail].
	Pass, Fail float64
	Probes     []Probe
	End        End    // why it ended; "" while it runs
	Stop       string // why it ended, a sentence; "" while it runs
}

// Search is one repetition's search over offered rates. Call Next for the rate to probe, run
// the probe, Record its outcome, until Next says done; then Result.
type Search struct {
	cfg    Config
	probes []Probe
}

// New starts a search; the error is c.Validate's.
func New(c Config) (*Search, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &Search{cfg: c}, nil
}

// Config is the search's configuration.
func (s *Search) Config() Config { return s.cfg }

// Next is the rate of the next probe; done when the search is settled (bracket within
// tolerance, Max passed, Start failed, or MaxProbes reached; Result says why), with rate 0 then.
// The first probe is Start; while every probe passed, the highest passing rate times Factor
// (capped at Max); after a failure, the geometric midpoint sqrt(Pass x Fail) of the bracket.
func (s *Search) Next() (rate float64, done bool) {
	pass, fail := s.bracket()
	if e, _ := s.end(pass, fail); e != "" {
		return 0, true
	}
	switch {
	case len(s.probes) == 0 || pass == 0:
		return s.cfg.Start, false
	case math.IsInf(fail, 1):
		return math.Min(pass*s.cfg.Factor, s.cfg.Max), false
	}
	return math.Sqrt(pass * fail), false
}

// Record adds a probe's outcome. rate should be the one Next returned; any rate is kept as
// recorded and the bracket follows from all of them: Fail is the lowest failing rate and Pass
// the highest passing rate below it (a pass above a failure, which this search never probes,
// does not raise Pass).
func (s *Search) Record(rate float64, ok bool, reason string) {
	s.probes = append(s.probes, Probe{Rate: rate, OK: ok, Reason: reason})
}

// Result is the search's bracket, its probes in order and, once settled, why it ended.
func (s *Search) Result() Result {
	pass, fail := s.bracket()
	e, stop := s.end(pass, fail)
	return Result{Pass: pass, Fail: fail, Probes: append([]Probe(nil), s.probes...), End: e, Stop: stop}
}

func (s *Search) bracket() (pass, fail float64) {
	fail = math.Inf(1)
	for _, p := range s.probes {
		if !p.OK && p.Rate < fail {
			fail = p.Rate
		}
	}
	for _, p := range s.probes {
		if p.OK && p.Rate < fail && p.Rate > pass {
			pass = p.Rate
		}
	}
	return pass, fail
}

// end is why the search is settled ("" while it is not) and the sentence saying so. A settled
// bracket wins over the probe cap when both hold.
func (s *Search) end(pass, fail float64) (End, string) {
	n := len(s.probes)
	switch {
	case n == 0:
		return "", ""
	case pass == 0 && !math.IsInf(fail, 1):
		return EndStart, fmt.Sprintf("The first rate offered, %s claims/s, broke the criterion: the ceiling is below it (lower the start rate to find it).", Rate(fail))
	case math.IsInf(fail, 1) && pass >= s.cfg.Max:
		return EndMax, fmt.Sprintf("Every probe up to the highest rate allowed, %s claims/s, met the criterion: the ceiling is at or above it (raise the maximum to find it).", Rate(pass))
	case fail/pass <= 1+s.cfg.Tolerance:
		return EndTolerance, fmt.Sprintf("Settled after %d probes: %s claims/s met the criterion and %s claims/s broke it, within the %.0f%% tolerance.", n, Rate(pass), Rate(fail), s.cfg.Tolerance*100)
	case n >= s.cfg.MaxProbes:
		if math.IsInf(fail, 1) {
			return EndProbes, fmt.Sprintf("Stopped at the cap of %d probes with no failure yet: %s claims/s met the criterion, the ceiling is at or above it.", n, Rate(pass))
		}
		return EndProbes, fmt.Sprintf("Stopped at the cap of %d probes before the tolerance: %s claims/s met the criterion and %s claims/s broke it (ratio %.2f, tolerance %.0f%%).", n, Rate(pass), Rate(fail), fail/pass, s.cfg.Tolerance*100)
	}
	return "", ""
}

// Rate formats a rate in claims/s: three significant digits below 100 ("84.1", "2.5"), whole
// numbers from 100 on ("1200", never "1.2e+03").
func Rate(r float64) string {
	switch {
	case math.IsInf(r, 1):
		return "+Inf"
	case math.IsNaN(r):
		return "NaN"
	case r >= 99.95:
		return strconv.FormatFloat(math.Round(r), 'f', -1, 64)
	}
	return strconv.FormatFloat(r, 'g', 3, 64)
}
