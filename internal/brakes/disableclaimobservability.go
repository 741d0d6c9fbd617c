package brakes

import (
	"fmt"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/results"
)

// observabilityAnnotation is what the claim controller writes on each claim it first observes
// (extensions/controllers ObservabilityAnnotation in v0.5.5 and v1.0.1). Named here, not
// imported from internal/sut/agentsandbox: this package stays free of client-go.
const observabilityAnnotation = "agents.x-k8s.io/controller-first-observed-at"

// disableClaimObservability is agent-sandbox's --disable-claim-observability-annotations
// (v0.5.5, v1.0.1): the claim controller no longer persists its first-observed annotation, one
// PATCH per claim before adoption. A switch: no setting, no defaults file.
type disableClaimObservability struct{}

func init() { register(disableClaimObservability{}) }

func (disableClaimObservability) Name() string { return "disable-claim-observability-annotations" }

func (disableClaimObservability) Setting(config.Section) (string, string, error) {
	return "true", "", nil
}

// Space: a switch, searched as on or off.
func (disableClaimObservability) Space() Dimension { return Dimension{Kind: KindBool, Default: "off"} }

func (disableClaimObservability) Flags(string) []string {
	return []string{"--disable-claim-observability-annotations"}
}

// Evidence: none a cell can give alone. The flag skips the claim controller's dedicated PATCH
// of its first-observed annotation, but the annotation still reaches the claim with the
// controller's next write of the object (measured on the lab at v0.5.5: 10 of 10 claims carried
// it with the flag on), so its absence cannot show the flag; what it saves is claim PATCHes per
// claim against the baseline cell (the same run there: 2.4 without, 1.8 with).
func (disableClaimObservability) Evidence(c *results.Cell, _ string) (bool, string, bool) {
	n := "-"
	if c.Stats.ClaimAnnotations != nil {
		n = fmt.Sprint(c.Stats.ClaimAnnotations[observabilityAnnotation])
	}
	return false, fmt.Sprintf("not judged in one cell: the annotation still lands with the controller's next write (%s of %d claims carry it); compare claim PATCHes per claim, %s here, with the baseline",
		n, c.Stats.Total, perClaim(c, "sandboxclaims.patch")), false
}
