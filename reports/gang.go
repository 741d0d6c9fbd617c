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
	ts := make([]float64, len(g.Samples))
	running, admitted, cq := make([]float64, len(g.Samples)), make([]float64, len(g.Samples)), make([]float64, len(g.Samples))
	for k, smp := range g.Samples {
		ts[k], running[k], admitted[k], cq[k] = smp.T, float64(smp.GPUsRunning), float64(smp.ReservedGPUs), float64(smp.CQReservedGPUs)
	}
	for i, ln := range []struct {
		name string
		vs   []float64
	}{
		{"GPUs requested by Running pods", running},
		{"GPUs Kueue admitted (Workloads)", admitted},
		{"ClusterQueue status.flavorsReservation", cq},
	} {
		if err := addStepLine(p, i, ln.name, ts, ln.vs, end); err != nil {
			return "", err
		}
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
