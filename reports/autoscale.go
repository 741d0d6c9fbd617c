package reports

import (
	"fmt"
	"html/template"
	"sort"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/brakebench/brakebench/internal/results"
)

// AutoscaleArm is one pool-autoscaling cell in the report.
type AutoscaleArm struct {
	Cell, Arm, Profile, Settings, Writes string
	Assertions                           []string
	Steps                                []AutoscaleStepRow
	Chart                                template.HTML
	// Nodes describes the Karpenter NodePool the cell ran on, and NodeSteps each step's node
	// chain ("" and nil on the cluster's own nodes).
	Nodes     string
	NodeSteps []AutoscaleNodeRow
}

// AutoscaleNodeRow is one step's node chain on a Karpenter NodePool.
type AutoscaleNodeRow struct {
	Demand, Pods, OnExisting, NodeClaim, NodeReady, PodReady, ClaimsCreated, NodesDeleted, Consolidated, ReadyNodes string
}

// AutoscaleStepRow is one demand step.
type AutoscaleStepRow struct {
	Demand, Expected, Decision, DecisionAfter, Capacity, CapacityAfter, Peak, Warm, Cold string
}

func autoscaleArms(r *results.Results) ([]AutoscaleArm, error) {
	var out []AutoscaleArm
	for i := range r.Cells {
		c := &r.Cells[i]
		a := c.Autoscale
		if a == nil {
			continue
		}
		prof := make([]string, len(a.Profile))
		for i, d := range a.Profile {
			prof[i] = fmt.Sprint(d)
		}
		sync := a.HPASyncPeriod
		if sync == "" {
			sync = "unknown (managed control plane)"
		}
		arm := AutoscaleArm{Cell: c.ID, Arm: a.Arm, Profile: strings.Join(prof, " -> "), Assertions: a.Assertions,
			Settings: fmt.Sprintf("%s target %g, min %d, max %d, step %.0f s, HPA sync %s, scale-up %s, pollingInterval %s", a.MetricType, a.Target, a.Min, a.Max, a.StepSeconds, sync, a.ScaleUp, a.PollingInterval)}
		if a.Arm == "control" {
			arm.Settings = fmt.Sprintf("no autoscaler, pool fixed at %d, step %.0f s", a.Min, a.StepSeconds)
		}
		if c.Error != "" {
			arm.Assertions = append(arm.Assertions, "error: "+c.Error)
		}
		var keys []string
		for k := range a.APIWrites {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var w []string
		for _, k := range keys {
			w = append(w, fmt.Sprintf("%s %.0f", k, a.APIWrites[k]))
		}
		arm.Writes = strings.Join(w, ", ")
		if arm.Writes == "" {
			arm.Writes = "none"
		}
		for _, s := range a.Steps {
			exp := "-"
			if s.Expected >= 0 {
				exp = fmt.Sprint(s.Expected)
			}
			arm.Steps = append(arm.Steps, AutoscaleStepRow{Demand: fmt.Sprint(s.Demand), Expected: exp, Decision: fmt.Sprint(s.Decision),
				DecisionAfter: results.FormatSecs(s.DecisionSeconds), Capacity: fmt.Sprint(s.Capacity), CapacityAfter: results.FormatSecs(s.CapacitySeconds),
				Peak: fmt.Sprint(s.PeakSpec), Warm: fmt.Sprint(s.Warm), Cold: fmt.Sprint(s.Cold)})
			if n := s.Nodes; n != nil {
				arm.NodeSteps = append(arm.NodeSteps, AutoscaleNodeRow{Demand: fmt.Sprint(s.Demand), Pods: fmt.Sprint(n.Pods), OnExisting: fmt.Sprint(n.OnExistingNodes),
					NodeClaim: results.FormatSecs(n.NodeClaimS), NodeReady: results.FormatSecs(n.NodeReadyS), PodReady: results.FormatSecs(n.PodReadyS),
					ClaimsCreated: fmt.Sprint(n.ClaimsCreated), NodesDeleted: fmt.Sprint(n.NodesDeleted), Consolidated: results.FormatSecs(n.ConsolidatedS), ReadyNodes: fmt.Sprint(n.ReadyNodes)})
			}
		}
		if n := a.Nodes; n != nil {
			arm.Nodes = fmt.Sprintf("Karpenter %s, NodePool %s: %d GPU(s) a sandbox on 8-GPU nodes, empty nodes consolidated after %s, %d Ready node(s) at the start",
				n.Karpenter, n.NodePool, n.GPUsPerSandbox, n.ConsolidateAfter, n.StartNodes)
			settled := "the nodes its pods and headroom need"
			if !n.Settled {
				settled = "poolAutoscaling.settleTimeout, still above the nodes its pods and headroom need"
			}
			arm.Nodes += fmt.Sprintf("; the last step watched %.1f s beyond its duration, until %s", n.TailS, settled)
			if n.Headroom > 0 {
				arm.Nodes += fmt.Sprintf("; CapacityBuffer of %d chunk(s) (capacity-buffer brake), its nodes Ready %s after it was created", n.Headroom, results.FormatSecs(n.HeadroomReadyS))
			}
		}
		if len(a.Samples) > 0 {
			svg, err := autoscaleChart(c)
			if err != nil {
				return nil, err
			}
			arm.Chart = template.HTML(svg)
		}
		out = append(out, arm)
	}
	return out, nil
}

// autoscaleChart draws demand, the decision (spec.replicas) and the capacity (readyReplicas)
// over the profile, with the exporter's reads as ticks on the time axis.
func autoscaleChart(c *results.Cell) (string, error) {
	a := c.Autoscale
	p := newPlot(fmt.Sprintf("%s: demand, decision and capacity", c.ID), "seconds after the first step", "claims / replicas")
	end := a.StepSeconds * float64(len(a.Steps))
	ts := make([]float64, len(a.Samples))
	demand, spec, ready := make([]float64, len(a.Samples)), make([]float64, len(a.Samples)), make([]float64, len(a.Samples))
	for k, smp := range a.Samples {
		ts[k], demand[k], spec[k], ready[k] = smp.T, float64(smp.Demand), float64(smp.Spec), float64(smp.Ready)
	}
	for i, ln := range []struct {
		name string
		vs   []float64
	}{
		{"demand (claims)", demand},
		{"decision: spec.replicas", spec},
		{"capacity: status.readyReplicas", ready},
	} {
		if err := addStepLine(p, i, ln.name, ts, ln.vs, end); err != nil {
			return "", err
		}
	}
	if len(a.ExporterHits) > 0 {
		pts := make(plotter.XYs, len(a.ExporterHits))
		for i, h := range a.ExporterHits {
			pts[i] = plotter.XY{X: h.T, Y: 0}
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return "", err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: palette[3], Radius: vg.Points(2), Shape: draw.PlusGlyph{}}
		p.Add(sc)
		p.Legend.Add("exporter read by KEDA/HPA", sc)
	}
	p.Y.Min = 0
	return svg(p, 16*vg.Centimeter, 8*vg.Centimeter)
}
