package brakes

import (
	"testing"

	"github.com/brakebench/brakebench/internal/results"
)

func TestDisableClaimEvents(t *testing.T) {
	checkFlagBrake(t, "disable-claim-events", nil, []string{"--disable-claim-events"})
	b, _ := Get("disable-claim-events")
	e := b.(Evidencer)
	n := func(v int) *int { return &v }
	tests := []struct {
		name        string
		events      *int
		engaged, ok bool
	}{
		{"not counted", nil, false, false},
		{"no Event about a claim", n(0), true, true},
		{"Events about claims: the flag did not bind", n(12), false, true},
	}
	for _, tc := range tests {
		c := &results.Cell{}
		c.Stats.ClaimEvents = tc.events
		if engaged, text, ok := e.Evidence(c, "true"); engaged != tc.engaged || ok != tc.ok {
			t.Errorf("%s: engaged %v ok %v (%s), want %v %v", tc.name, engaged, ok, text, tc.engaged, tc.ok)
		}
	}
}
