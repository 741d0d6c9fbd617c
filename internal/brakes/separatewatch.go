package brakes

import (
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/results"
)

// separateWatch is agent-sandbox's --separate-watch-connection (v0.5.5, v1.0.1): the informers'
// watch streams get an HTTP/2 connection of their own, so a burst of writes on the shared one
// does not delay watch events. A switch: no setting, no defaults file.
type separateWatch struct{}

func init() { register(separateWatch{}) }

func (separateWatch) Name() string { return "separate-watch-connection" }

func (separateWatch) Setting(config.Section) (string, string, error) { return "true", "", nil }

// Space: a switch, searched as on or off.
func (separateWatch) Space() Dimension { return Dimension{Kind: KindBool, Default: "off"} }

func (separateWatch) Flags(string) []string { return []string{"--separate-watch-connection"} }

// Evidence: none a cell can give: the API server counts no connections per client, and watch
// lag shows only against the baseline (controller claim startup latency, claim latency).
func (separateWatch) Evidence(*results.Cell, string) (bool, string, bool) {
	return false, "not judged in one cell: the API server's metrics count no connections per client; compare controller.claim_startup_p99_ms and claim latency with the baseline", false
}
