//go:build race

package tune

// raceEnabled: the race detector slows the simulations about tenfold.
const raceEnabled = true
