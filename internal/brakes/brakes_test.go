package brakes

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/catalog"
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/results"
)

func TestBatchSizeEvidence(t *testing.T) {
	cases := []struct {
		name    string
		passes  []int
		engaged *bool
	}{
		{"no log", nil, nil},
		{"capped refill of 300 in passes of 50", []int{50, 50, 50, 50, 50, 50}, ptr(true)},
		{"a pass above the cap", []int{50, 120, 50, 80}, ptr(false)},
		{"deficit never reached the cap", []int{20, 10}, ptr(false)},
		{"one pass at the cap and nothing more", []int{50}, ptr(false)},
		{"no refill at all", []int{}, ptr(false)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &results.Cell{Brake: results.Brake{Settings: map[string]string{"max-batch-size": "50"}}}
			c.Stats.CreatePasses = tc.passes
			got, text := Evidence(c)
			if fmt.Sprint(deref(got)) != fmt.Sprint(deref(tc.engaged)) {
				t.Fatalf("engaged %v (%s), want %v", deref(got), text, deref(tc.engaged))
			}
		})
	}
}

// A combination is engaged only when every judged part bound; parts that cannot be judged
// (no log) do not count either way.
func TestCombinationEvidence(t *testing.T) {
	start := 16.0
	c := &results.Cell{Brake: results.Brake{Settings: map[string]string{"max-batch-size": "50", "replenish-delay": "15s"}}}
	c.Stats.RefillStartSeconds = &start
	if got, text := Evidence(c); got == nil || !*got {
		t.Fatalf("delay bound, batch size not judged: want engaged, got %v (%s)", deref(got), text)
	}
	c.Stats.CreatePasses = []int{300}
	if got, text := Evidence(c); got == nil || *got {
		t.Fatalf("a pass of 300 under a cap of 50: want not engaged, got %v (%s)", deref(got), text)
	}
}

func TestMetricsAndMarks(t *testing.T) {
	keys := map[string]catalog.Metric{}
	for _, m := range catalog.Default.Metrics() {
		keys[m.Key] = m
	}
	c := &results.Cell{}
	if v := keys["controller.create_pass_max"].Value(c); !math.IsNaN(v) {
		t.Fatalf("no log must be NaN, got %v", v)
	}
	c.Stats.CreatePasses = []int{10, 50, 30}
	if v := keys["controller.create_pass_max"].Value(c); v != 50 {
		t.Fatalf("largest pass %v, want 50", v)
	}
	// An older results.json's fields become settings, and so marks.
	marks := Marks(results.Brake{MaxRefillRate: 3, ReplenishDelay: "15s"})
	if fmt.Sprint(marks) != "[{y 3 brake: max-refill-rate 3/s} {x 15 brake: replenish-delay 15s}]" {
		t.Fatalf("marks %v", marks)
	}
	// Every flag-only brake is an item, the brake that installs objects is not; the list grows
	// with each brake type, so it is checked by property, not spelled out.
	items := Items(FlagsOnly)
	for _, want := range []string{"none", "max-batch-size", "max-refill-rate", "replenish-delay", "both"} {
		if !slices.Contains(items, want) {
			t.Errorf("flag-only items %v lack %s", items, want)
		}
	}
	if slices.Contains(items, "apf-insulation") {
		t.Errorf("flag-only items %v hold apf-insulation, which installs objects", items)
	}
}

func ptr(b bool) *bool { return &b }

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

// checkFlagBrake resolves matrix.brakes=name with sets on the default config and checks the
// controller flags it gives; a brake type's own test calls it.
func checkFlagBrake(t *testing.T, name string, sets []string, want []string) {
	t.Helper()
	cfg, err := config.Loader{Sets: append([]string{"matrix.brakes=" + name}, sets...)}.Load()
	if err != nil {
		t.Fatal(err)
	}
	cb, err := Resolve(cfg, name, nil)
	if err != nil {
		t.Fatalf("resolve %s: %v", name, err)
	}
	if got := cb.Flags(); !slices.Equal(got, want) {
		t.Errorf("%s flags %v, want %v", name, got, want)
	}
}

// checkSettingError resolves matrix.brakes=name with sets and wants an error naming key.
func checkSettingError(t *testing.T, name string, sets []string, key string) {
	t.Helper()
	cfg, err := config.Loader{Sets: append([]string{"matrix.brakes=" + name}, sets...)}.Load()
	if err == nil {
		_, err = Resolve(cfg, name, nil)
	}
	if err == nil || !strings.Contains(err.Error(), key) {
		t.Errorf("%s with %v: err %v, want one naming %s", name, sets, err, key)
	}
}
