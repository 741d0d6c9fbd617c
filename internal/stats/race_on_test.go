//go:build race

package stats

// raceDetector is true when the tests were built with -race.
const raceDetector = true
