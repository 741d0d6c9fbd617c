package brakes

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brakebench/brakebench/internal/config"
)

// Every brake with a number, a duration or no value is tunable, and its space is one the brake's
// own Setting accepts at both ends: a range tune would search but the brake refuses is a bug here,
// not an error in the middle of a search.
func TestSpaces(t *testing.T) {
	cfg, err := config.Loader{}.Load()
	if err != nil {
		t.Fatal(err)
	}
	tun := Tunables()
	for _, want := range []string{"max-refill-rate", "replenish-delay", "kube-api-qps", "max-batch-size", "api-connections",
		"write-behind-window", "disable-claim-events", "separate-watch-connection", "cache-label-selectors", "disable-claim-observability-annotations"} {
		if !slices.Contains(tun, want) {
			t.Errorf("tunables %v lack %s", tun, want)
		}
	}
	if slices.Contains(tun, "apf-insulation") {
		t.Errorf("apf-insulation (an overlay, not a flag) must not be tunable")
	}
	for _, n := range tun {
		b, _ := Get(n)
		d := b.(Tunable).Space()
		if d.Default == "" {
			t.Errorf("%s: no default in words", n)
		}
		if d.Kind == KindBool {
			if d.Key != "" {
				t.Errorf("%s: a switch names key %s", n, d.Key)
			}
			if _, err := WithValue(b, cfg.Brakes, "1"); err == nil || !strings.Contains(err.Error(), "switch") {
				t.Errorf("%s: a switch took a value: %v", n, err)
			}
			continue
		}
		if !(d.Lo > 0 && d.Lo < d.Hi) {
			t.Errorf("%s: range [%g, %g]", n, d.Lo, d.Hi)
		}
		for _, x := range []float64{d.Lo, d.Hi} {
			v := strconv.FormatFloat(x, 'f', -1, 64)
			if d.Kind == KindDuration {
				v = time.Duration(x * float64(time.Second)).String()
			}
			s, err := WithValue(b, cfg.Brakes, v)
			if err != nil {
				t.Fatalf("%s=%s: %v", n, v, err)
			}
			got, key, err := b.Setting(s)
			if err != nil || key != d.Key {
				t.Errorf("%s=%s: setting %q key %s err %v; want the brake to read %s", n, v, got, key, err, d.Key)
			}
			if !strings.HasPrefix(got, strings.Split(v, "/")[0]) && d.Kind != KindDuration {
				t.Errorf("%s=%s: the setting is %q, not the inline value", n, v, got)
			}
		}
	}
}
