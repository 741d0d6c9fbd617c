package brakes

import (
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/results"
)

func TestWriteBehind(t *testing.T) {
	checkFlagBrake(t, "write-behind-window", nil, []string{"--sandbox-write-behind-window=250ms"})
	checkFlagBrake(t, "write-behind-window", []string{"brakes.writeBehindWindow=1s"}, []string{"--sandbox-write-behind-window=1s"})
	checkSettingError(t, "write-behind-window", []string{"brakes.writeBehindWindow=2m"}, "brakes.writeBehindWindow")
	checkSettingError(t, "write-behind-window", []string{"brakes.writeBehindWindow=soon"}, "brakes.writeBehindWindow")
	b, _ := Get("write-behind-window")
	c := &results.Cell{}
	c.Stats.Writes = &results.Writes{PerClaim: map[string]float64{"sandboxes.patch": 2}}
	if engaged, text, ok := b.(Evidencer).Evidence(c, "250ms"); engaged || ok || !strings.Contains(text, "sandbox PATCHes per claim here 2.00") {
		t.Errorf("evidence %v %v %q: want not judged, with the PATCHes quoted", engaged, ok, text)
	}
	if v := b.(Operand).OperandValue("250ms"); v != 250 {
		t.Errorf("operand %v ms", v)
	}
}
