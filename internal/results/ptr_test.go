package results

import (
	"math"
	"testing"
)

func f64(v float64) *float64 { return &v }

func TestOrNaN(t *testing.T) {
	tests := []struct {
		name string
		p    *float64
		want float64 // NaN: the result must be NaN
	}{
		{"not measured", nil, math.NaN()},
		{"zero is a measurement", f64(0), 0},
		{"a value", f64(12.5), 12.5},
		{"a negative value", f64(-3), -3},
		{"NaN stays NaN", f64(math.NaN()), math.NaN()},
	}
	for _, tc := range tests {
		got := OrNaN(tc.p)
		if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && got != tc.want) {
			t.Errorf("%s: OrNaN = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFormatSecs(t *testing.T) {
	tests := []struct {
		name string
		p    *float64
		want string
	}{
		{"not measured", nil, "-"},
		{"zero", f64(0), "0.0 s"},
		{"rounded to a tenth", f64(12.34), "12.3 s"},
		{"rounded up", f64(0.96), "1.0 s"},
		{"large", f64(3600), "3600.0 s"},
	}
	for _, tc := range tests {
		if got := FormatSecs(tc.p); got != tc.want {
			t.Errorf("%s: FormatSecs = %q, want %q", tc.name, got, tc.want)
		}
	}
}
