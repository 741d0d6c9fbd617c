package stats

import "testing"

// simulation marks a Monte Carlo test (thousands of simulated runs through the package's
// functions). Under -race it is skipped: the package starts no goroutines, so the race detector
// has nothing to find in it, and it made these tests 7x slower (111 s against 16 s on the CI
// machine). `make unit` runs this package a second time without -race, so every simulation still
// runs in `make test`.
func simulation(t *testing.T) {
	t.Helper()
	if raceDetector {
		t.Skip("simulation: skipped under -race (make unit runs internal/stats again without it)")
	}
}
