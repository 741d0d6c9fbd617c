package brakes

import (
	"fmt"
	"math"
	"strconv"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/results"
)

// RateTolerance is how far a refill create ceiling over 5 s may exceed max-refill-rate R and
// still count as held: the token bucket starts full with capacity max(1, R), so 5 s may legally
// hold R + 5R creates (1.2 R/s); and a sandbox's creationTimestamp is when the API server received
// the create, up to a round trip after the controller's limiter granted it (hundreds of ms on a
// loaded lab), so one second's grants (R) can land in the next 1 s bin: (6R + R) / 5 = 1.4 R/s.
// (1.25 failed a clean-clone CI run at R = 3 with 19 creates in a 5 s window, 3.8/s.)
const RateTolerance = 1.4

// maxRefillRate is agent-sandbox's refill token bucket: at most R pool sandboxes created per
// second while the pool refills (v0.5.5 and later).
type maxRefillRate struct{}

func init() { register(maxRefillRate{}) }

func (maxRefillRate) Name() string { return "max-refill-rate" }

type maxRefillRateSettings struct {
	Rate float64 `mapstructure:"maxRefillRate"`
}

func (maxRefillRate) Settings() any { return &maxRefillRateSettings{} }

func (maxRefillRate) Setting(s config.Section) (string, string, error) {
	return setting(s, "brakes.maxRefillRate", func(st maxRefillRateSettings) (string, error) {
		if !(st.Rate > 0) || st.Rate > 100000 {
			return "", fmt.Errorf("expected a positive rate in sandboxes/s, at most 100000")
		}
		return strconv.FormatFloat(st.Rate, 'f', -1, 64), nil
	})
}

// Space: refill rates from 1 to 200 sandboxes/s on the log scale (the seeds' per-pool refill
// ceiling is ~70-85 creates/s; below 1/s a 300-member pool takes minutes to refill).
func (maxRefillRate) Space() Dimension {
	return Dimension{Key: "brakes.maxRefillRate", Kind: KindFloat, Lo: 1, Hi: 200, Log: true, Default: "no limit"}
}

func (maxRefillRate) Flags(v string) []string {
	return []string{"--sandbox-warm-pool-max-refill-rate=" + v}
}

// Evidence: the cap must hold the refill create ceiling near R while more than one bucket's worth
// was refilled (a cap that never binds measures nothing).
func (maxRefillRate) Evidence(c *results.Cell, v string) (bool, string, bool) {
	r, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return false, "unreadable rate " + v, false
	}
	refilled := 0.0
	for _, n := range c.Timeline.RefillCreates {
		refilled += n
	}
	ceil := c.Stats.Ceilings.RefillCreate5s
	held := ceil <= RateTolerance*r
	return held && refilled > math.Max(1, r),
		fmt.Sprintf("refill creates held at %.1f/s over 5 s (cap %.4g/s, tolerance x%.2f) across %d refill creates", ceil, r, RateTolerance, int(refilled)), true
}

func (maxRefillRate) Marks(v string) []Mark {
	r, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return nil
	}
	return []Mark{{Axis: "y", Value: r, Label: fmt.Sprintf("brake: max-refill-rate %g/s", r)}}
}

func (maxRefillRate) OperandKey() (string, string) { return "max_refill_rate", "" }

func (maxRefillRate) OperandValue(v string) float64 {
	r, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return math.NaN()
	}
	return r
}
