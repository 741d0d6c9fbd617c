// Package loadgen fires SandboxClaims open-loop: the send schedule is fixed before the first
// request and never waits for earlier requests, so a slow API server shows up as send lag and
// latency rather than silently stretching the schedule (no coordinated omission).
package loadgen

import (
	"math"
	"math/rand/v2"
	"time"
)

// Schedule is the planned send offset of each claim from the start.
type Schedule []time.Duration

// Burst releases n claims together.
func Burst(n int) Schedule { return make(Schedule, n) }

// Poisson draws exponential inter-arrival gaps at rate/s for d.
func Poisson(rate float64, d time.Duration, rng *rand.Rand) Schedule {
	var s Schedule
	t := 0.0
	for {
		t += rng.ExpFloat64() / rate
		if t >= d.Seconds() {
			return s
		}
		s = append(s, time.Duration(t*float64(time.Second)))
	}
}

// Steps holds each rate for d, evenly spaced within the step.
func Steps(rates []float64, d time.Duration) Schedule {
	var s Schedule
	for i, r := range rates {
		base := time.Duration(i) * d
		n := int(math.Floor(r * d.Seconds()))
		for k := 0; k < n; k++ {
			s = append(s, base+time.Duration(float64(k)/r*float64(time.Second)))
		}
	}
	return s
}

// End is the last planned offset.
func (s Schedule) End() time.Duration {
	var m time.Duration
	for _, d := range s {
		m = max(m, d)
	}
	return m
}
