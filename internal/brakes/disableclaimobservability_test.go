package brakes

import (
	"testing"

	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
)

func TestDisableClaimObservability(t *testing.T) {
	checkFlagBrake(t, "disable-claim-observability-annotations", nil, []string{"--disable-claim-observability-annotations"})
	b, _ := Get("disable-claim-observability-annotations")
	e := b.(Evidencer)
	tests := []struct {
		name        string
		annotations map[string]int
		engaged, ok bool
	}{
		{"nothing recorded", nil, false, false},
		{"no claim annotated", map[string]int{agentsandbox.ClientRequestedAtAnnot: 10}, true, true},
		{"claims annotated: the flag did not bind", map[string]int{agentsandbox.ClientRequestedAtAnnot: 10, observabilityAnnotation: 10}, false, true},
	}
	for _, tc := range tests {
		c := &results.Cell{}
		c.Stats.Total, c.Stats.ClaimAnnotations = 10, tc.annotations
		if engaged, text, ok := e.Evidence(c, "true"); engaged != tc.engaged || ok != tc.ok {
			t.Errorf("%s: engaged %v ok %v (%s), want %v %v", tc.name, engaged, ok, text, tc.engaged, tc.ok)
		}
	}
}
