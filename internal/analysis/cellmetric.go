package analysis

import (
	"math"

	"github.com/brakebench/brakebench/internal/results"
)

// CellMetric is one repetition's value of a summary metric, as the summary's per-repetition
// values hold it: a latency quantile is the cell's own nearest-rank quantile of its claims (a
// failed claim counts as +Inf, so claim.p99_ms of a cell with a failed claim is +Inf), any
// other metric the cell's value. ok is false when the key is no summary metric, the metric does
// not describe this kind of cell, or the cell has no value for it (NaN).
func CellMetric(c *results.Cell, key string) (v float64, ok bool) {
	for _, d := range metricDefs() {
		if d.key != key {
			continue
		}
		s := d.sample([]*results.Cell{c})
		if len(s.perRep) == 0 || math.IsNaN(s.perRep[0]) {
			return math.NaN(), false
		}
		return s.perRep[0], true
	}
	return math.NaN(), false
}
