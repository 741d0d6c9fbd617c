package reports

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/brakebench/brakebench/internal/brakes"
	"github.com/brakebench/brakebench/internal/results"
)

// palette is Okabe-Ito (distinguishable with the common colour-vision deficiencies); every
// series also gets its own dash pattern so charts survive black-and-white printing.
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255},   // blue
	color.RGBA{213, 94, 0, 255},    // vermillion
	color.RGBA{0, 158, 115, 255},   // bluish green
	color.RGBA{204, 121, 167, 255}, // reddish purple
	color.RGBA{230, 159, 0, 255},   // orange
	color.RGBA{86, 180, 233, 255},  // sky blue
	color.RGBA{0, 0, 0, 255},       // black
}

var dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}, {vg.Points(8), vg.Points(3), vg.Points(2), vg.Points(3)}, {vg.Points(1), vg.Points(4)}}

func style(i int) draw.LineStyle {
	return draw.LineStyle{Color: palette[i%len(palette)], Width: vg.Points(1.6), Dashes: dashes[i%len(dashes)]}
}

func svg(p *plot.Plot, w, h vg.Length) (string, error) {
	c := vgsvg.New(w, h)
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	return buf.String(), nil
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

// cdfGroup is one line of a latency CDF: the claims of some cells under one label.
type cdfGroup struct {
	label string
	cells []*results.Cell
}

// latencyCDF draws, per cell name, the CDF of client-observed claim latency (all repetitions).
func latencyCDF(r *results.Results) (string, error) {
	var groups []cdfGroup
	for _, s := range r.Summary {
		groups = append(groups, cdfGroup{label: s.Name, cells: cellsNamed(r, s.Name)})
	}
	return cdfChart("Claim latency CDF (intent -> Ready)", groups)
}

func cellsNamed(r *results.Results, name string) []*results.Cell {
	var out []*results.Cell
	for i := range r.Cells {
		if c := &r.Cells[i]; c.Name == name && c.Error == "" && c.NotApplicable == "" {
			out = append(out, c)
		}
	}
	return out
}

// maxChartPoints bounds the points of one CDF line or one scatter: at 30,000 claims a point per
// claim makes a report of tens of megabytes that a browser draws slowly, and no eye can tell
// 30,000 points from 2,000 evenly spaced ones.
const maxChartPoints = 2000

// cdfChart draws one CDF line per group, log x. Failed claims are not drawn (the curve then ends
// below 1) and are counted in the legend. Long lines keep maxChartPoints evenly spaced ranks
// (the first and last included). With no latency at all it returns "".
func cdfChart(title string, groups []cdfGroup) (string, error) {
	p := newPlot(title, "latency (ms, log scale)", "fraction of claims")
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 1
	drawn := 0
	for i, g := range groups {
		var lat []float64
		total, failed := 0, 0
		for _, c := range g.cells {
			for _, cl := range c.Claims {
				total++
				if cl.LatencyMS != nil && *cl.LatencyMS > 0 {
					lat = append(lat, *cl.LatencyMS)
				} else if cl.Failed {
					failed++
				}
			}
		}
		if len(lat) == 0 {
			continue
		}
		sort.Float64s(lat)
		var pts plotter.XYs
		for _, k := range evenIndices(len(lat), maxChartPoints) {
			pts = append(pts, plotter.XY{X: lat[k], Y: float64(k+1) / float64(total)})
		}
		drawn++
		l, err := plotter.NewLine(pts)
		if err != nil {
			return "", err
		}
		l.LineStyle = style(i)
		label := g.label
		if failed > 0 {
			label += fmt.Sprintf(" (%d failed)", failed)
		}
		p.Add(l)
		p.Legend.Add(label, l)
	}
	if drawn == 0 {
		return "", nil
	}
	return svg(p, 16*vg.Centimeter, 9*vg.Centimeter)
}

// evenIndices returns at most max indices of 0..n-1, evenly spaced, the first and last included.
func evenIndices(n, max int) []int {
	if n <= max {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, max)
	for i := range out {
		out[i] = int(math.Round(float64(i) * float64(n-1) / float64(max-1)))
	}
	return out
}

func series(counts []float64) plotter.XYs {
	pts := make(plotter.XYs, len(counts))
	for i, v := range counts {
		pts[i] = plotter.XY{X: float64(i), Y: v}
	}
	return pts
}

// rateChart draws one cell's per-second create / schedule / ready rates from T0, with the
// brake marked: a horizontal line at max-refill-rate, a vertical one at replenish-delay.
func rateChart(c *results.Cell) (string, error) {
	p := newPlot(fmt.Sprintf("%s: rates after the burst", c.ID), "seconds after T0 (1 s bins, server clock)", "per second")
	lines := []struct {
		name string
		data []float64
	}{
		{"refill sandbox creates", c.Timeline.RefillCreates},
		{"cold sandbox creates", c.Timeline.ColdCreates},
		{"pods scheduled", c.Timeline.PodsScheduled},
		{"pods Ready", c.Timeline.PodsReady},
		{"claims Ready", c.Timeline.ClaimsReady},
	}
	maxT := 1.0
	for i, ln := range lines {
		if len(ln.data) == 0 {
			continue
		}
		l, err := plotter.NewLine(series(ln.data))
		if err != nil {
			return "", err
		}
		l.LineStyle = style(i)
		p.Add(l)
		p.Legend.Add(ln.name, l)
		maxT = math.Max(maxT, float64(len(ln.data)))
	}
	top := 1.0
	for _, ln := range lines {
		for _, v := range ln.data {
			top = math.Max(top, v)
		}
	}
	for i, m := range brakes.Marks(c.Brake) {
		xy := plotter.XYs{{X: 0, Y: m.Value}, {X: maxT, Y: m.Value}}
		if m.Axis == "x" {
			xy = plotter.XYs{{X: m.Value, Y: 0}, {X: m.Value, Y: top}}
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return "", err
		}
		l.LineStyle = draw.LineStyle{Color: palette[6], Width: vg.Points(1), Dashes: []vg.Length{vg.Points(float64(1 + 3*(i%2))), vg.Points(2)}}
		p.Add(l)
		p.Legend.Add(m.Label, l)
	}
	return svg(p, 16*vg.Centimeter, 8*vg.Centimeter)
}

// timelineScatter draws one point per claim: when it was sent, and how long it took to be Ready.
// Above maxChartPoints claims it draws every k-th claim (in send order) and says so in the title.
func timelineScatter(c *results.Cell) (string, error) {
	title := fmt.Sprintf("%s: per-claim send time vs latency", c.ID)
	every := (len(c.Claims) + maxChartPoints - 1) / maxChartPoints
	if every > 1 {
		title += fmt.Sprintf(" (every %d%s claim of %d)", every, ordinal(every), len(c.Claims))
	}
	p := newPlot(title, "sent at (s after T0)", "latency (ms)")
	groups := map[string]plotter.XYs{}
	for k, cl := range c.Claims {
		if cl.Intent == nil || cl.LatencyMS == nil || k%every != 0 {
			continue
		}
		lt := cl.LaunchType
		if lt == "" {
			lt = "unknown"
		}
		groups[lt] = append(groups[lt], plotter.XY{X: *cl.Intent, Y: *cl.LatencyMS})
	}
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}}
	i := 0
	for _, lt := range []string{"warm", "cold", "unknown"} {
		pts, ok := groups[lt]
		if !ok {
			continue
		}
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return "", err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: palette[i], Radius: vg.Points(2), Shape: shapes[i]}
		p.Add(s)
		p.Legend.Add(lt, s)
		i++
	}
	return svg(p, 16*vg.Centimeter, 7*vg.Centimeter)
}

func ordinal(n int) string {
	switch {
	case n%100 >= 11 && n%100 <= 13:
		return "th"
	case n%10 == 1:
		return "st"
	case n%10 == 2:
		return "nd"
	case n%10 == 3:
		return "rd"
	}
	return "th"
}

// addStepLine draws one series of (t, value) observations as a post-step line held until end:
// a value stays what it was until the next observation.
func addStepLine(p *plot.Plot, i int, name string, ts, vs []float64, end float64) error {
	pts := make(plotter.XYs, 0, len(ts)+1)
	for k := range ts {
		pts = append(pts, plotter.XY{X: ts[k], Y: vs[k]})
	}
	if len(vs) > 0 {
		pts = append(pts, plotter.XY{X: end, Y: vs[len(vs)-1]})
	}
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
