package loadgen

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestSchedules(t *testing.T) {
	cases := []struct {
		name   string
		s      Schedule
		n      int
		end    time.Duration
		maxEnd time.Duration
		sorted bool
	}{
		{"burst releases all at zero", Burst(300), 300, 0, 0, true},
		{"steps: 2/s then 4/s for 5 s each", Steps([]float64{2, 4}, 5*time.Second), 30, 9750 * time.Millisecond, 10 * time.Second, true},
		{"steps: fractional rate rounds down", Steps([]float64{0.5}, 3*time.Second), 1, 0, 3 * time.Second, true},
	}
	for _, c := range cases {
		if len(c.s) != c.n {
			t.Errorf("%s: %d claims, want %d", c.name, len(c.s), c.n)
		}
		if c.s.End() != c.end || c.s.End() > c.maxEnd {
			t.Errorf("%s: End %v, want %v", c.name, c.s.End(), c.end)
		}
		for i := 1; c.sorted && i < len(c.s); i++ {
			if c.s[i] < c.s[i-1] {
				t.Errorf("%s: not in order at %d", c.name, i)
			}
		}
	}
}

func TestPoissonRateAndSeed(t *testing.T) {
	a := Poisson(15, 60*time.Second, rand.New(rand.NewPCG(1, 2)))
	b := Poisson(15, 60*time.Second, rand.New(rand.NewPCG(1, 2)))
	if len(a) != len(b) || a[10] != b[10] {
		t.Fatal("same seed must give the same schedule")
	}
	// 900 expected arrivals; a Poisson count has sd 30, so 5 sd is a generous bound.
	if math.Abs(float64(len(a))-900) > 150 {
		t.Errorf("%d arrivals in 60 s at 15/s", len(a))
	}
	if a.End() >= 60*time.Second {
		t.Errorf("arrival after the window: %v", a.End())
	}
	for i := 1; i < len(a); i++ {
		if a[i] <= a[i-1] {
			t.Fatalf("arrivals not strictly increasing at %d", i)
		}
	}
}
