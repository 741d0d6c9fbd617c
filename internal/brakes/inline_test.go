package brakes

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/results"
)

// Inline values: one plan holds several settings of one brake; each value is checked by the
// brake's own Setting, and the error names the item.
func TestInlineValues(t *testing.T) {
	cfg, err := config.Loader{}.Load()
	if err != nil {
		t.Fatal(err)
	}
	ok := []struct {
		item     string
		flags    []string
		settings map[string]string
	}{
		{"max-refill-rate=20", []string{"--sandbox-warm-pool-max-refill-rate=20"}, map[string]string{"max-refill-rate": "20"}},
		{"max-refill-rate=2.5", []string{"--sandbox-warm-pool-max-refill-rate=2.5"}, map[string]string{"max-refill-rate": "2.5"}},
		{"replenish-delay=5s+max-refill-rate=40", []string{"--sandbox-warm-pool-max-refill-rate=40", "--sandbox-warm-pool-replenish-delay=5s"},
			map[string]string{"max-refill-rate": "40", "replenish-delay": "5s"}},
		// The configured value still serves a part without one.
		{"replenish-delay=1500ms+max-refill-rate", []string{"--sandbox-warm-pool-max-refill-rate=10", "--sandbox-warm-pool-replenish-delay=1.5s"},
			map[string]string{"max-refill-rate": "10", "replenish-delay": "1.5s"}},
		// kube-api-qps: the rate inline, the burst from brakes.kubeAPIBurst.
		{"kube-api-qps=80", []string{"--kube-api-qps=80", "--kube-api-burst=100"}, map[string]string{"kube-api-qps": "80/100"}},
		{"max-batch-size=25+disable-claim-events", []string{"--disable-claim-events", "--sandbox-warm-pool-max-batch-size=25"},
			map[string]string{"disable-claim-events": "true", "max-batch-size": "25"}},
	}
	for _, tc := range ok {
		cb, err := Resolve(cfg, tc.item, nil)
		if err != nil {
			t.Errorf("%s: %v", tc.item, err)
			continue
		}
		if got := cb.Flags(); !slices.Equal(got, tc.flags) {
			t.Errorf("%s: flags %v, want %v", tc.item, got, tc.flags)
		}
		if got := cb.Result().Settings; len(got) != len(tc.settings) {
			t.Errorf("%s: settings %v, want %v", tc.item, got, tc.settings)
		} else {
			for k, v := range tc.settings {
				if got[k] != v {
					t.Errorf("%s: settings %v, want %v", tc.item, got, tc.settings)
				}
			}
		}
		if cb.Item != tc.item {
			t.Errorf("item %q recorded as %q", tc.item, cb.Item)
		}
	}
	bad := []struct{ item, want string }{
		{"max-refill-rate=0", `"max-refill-rate=0": max-refill-rate=0: expected a positive rate`},
		{"max-refill-rate=fast", `max-refill-rate=fast: expected a number`},
		{"replenish-delay=5", `replenish-delay=5: expected a duration`},
		{"replenish-delay=48h", `expected a positive duration up to 24h`},
		{"max-refill-rate=2/3", `expected a value of letters, digits and '.' after max-refill-rate=`},
		{"max-refill-rate=", `expected a value of letters, digits and '.'`},
		{"max-refill-rate=1_2", `expected a value of letters, digits and '.'`},
		{"disable-claim-events=true", `disable-claim-events is a switch and takes no value`},
		{"apf-insulation=on", `apf-insulation takes no inline value`},
		{"max-refill-rate=5+max-refill-rate=10", `names max-refill-rate twice`},
		{"warp-drive=9", `expected items from none`},
		{"both=3", `expected items from none`},
	}
	for _, tc := range bad {
		_, err := Resolve(cfg, tc.item, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !config.IsConfigError(err) {
			t.Errorf("%s: err %v, want a config error containing %q", tc.item, err, tc.want)
		}
	}
	// An inline rate does not hide a burst the brake refuses: that error names the burst's key.
	low, err := config.Loader{Sets: []string{"brakes.kubeAPIBurst=0"}}.Load()
	if err == nil {
		_, err = Resolve(low, "kube-api-qps=80", nil)
	}
	if err == nil || !strings.Contains(err.Error(), `"brakes.kubeAPIBurst"`) {
		t.Errorf("burst 0 with an inline rate: %v", err)
	}
}

// A gate's brake.KEY has one value per run: a run holding two settings of a brake has none.
func TestOperandValuesOfSeveralSettings(t *testing.T) {
	cell := func(v string) results.Cell {
		return results.Cell{Brake: results.Brake{Settings: map[string]string{"max-refill-rate": v, "replenish-delay": "5s"}}}
	}
	got := OperandValues([]results.Cell{cell("20"), cell("20")})
	if got["max_refill_rate"] != 20 || got["replenish_delay"] != 5000 {
		t.Fatalf("one setting: %v", got)
	}
	got = OperandValues([]results.Cell{cell("20"), cell("40"), {}})
	if _, ok := got["max_refill_rate"]; ok || got["replenish_delay"] != 5000 {
		t.Fatalf("two settings of max-refill-rate: %v", got)
	}
	if math.IsNaN(got["replenish_delay"]) {
		t.Fatal("NaN operand")
	}
}
