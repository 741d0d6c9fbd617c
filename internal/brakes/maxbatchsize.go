package brakes

import (
	"fmt"
	"math"
	"strconv"

	"github.com/brakebench/brakebench/internal/catalog"
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/results"
)

// maxBatchSize is agent-sandbox's cap on the sandboxes one warm-pool reconcile pass creates or
// deletes (--sandbox-warm-pool-max-batch-size, default 300, v0.4 and later). With the
// expectations gate (v0.5.5) the next pass waits until the previous pass's creates are observed,
// so a refill of N advances in ceil(N/B) round trips of at most B creates each.
type maxBatchSize struct{}

func init() { register(maxBatchSize{}) }

func (maxBatchSize) Name() string { return "max-batch-size" }

type maxBatchSizeSettings struct {
	Size int `mapstructure:"maxBatchSize"`
}

func (maxBatchSize) Settings() any { return &maxBatchSizeSettings{} }

func (maxBatchSize) Setting(s config.Section) (string, string, error) {
	return setting(s, "brakes.maxBatchSize", func(st maxBatchSizeSettings) (string, error) {
		if st.Size < 1 || st.Size > 100000 {
			return "", fmt.Errorf("expected a batch size of 1 to 100000 sandboxes")
		}
		return strconv.Itoa(st.Size), nil
	})
}

// Space: passes of 10 to 300 sandboxes (300: the controller's default) on the log scale.
func (maxBatchSize) Space() Dimension {
	return Dimension{Key: "brakes.maxBatchSize", Kind: KindInt, Lo: 10, Hi: 300, Log: true, Default: "300"}
}

func (maxBatchSize) Flags(v string) []string {
	return []string{"--sandbox-warm-pool-max-batch-size=" + v}
}

// Evidence, from the controller's own log of its create passes after the burst: no pass above B
// (held), and at least one pass of exactly B while more than B sandboxes were refilled (bound:
// the refill needed more than one pass). A pass at B with B or fewer refilled is the deficit,
// not the cap.
func (maxBatchSize) Evidence(c *results.Cell, v string) (bool, string, bool) {
	b, err := strconv.Atoi(v)
	if err != nil {
		return false, "unreadable batch size " + v, false
	}
	passes := c.Stats.CreatePasses
	if passes == nil {
		return false, "no create passes: the controller's log cannot be read on this cluster", false
	}
	largest, atCap, total := 0, 0, 0
	for _, n := range passes {
		largest, total = max(largest, n), total+n
		if n == b {
			atCap++
		}
	}
	return largest <= b && atCap > 0 && total > b,
		fmt.Sprintf("%d create passes after the burst, largest %d (cap %d), %d at the cap, %d sandboxes", len(passes), largest, b, atCap, total), true
}

// Metrics: the largest create pass and the number of passes after T0 (from the controller's log).
func (maxBatchSize) Metrics() []catalog.Metric {
	return []catalog.Metric{
		{Key: "controller.create_pass_max", Unit: "sandboxes", Value: func(c *results.Cell) float64 {
			if c.Stats.CreatePasses == nil {
				return math.NaN()
			}
			m := 0
			for _, n := range c.Stats.CreatePasses {
				m = max(m, n)
			}
			return float64(m)
		}},
		{Key: "controller.create_passes", Unit: "passes", Value: func(c *results.Cell) float64 {
			if c.Stats.CreatePasses == nil {
				return math.NaN()
			}
			return float64(len(c.Stats.CreatePasses))
		}},
	}
}

func (maxBatchSize) OperandKey() (string, string) { return "max_batch_size", "" }

func (maxBatchSize) OperandValue(v string) float64 {
	b, err := strconv.Atoi(v)
	if err != nil {
		return math.NaN()
	}
	return float64(b)
}
