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

func (disableClaimObservability) Flags(string) []string {
	return []string{"--disable-claim-observability-annotations"}
}

// Evidence: no claim of the cell carries the annotation (the recorder saw each claim's
// agents.x-k8s.io/ annotations; the generator's own client-first-requested-at on every claim
// shows that it did).
func (disableClaimObservability) Evidence(c *results.Cell, _ string) (bool, string, bool) {
	if c.Stats.ClaimAnnotations == nil {
		return false, "no claim annotations recorded in this cell", false
	}
	n := c.Stats.ClaimAnnotations[observabilityAnnotation]
	return n == 0, fmt.Sprintf("%d of %d claims carry %s; claim PATCHes per claim %s", n, c.Stats.Total, observabilityAnnotation, perClaim(c, "sandboxclaims.patch")), true
}
