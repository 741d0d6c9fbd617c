package brakes

import (
	"fmt"
	"math"
	"time"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/results"
)

// writeBehind is agent-sandbox's --sandbox-write-behind-window=D (v0.5.5, v1.0.1): the sandbox
// controller coalesces its recoverable metadata-only writes (sandbox and pod PATCHes) within D.
type writeBehind struct{}

func init() { register(writeBehind{}) }

func (writeBehind) Name() string { return "write-behind-window" }

type writeBehindSettings struct {
	Window time.Duration `mapstructure:"writeBehindWindow"`
}

func (writeBehind) Settings() any { return &writeBehindSettings{} }

func (writeBehind) Setting(s config.Section) (string, string, error) {
	return setting(s, "brakes.writeBehindWindow", func(st writeBehindSettings) (string, error) {
		if st.Window <= 0 || st.Window > time.Minute {
			return "", fmt.Errorf("expected a positive duration up to 1m")
		}
		return st.Window.String(), nil
	})
}

// Space: windows from 50 ms to 2 s on the log scale.
func (writeBehind) Space() Dimension {
	return Dimension{Key: "brakes.writeBehindWindow", Kind: KindDuration, Lo: 0.05, Hi: 2, Log: true, Default: "off"}
}

func (writeBehind) Flags(v string) []string { return []string{"--sandbox-write-behind-window=" + v} }

// Evidence: none a cell can give alone. What the window coalesces are PATCHes the controller
// would otherwise send, and a cell without the window is what they are counted against: compare
// writes.sandboxes.patch_per_claim and writes.pods.patch_per_claim with the baseline cell.
func (writeBehind) Evidence(c *results.Cell, v string) (bool, string, bool) {
	return false, fmt.Sprintf("not judged in one cell: the PATCHes a %s window coalesces are counted against the baseline cell (sandbox PATCHes per claim here %s, pod PATCHes %s)",
		v, perClaim(c, "sandboxes.patch"), perClaim(c, "pods.patch")), false
}

func (writeBehind) OperandKey() (string, string) { return "write_behind_window", "ms" }

func (writeBehind) OperandValue(v string) float64 {
	d, err := time.ParseDuration(v)
	if err != nil {
		return math.NaN()
	}
	return float64(d) / float64(time.Millisecond)
}
