package ceiling

import (
	"math"
	"strings"
	"testing"
)

// run drives a search against a deterministic knee: a probe passes iff its rate is below knee.
func run(t *testing.T, c Config, knee float64) (rates []float64, r Result) {
	t.Helper()
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		rate, done := s.Next()
		if done {
			if rate != 0 {
				t.Errorf("Next returned rate %v with done", rate)
			}
			return rates, s.Result()
		}
		rates = append(rates, rate)
		s.Record(rate, rate < knee, "")
	}
	t.Fatalf("search did not end in 100 probes: %v", rates)
	return nil, Result{}
}

func TestSearch(t *testing.T) {
	base := Config{Start: 5, Factor: 2, Max: 1000, Tolerance: 0.15, MaxProbes: 20}
	sq := math.Sqrt
	// Bisection at K=100 from the bracket [80, 160]: 113.1 fails, 95.1 passes, 103.7 fails,
	// 103.7/95.1 = 1.09 <= 1.15.
	b1 := sq(80 * 160)
	b2 := sq(80 * b1)
	b3 := sq(b2 * b1)
	// K=80 on the grid: 80 fails, then 56.6, 67.3, 73.4 pass; 80/73.4 = 1.09.
	g1 := sq(40 * 80)
	g2 := sq(g1 * 80)
	g3 := sq(g2 * 80)
	tests := []struct {
		name       string
		cfg        func(Config) Config
		knee       float64
		want       []float64
		pass, fail float64
		end        End
		stop       string
	}{
		{"geometric then bisection", nil, 100, []float64{5, 10, 20, 40, 80, 160, b1, b2, b3}, b2, b3, EndTolerance, "within the 15% tolerance"},
		{"knee on the grid fails there", nil, 80, []float64{5, 10, 20, 40, 80, g1, g2, g3}, g3, 80, EndTolerance, "Settled after 8 probes"},
		{"tolerance reached in the geometric phase", func(c Config) Config { c.Factor = 1.1; return c }, 6,
			[]float64{5, 5.5, 6.05}, 5.5, 6.05, EndTolerance, "met the criterion and 6.05 claims/s broke it"},
		{"Max passed", func(c Config) Config { c.Max = 300; return c }, 1e9, []float64{5, 10, 20, 40, 80, 160, 300}, 300, math.Inf(1), EndMax, "at or above it"},
		{"Start == Max passed", func(c Config) Config { c.Max = 5; return c }, 1e9, []float64{5}, 5, math.Inf(1), EndMax, "5 claims/s"},
		{"Start failed", nil, 1, []float64{5}, 0, 5, EndStart, "The first rate offered, 5 claims/s, broke the criterion"},
		{"MaxProbes before any failure", func(c Config) Config { c.MaxProbes = 4; return c }, 100, []float64{5, 10, 20, 40}, 40, math.Inf(1), EndProbes, "cap of 4 probes with no failure"},
		{"MaxProbes inside the bisection", func(c Config) Config { c.MaxProbes = 7; return c }, 100, []float64{5, 10, 20, 40, 80, 160, b1}, 80, b1, EndProbes, "before the tolerance"},
		{"settling on the last allowed probe is settled", func(c Config) Config { c.MaxProbes = 9; return c }, 100, []float64{5, 10, 20, 40, 80, 160, b1, b2, b3}, b2, b3, EndTolerance, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			if tc.cfg != nil {
				c = tc.cfg(c)
			}
			rates, r := run(t, c, tc.knee)
			if len(rates) != len(tc.want) {
				t.Fatalf("probes %v, want %v", rates, tc.want)
			}
			for i := range rates {
				if math.Abs(rates[i]-tc.want[i]) > 1e-9*tc.want[i] {
					t.Fatalf("probes %v, want %v", rates, tc.want)
				}
			}
			if math.Abs(r.Pass-tc.pass) > 1e-9*tc.pass || (r.Fail != tc.fail && math.Abs(r.Fail-tc.fail) > 1e-9*tc.fail) {
				t.Errorf("bracket [%v, %v], want [%v, %v]", r.Pass, r.Fail, tc.pass, tc.fail)
			}
			if r.End != tc.end || !strings.Contains(r.Stop, tc.stop) || !strings.HasSuffix(r.Stop, ".") {
				t.Errorf("end %q %q, want %q containing %q", r.End, r.Stop, tc.end, tc.stop)
			}
			if len(r.Probes) != len(rates) {
				t.Errorf("%d probes recorded, want %d", len(r.Probes), len(rates))
			}
			if r.End == EndTolerance && r.Fail/r.Pass > 1+c.Tolerance {
				t.Errorf("settled at ratio %v above 1+%v", r.Fail/r.Pass, c.Tolerance)
			}
			if r.Pass >= tc.knee || r.Fail < tc.knee {
				t.Errorf("bracket [%v, %v] does not hold the knee %v", r.Pass, r.Fail, tc.knee)
			}
		})
	}
}

