package recorder

import (
	"testing"
	"time"
	"unsafe"
)

func TestInterner(t *testing.T) {
	in := newInterner(2)
	data := func(s string) *byte { return unsafe.StringData(s) }
	a := in.str(string([]byte("warm")))
	cases := []struct {
		name   string
		s      string
		shared bool // the first copy comes back
	}{
		{"a value seen before", string([]byte("warm")), true},
		{"a second distinct value", string([]byte("cold")), false},
		{"past max distinct values", string([]byte("other")), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := in.str(tc.s)
			if got != tc.s {
				t.Fatalf("str(%q) = %q", tc.s, got)
			}
			if shared := data(got) == data(a); shared != tc.shared {
				t.Errorf("str(%q) shares the first copy: %v, want %v", tc.s, shared, tc.shared)
			}
		})
	}
	if got := in.str(string([]byte("other"))); len(in.strs) != 2 || got != "other" {
		t.Errorf("past max: %d values kept, got %q", len(in.strs), got)
	}
	if in.str("") != "" || in.list(nil) != nil {
		t.Error("empty values are not kept")
	}
	l1 := in.list([]string{"a", "b"})
	if l2 := in.list([]string{"a", "b"}); &l2[0] != &l1[0] {
		t.Error("an equal list is not shared")
	}
	if l3 := in.list([]string{"a"}); len(l3) != 1 || &l3[0] == &l1[0] {
		t.Errorf("a different list: %v", l3)
	}
}

func TestCompactTimes(t *testing.T) {
	r := &Recorder{epoch: time.Now().Add(-time.Millisecond)}
	now := time.Now()
	harness := func(t time.Time) time.Time { return r.harness(r.stamp(t)) }
	server := func(t time.Time) time.Time { return toServerTime(t).Time() }
	cases := []struct {
		name  string
		in    time.Time
		round func(time.Time) time.Time
	}{
		{"harness time", now, harness},
		{"server time", time.Date(2026, 12, 1, 12, 0, 0, 500, time.UTC), server},
		{"server zero time", time.Time{}, server},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.round(tc.in); !got.Equal(tc.in) || got.IsZero() != tc.in.IsZero() {
				t.Errorf("round trip of %v = %v", tc.in, got)
			}
		})
	}
	if !r.harness(0).IsZero() {
		t.Error("harness time 0 is not the zero time")
	}
	// A harness time keeps its monotonic reading: durations between observations are the
	// monotonic clock's, as time.Now's are.
	later := now.Add(1500 * time.Microsecond)
	if d := r.harness(r.stamp(later)).Sub(r.harness(r.stamp(now))); d != 1500*time.Microsecond {
		t.Errorf("duration between harness times %s, want 1.5ms", d)
	}
	if r.stamp(now) == 0 {
		t.Error("an observation after the epoch is stamped 0 (the zero time)")
	}
}
