package reports

import (
	"strconv"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/results"
)

// invariantOf is a summary's verdict on the invariant key (false when key is no invariant or the
// cell judged no repetition of it).
func invariantOf(s results.Summary, key string) (results.InvariantVerdict, bool) {
	if !analysis.IsInvariant(key) {
		return results.InvariantVerdict{}, false
	}
	for _, iv := range s.Invariants {
		if iv.Key == key {
			return iv, true
		}
	}
	return results.InvariantVerdict{}, false
}

// deltaText is what the table prints after a cell's value: the cell's own verdict for an
// invariant ("held in 5 of 5 repetitions"), the delta against the baseline otherwise.
func deltaText(s results.Summary, m *results.Metric) string {
	if iv, ok := invariantOf(s, m.Key); ok {
		return iv.Text
	}
	return FormatDelta(m.Delta)
}

// invariantCell puts a cell's verdict on an invariant where the report's table has the delta and
// its p-value.
func invariantCell(rc *RowCell, s results.Summary, key string) {
	iv, ok := invariantOf(s, key)
	if !ok {
		return
	}
	ideal := "invariant: ideal " + strconv.FormatFloat(iv.Ideal, 'g', -1, 64)
	if iv.Tolerance > 0 {
		ideal += " ± " + strconv.FormatFloat(iv.Tolerance, 'g', -1, 64)
	}
	rc.Delta, rc.Significant, rc.P, rc.MDE = iv.Text, iv.Violated > 0, ideal, "judged per repetition"
}
