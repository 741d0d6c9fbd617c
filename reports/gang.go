package reports

import (
	"fmt"
	"html/template"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/brakebench/brakebench/internal/results"
)

// GangArm is one gang-quota cell, side by side with the others in the report.
type GangArm struct {
	Cell, Gates, Outcome         string
	GateOn                       bool
	Quota, PeakRunning, Reserved int
	OverQuota, Unreserved        int
	UnreservedFor                string
	Bypass                       string
	Admitted                     string
	Steps                        []GangStepRow
	Chart                        template.HTML
}

// GangStepRow is one change of a gang-quota cell.
type GangStepRow struct {
	Name, Change, Answer, Metric            string
	Workloads                               []string
	Accepted                                bool
	PeakPods, PeakGPUs, PeakReserved, Gated int
}

// gangArms builds the side-by-side view and the overshoot chart of every gang-quota cell.
func gangArms(r *results.Results) ([]GangArm, error) {
	var out []GangArm
	for i := range r.Cells {
		c := &r.Cells[i]
		g := c.Gang
		if g == nil {
			continue
		}
		a := GangArm{Cell: c.ID, Gates: strings.Join(g.Gates, ", "), Outcome: g.Outcome, GateOn: g.GateOn, Quota: g.QuotaGPUs,
			PeakRunning: g.PeakGPUsRunning, Reserved: g.PeakReserved, OverQuota: g.OverQuotaGPUs, Unreserved: g.PeakUnreservedGPUs, UnreservedFor: fmt.Sprintf("%.1f s", g.UnreservedSeconds), Bypass: fmt.Sprintf("%.2f", g.BypassRatio), Admitted: "-"}
		if c.Error != "" {
			a.Outcome = "error: " + c.Error
		}
		if g.AdmittedSeconds != nil {
			a.Admitted = fmt.Sprintf("%.1f s", *g.AdmittedSeconds)
		}
		for _, s := range g.Steps {
			row := GangStepRow{Name: s.Name, Change: s.Change, Accepted: s.Accepted, Answer: "accepted",
				PeakPods: s.PeakPodsRunning, PeakGPUs: s.PeakGPUsRunning, PeakReserved: s.PeakReserved, Gated: s.End.PodsGated, Metric: "-", Workloads: s.Workloads}
			if !s.Accepted {
				row.Answer = s.Error
			}
			if s.KueueUsageMetric != nil {
				row.Metric = FormatNum(*s.KueueUsageMetric, "gpus")
			} else if s.KueueMetricError != "" {
				row.Metric = "unavailable: " + s.KueueMetricError
			}
			a.Steps = append(a.Steps, row)
		}
		if len(g.Samples) > 0 {
			svg, err := gangChart(c)
			if err != nil {
				return nil, err
			}
			a.Chart = template.HTML(svg)
		}
		out = append(out, a)
	}
	return out, nil
}

// gangChart draws GPUs requested by running pods and GPUs Kueue reserved over time, against the
// quota, with the experiment's changes marked: the overshoot is the gap above the quota line.
func gangChart(c *results.Cell) (string, error) {
	g := c.Gang
	p := newPlot(fmt.Sprintf("%s: GPUs in use vs quota", c.ID), "seconds after the LeaderWorkerSet was created", "GPUs")
	end := g.Samples[len(g.Samples)-1].T
	for _, s := range g.Steps {
		end = max(end, s.T+1)
	}
	stepLine := func(i int, name string, val func(results.GangSample) float64) error {
		pts := make(plotter.XYs, 0, len(g.Samples)+1)
		for _, s := range g.Samples {
			pts = append(pts, plotter.XY{X: s.T, Y: val(s)})
		}
		pts = append(pts, plotter.XY{X: end, Y: val(g.Samples[len(g.Samples)-1])})
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.StepStyle = plotter.PostStep
		l.LineStyle = style(i)
		p.Add(l)
		p.Legend.Add(name, l)
		return nil
	}
	if err := stepLine(0, "GPUs requested by Running pods", func(s results.GangSample) float64 { return float64(s.GPUsRunning) }); err != nil {
		return "", err
	}
	if err := stepLine(1, "GPUs Kueue admitted (Workloads)", func(s results.GangSample) float64 { return float64(s.ReservedGPUs) }); err != nil {
		return "", err
	}
	if err := stepLine(2, "ClusterQueue status.flavorsReservation", func(s results.GangSample) float64 { return float64(s.CQReservedGPUs) }); err != nil {
		return "", err
	}
	top := float64(g.QuotaGPUs)
	for _, s := range g.Samples {
		top = max(top, float64(s.GPUsRunning))
	}
	q, _ := plotter.NewLine(plotter.XYs{{X: 0, Y: float64(g.QuotaGPUs)}, {X: end, Y: float64(g.QuotaGPUs)}})
	q.LineStyle = draw.LineStyle{Color: palette[6], Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(4), vg.Points(2)}}
	p.Add(q)
	p.Legend.Add(fmt.Sprintf("quota %d GPUs", g.QuotaGPUs), q)
	for i, s := range g.Steps {
		l, _ := plotter.NewLine(plotter.XYs{{X: s.T, Y: 0}, {X: s.T, Y: top + 1}})
		l.LineStyle = draw.LineStyle{Color: palette[(3+i)%len(palette)], Width: vg.Points(1), Dashes: []vg.Length{vg.Points(1), vg.Points(2)}}
		p.Add(l)
		word := "accepted"
		if !s.Accepted {
			word = "rejected"
		}
		p.Legend.Add(fmt.Sprintf("%s (%s)", s.Change, word), l)
	}
	p.Y.Min, p.Y.Max = 0, top+2
	return svg(p, 16*vg.Centimeter, 8*vg.Centimeter)
}
