package brakes

import (
	"testing"

	"github.com/brakebench/brakebench/internal/results"
)

func TestAPIConnections(t *testing.T) {
	checkFlagBrake(t, "api-connections", nil, []string{"--api-connections=4"})
	checkFlagBrake(t, "api-connections", []string{"brakes.apiConnections=8"}, []string{"--api-connections=8"})
	checkSettingError(t, "api-connections", []string{"brakes.apiConnections=1"}, "brakes.apiConnections")
	b, _ := Get("api-connections")
	if _, text, ok := b.(Evidencer).Evidence(&results.Cell{}, "4"); ok || text == "" {
		t.Errorf("evidence ok %v %q: want a stated reason it cannot be judged", ok, text)
	}
	if v := b.(Operand).OperandValue("4"); v != 4 {
		t.Errorf("operand %v", v)
	}
}