// The bracket of a deterministic knee always holds it and, when settled by tolerance, Pass is
// within the tolerance below it, wherever the knee falls against the grid.
func TestSearchBracketsEveryKnee(t *testing.T) {
	c := Config{Start: 1, Factor: 2, Max: 5000, Tolerance: 0.1, MaxProbes: 30}
	for k := 1.01; k < 4000; k *= 1.037 {
		_, r := run(t, c, k)
		if r.End != EndTolerance || r.Pass >= k || r.Fail < k || r.Pass < k/(1+c.Tolerance) {
			t.Fatalf("knee %v: bracket [%v, %v] %s", k, r.Pass, r.Fail, r.End)
		}
	}
}

func TestSearchRunning(t *testing.T) {
	s, err := New(Config{Start: 10, Factor: 2, Max: 100, Tolerance: 0.1, MaxProbes: 5})
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Result(); r.Pass != 0 || !math.IsInf(r.Fail, 1) || r.End != "" || r.Stop != "" {
		t.Errorf("before any probe: %+v", r)
	}
	s.Record(10, true, "met")
	if r := s.Result(); r.End != "" || r.Stop != "" || r.Probes[0].Reason != "met" {
		t.Errorf("running: %+v", r)
	}
	// A pass above a failure (which the search never asks for) does not raise Pass.
	s.Record(40, false, "broke")
	s.Record(80, true, "noise")
	if r := s.Result(); r.Pass != 10 || r.Fail != 40 {
		t.Errorf("bracket [%v, %v], want [10, 40]", r.Pass, r.Fail)
	}
	if rate, done := s.Next(); done || rate != 20 {
		t.Errorf("Next %v %v, want 20 (sqrt(10 x 40))", rate, done)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Start: 5, Factor: 2, Max: 1000, Tolerance: 0.15, MaxProbes: 20}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	tests := []struct {
		name string
		mod  func(*Config)
		want []string
	}{
		{"zero start", func(c *Config) { c.Start = 0 }, []string{"Start 0"}},
		{"NaN start", func(c *Config) { c.Start = math.NaN() }, []string{"Start NaN"}},
		{"factor 1", func(c *Config) { c.Factor = 1 }, []string{"Factor 1 must be above 1"}},
		{"max below start", func(c *Config) { c.Max = 4 }, []string{"Max 4 must be", "Start 5"}},
		{"infinite max", func(c *Config) { c.Max = math.Inf(1) }, []string{"Max +Inf"}},
		{"zero tolerance", func(c *Config) { c.Tolerance = 0 }, []string{"Tolerance 0"}},
		{"no probes", func(c *Config) { c.MaxProbes = 0 }, []string{"MaxProbes 0"}},
		{"all at once", func(c *Config) { *c = Config{} }, []string{"Start", "Factor", "Tolerance", "MaxProbes"}},
	}
	for _, tc := range tests {
		c := ok
		tc.mod(&c)
		err := c.Validate()
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", tc.name, err, w)
			}
		}
		if _, nerr := New(c); nerr == nil {
			t.Errorf("%s: New accepted it", tc.name)
		}
	}
}

func TestRate(t *testing.T) {
	for _, tc := range []struct {
		r    float64
		want string
	}{{84.123, "84.1"}, {2.5, "2.5"}, {99.96, "100"}, {1234.4, "1234"}, {0.125, "0.125"}, {math.Inf(1), "+Inf"}} {
		if got := Rate(tc.r); got != tc.want {
			t.Errorf("Rate(%v) = %q, want %q", tc.r, got, tc.want)
		}
	}
}
