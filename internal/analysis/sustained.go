package analysis

import (
	"github.com/brakebench/brakebench/internal/ceiling"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/stats"
)

// SustainedEstimate is a ceiling cell's sustainable claim rate over its repetitions
// (ceiling.Aggregate's rule, at 95%): nil when no repetition ran a search.
func SustainedEstimate(cells []*results.Cell) *results.SustainedEstimate {
	var rs []ceiling.Result
	for _, c := range cells {
		s := c.Stats.Sustained
		if s == nil {
			continue
		}
		r := ceiling.Result{Pass: float64(s.Pass), Fail: float64(s.Fail)}
		for _, p := range s.Probes {
			r.Probes = append(r.Probes, ceiling.Probe{Rate: p.Rate, OK: p.OK, Reason: p.Reason})
		}
		rs = append(rs, r)
	}
	if len(rs) == 0 {
		return nil
	}
	e := ceiling.Aggregate(rs, confidence)
	return &results.SustainedEstimate{Ceiling: stats.Num(e.Ceiling), Lo: stats.Num(e.Lo), Hi: stats.Num(e.Hi), N: e.N,
		Insufficient: e.Insufficient, Text: e.Text}
}
