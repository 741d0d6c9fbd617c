package results

import (
	"fmt"
	"math"
)

// OrNaN is *p, or NaN where p is nil: a value the cell did not measure (the statistics then
// leave it out, and tables print "-").
func OrNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// FormatSecs is a duration in seconds to a tenth ("12.3 s"), or "-" where it was not measured.
func FormatSecs(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f s", *p)
}
