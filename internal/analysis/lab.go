package analysis

import (
	"github.com/montanaflynn/stats"

	"github.com/brakebench/brakebench/internal/results"
)

// LabOverRun compares the lab's health at the start of the first and the last cell (in the order
// they ran) and sums up the housekeeping between cells. Nil when fewer than two cells recorded
// the lab's health (not a lab run, or a one-cell run).
func LabOverRun(cells []results.Cell) *results.LabOverRun {
	var first, last *results.Cell
	n := 0
	var secs, freed, restart []float64
	steps := ""
	for i := range cells {
		c := &cells[i]
		if c.Lab == nil || c.Lab.Error != "" || c.T0.IsZero() {
			continue
		}
		n++
		if first == nil || c.T0.Before(first.T0) {
			first = c
		}
		if last == nil || c.T0.After(last.T0) {
			last = c
		}
		if h := c.Housekeeping; h != nil && h.Error == "" {
			secs = append(secs, h.Seconds)
			steps = h.StepsText()
			if h.DBBytesBefore > 0 {
				freed = append(freed, float64(h.DBBytesBefore-h.DBBytesAfter))
			}
			if h.RestartSeconds > 0 {
				restart = append(restart, h.RestartSeconds)
			}
		}
	}
	if n < 2 {
		return nil
	}
	out := &results.LabOverRun{Cells: n, Minutes: last.T0.Sub(first.T0).Minutes(), Housekeeping: "none", First: *first.Lab, Last: *last.Lab}
	if len(secs) > 0 {
		out.Housekeeping = steps
		out.HousekeepingSeconds, _ = stats.Median(secs)
		if len(freed) > 0 {
			out.FreedBytes, _ = stats.Median(freed)
		}
		if len(restart) > 0 {
			out.RestartSeconds, _ = stats.Median(restart)
		}
	}
	return out
}
