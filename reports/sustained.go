package reports

import (
	"fmt"
	"html/template"
	"io"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/brakebench/brakebench/internal/results"
)

// SustainedCell is one ceiling cell's answer (workload.mode ceiling): its estimate over
// repetitions, the change against the baseline, and every probe of every repetition.
type SustainedCell struct {
	Cell     string
	Estimate string // the estimate's sentence (ceiling.Aggregate)
	Change   string // against the baseline: the change in the repetitions' highest passing rate
	Probes   []SustainedRow
}

// SustainedRow is one probe in the report.
type SustainedRow struct {
	Rep                                         int
	Rate, Completed, P50, P99, Lag, Pool, Claim string
	OK                                          bool
	Reason                                      string
}

// Sustained is the report's ceiling section: one entry per cell that ran a search, and the two
// charts (offered vs completed rate, p99 vs offered rate) with each cell's knee marked.
type Sustained struct {
	Cells  []SustainedCell
	Charts []Chart
}

func sustainedSection(r *results.Results) (*Sustained, error) {
	out := &Sustained{}
	for _, s := range r.Summary {
		if s.Sustained == nil {
			continue
		}
		sc := SustainedCell{Cell: s.Name, Estimate: s.Sustained.Text, Change: "-"}
		if s.Name == r.Baseline {
			sc.Change = "baseline"
		} else if m, ok := r.Find(s.Name, "ceiling.claims_per_second"); ok && m.Delta != nil {
			d := m.Delta
			// The change compares the repetitions' highest passing rates (the ceiling.claims_per_second
			// row: medians and the test over repetitions), not the geometric means of the estimate.
			sc.Change = fmt.Sprintf("~ (median %+.1f%%, p=%.3f)", float64(d.Pct), float64(d.Comparison.P))
			if math.IsNaN(float64(d.Comparison.P)) {
				sc.Change = fmt.Sprintf("~ (median %+.1f%%: %s)", float64(d.Pct), shortNote(d.Comparison.Note))
			}
			if d.Comparison.Significant {
				sc.Change = fmt.Sprintf("median %+.1f%% (p=%.3f)", float64(d.Pct), float64(d.Comparison.P))
			}
			if mde := mdeText(float64(d.MDEPct)); mde != "" {
				sc.Change += "; " + mde
			}
		}
		for _, c := range cellsNamed(r, s.Name) {
			if c.Stats.Sustained == nil {
				continue
			}
			for _, p := range c.Stats.Sustained.Probes {
				sc.Probes = append(sc.Probes, SustainedRow{Rep: c.Rep, Rate: fmt.Sprintf("%.4g", p.Rate), Completed: fmt.Sprintf("%.4g", p.Completed),
					P50: FormatNum(float64(p.P50MS), "ms"), P99: FormatNum(float64(p.P99MS), "ms"), Lag: FormatNum(float64(p.LagP99MS), "ms"),
					Pool:  fmt.Sprintf("%d%s", p.PoolMinReady, map[bool]string{true: "", false: " (started short)"}[p.PoolRefilled]),
					Claim: fmt.Sprintf("%d judged, %d failed, %d cold", p.Judged, p.Failed, p.Cold), OK: p.OK, Reason: p.Reason})
			}
		}
		out.Cells = append(out.Cells, sc)
	}
	if len(out.Cells) == 0 {
		return nil, nil
	}
	for _, ch := range []struct {
		title, y string
		value    func(p results.SustainedProbe) float64
		diag     bool
	}{
		{"Ceiling search: completed vs offered rate", "completed claims/s (judged part)", func(p results.SustainedProbe) float64 { return p.Completed }, true},
		{"Ceiling search: claim p99 vs offered rate", "claim p99 (s, judged part; failed probes at the top)", func(p results.SustainedProbe) float64 { return float64(p.P99MS) / 1000 }, false},
	} {
		svg, err := sustainedChart(r, ch.title, ch.y, ch.value, ch.diag)
		if err != nil {
			return nil, err
		}
		out.Charts = append(out.Charts, Chart{ch.title, template.HTML(svg)})
	}
	return out, nil
}

// sustainedChart draws every probe of every ceiling cell (offered rate on x), one colour per
// cell, a dashed vertical line at each cell's estimated ceiling (the knee), and, when diag, the
// line completed = offered.
func sustainedChart(r *results.Results, title, y string, value func(results.SustainedProbe) float64, diag bool) (string, error) {
	p := newPlot(title, "offered claims/s", y)
	top, right := 0.0, 0.0
	type pts struct {
		name string
		xy   plotter.XYs
		knee float64
	}
	var all []pts
	for _, s := range r.Summary {
		if s.Sustained == nil {
			continue
		}
		g := pts{name: s.Name, knee: float64(s.Sustained.Ceiling)}
		for _, c := range cellsNamed(r, s.Name) {
			if c.Stats.Sustained == nil {
				continue
			}
			for _, pr := range c.Stats.Sustained.Probes {
				v := value(pr)
				if math.IsNaN(v) {
					continue
				}
				g.xy = append(g.xy, plotter.XY{X: pr.Rate, Y: v})
				right = math.Max(right, pr.Rate)
				if !math.IsInf(v, 0) {
					top = math.Max(top, v)
				}
			}
		}
		all = append(all, g)
	}
	if top == 0 {
		top = 1
	}
	for i, g := range all {
		for j := range g.xy {
			if math.IsInf(g.xy[j].Y, 1) {
				g.xy[j].Y = top * 1.05
			}
		}
		if len(g.xy) > 0 {
			sc, err := plotter.NewScatter(g.xy)
			if err != nil {
				return "", err
			}
			sc.GlyphStyle.Color = palette[i%len(palette)]
			sc.GlyphStyle.Shape = glyph(i)
			sc.GlyphStyle.Radius = vg.Points(3)
			p.Add(sc)
			p.Legend.Add(g.name, sc)
		}
		if g.knee > 0 && !math.IsInf(g.knee, 0) && !math.IsNaN(g.knee) {
			l, err := plotter.NewLine(plotter.XYs{{X: g.knee, Y: 0}, {X: g.knee, Y: top * 1.05}})
			if err != nil {
				return "", err
			}
			l.LineStyle = style(i)
			l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("%s: ceiling %.4g/s", g.name, g.knee), l)
		}
	}
	if diag && right > 0 {
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: right, Y: right}})
		if err != nil {
			return "", err
		}
		l.LineStyle = draw.LineStyle{Color: palette[6], Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(1), vg.Points(3)}}
		p.Add(l)
		p.Legend.Add("completed = offered", l)
	}
	return svg(p, 16*vg.Centimeter, 9*vg.Centimeter)
}

// glyph gives each cell its own marker shape as well as its colour.
func glyph(i int) draw.GlyphDrawer {
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.BoxGlyph{}, draw.PlusGlyph{}, draw.CrossGlyph{}, draw.RingGlyph{}}
	return shapes[i%len(shapes)]
}

// SustainedLines prints the ceiling first, one line per cell that searched, with its change
// against the baseline (nothing when no cell ran a search).
func SustainedLines(w io.Writer, r *results.Results) {
	sec, err := sustainedSection(r)
	if err != nil || sec == nil {
		return
	}
	fmt.Fprintln(w, "sustained ceiling (against "+r.Baseline+"):")
	for _, c := range sec.Cells {
		fmt.Fprintf(w, "  %s: %s\n      change: %s\n", c.Cell, c.Estimate, c.Change)
	}
	fmt.Fprintln(w)
}
