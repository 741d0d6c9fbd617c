package brakes

import (
	"testing"

	"github.com/brakebench/brakebench/internal/results"
)

func TestSeparateWatch(t *testing.T) {
	checkFlagBrake(t, "separate-watch-connection", nil, []string{"--separate-watch-connection"})
	b, _ := Get("separate-watch-connection")
	if _, text, ok := b.(Evidencer).Evidence(&results.Cell{}, "true"); ok || text == "" {
		t.Errorf("evidence ok %v %q: want a stated reason it cannot be judged", ok, text)
	}
}
