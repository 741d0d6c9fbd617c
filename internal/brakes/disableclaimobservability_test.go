package brakes

import (
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/results"
)

func TestDisableClaimObservability(t *testing.T) {
	checkFlagBrake(t, "disable-claim-observability-annotations", nil, []string{"--disable-claim-observability-annotations"})
	b, _ := Get("disable-claim-observability-annotations")
	c := &results.Cell{}
	c.Stats.Total, c.Stats.ClaimAnnotations = 10, map[string]int{observabilityAnnotation: 10}
	c.Stats.Writes = &results.Writes{PerClaim: map[string]float64{"sandboxclaims.patch": 1.8}}
	if engaged, text, ok := b.(Evidencer).Evidence(c, "true"); engaged || ok || !strings.Contains(text, "10 of 10 claims carry it") || !strings.Contains(text, "1.80 here") {
		t.Errorf("evidence %v %v %q: want not judged, quoting the annotations and the claim PATCHes", engaged, ok, text)
	}
}
