package brakes

import (
	"fmt"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/results"
)

// disableClaimEvents is agent-sandbox's --disable-claim-events (v0.5.5, v1.0.1): the claim
// controller's Event calls become no-ops, about one Event POST per claim fewer in a burst. A
// switch: no setting, no defaults file.
type disableClaimEvents struct{}

func init() { register(disableClaimEvents{}) }

func (disableClaimEvents) Name() string { return "disable-claim-events" }

func (disableClaimEvents) Setting(config.Section) (string, string, error) { return "true", "", nil }

// Space: a switch, searched as on or off.
func (disableClaimEvents) Space() Dimension { return Dimension{Kind: KindBool, Default: "off"} }

func (disableClaimEvents) Flags(string) []string { return []string{"--disable-claim-events"} }

// Evidence: no Event about any claim of the cell (counted at the end of the cell); the Event
// POSTs per claim are quoted beside it (they include other components' Events, pods' among them).
func (disableClaimEvents) Evidence(c *results.Cell, _ string) (bool, string, bool) {
	if c.Stats.ClaimEvents == nil {
		return false, "the Events about claims could not be counted in this cell", false
	}
	n := *c.Stats.ClaimEvents
	return n == 0, fmt.Sprintf("%d Events about the cell's claims; Event POSTs per claim %s (all components)", n, perClaim(c, "events.post")), true
}
