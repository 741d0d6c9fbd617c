package brakes

import (
	"fmt"
	"math"
	"time"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/results"
)

// replenishDelay is agent-sandbox's refill hold: after members leave the pool (a burst adopts
// them) replacement creates wait D (v0.5.5 and later).
type replenishDelay struct{}

func init() { register(replenishDelay{}) }

func (replenishDelay) Name() string { return "replenish-delay" }

type replenishDelaySettings struct {
	Delay time.Duration `mapstructure:"replenishDelay"`
}

func (replenishDelay) Settings() any { return &replenishDelaySettings{} }

func (replenishDelay) Setting(s config.Section) (string, string, error) {
	return setting(s, "brakes.replenishDelay", func(st replenishDelaySettings) (string, error) {
		if st.Delay <= 0 || st.Delay > 24*time.Hour {
			return "", fmt.Errorf("expected a positive duration up to 24h")
		}
		return st.Delay.String(), nil
	})
}

// Space: holds from 0.5 s to 60 s on the log scale (longer than a burst's adoption phase at the
// top, a fraction of it at the bottom).
func (replenishDelay) Space() Dimension {
	return Dimension{Key: "brakes.replenishDelay", Kind: KindDuration, Lo: 0.5, Hi: 60, Log: true, Default: "no delay"}
}

func (replenishDelay) Flags(v string) []string {
	return []string{"--sandbox-warm-pool-replenish-delay=" + v}
}

// Evidence: the first refill create must come ~D after the burst.
func (replenishDelay) Evidence(c *results.Cell, v string) (bool, string, bool) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return false, "unreadable delay " + v, false
	}
	start := c.Stats.RefillStartSeconds
	seen := "-"
	if start != nil {
		seen = fmt.Sprintf("%.1fs", *start)
	}
	return start != nil && *start >= 0.9*d.Seconds(), fmt.Sprintf("first refill create seen %s after the burst (delay %s)", seen, d), true
}

func (replenishDelay) Marks(v string) []Mark {
	d, err := time.ParseDuration(v)
	if err != nil {
		return nil
	}
	return []Mark{{Axis: "x", Value: d.Seconds(), Label: "brake: replenish-delay " + v}}
}

func (replenishDelay) OperandKey() (string, string) { return "replenish_delay", "ms" }

func (replenishDelay) OperandValue(v string) float64 {
	d, err := time.ParseDuration(v)
	if err != nil {
		return math.NaN()
	}
	return float64(d) / float64(time.Millisecond)
}
