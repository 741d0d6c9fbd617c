package reports

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/brakebench/brakebench/internal/trend"
)

//go:embed trend.html.tmpl
var trendTemplate string

// trendCharted are the metrics drawn for every cell; any series with a change point is drawn too.
var trendCharted = map[string]bool{"claim.p50_ms": true, "claim.p99_ms": true, "claims.failed": true, "ceiling.refill_create_5s": true,
	"pool.refill_s": true, "correctness.refill_creates_per_slot": true, "autoscale.decision_up_s": true, "gang.peak_gpus_running": true}

type trendPage struct {
	T           *trend.Trend
	Charts      []Chart
	Changes     []trendChange
	Regressions []string
}

type trendChange struct {
	Cell, Key, Run, When, Change, P string
	Regression                      bool
}

// TrendHTML renders trend.html (self-contained: inline CSS and SVG, no network fetches).
func TrendHTML(t *trend.Trend) ([]byte, error) {
	page := trendPage{T: t, Regressions: t.Regressions()}
	for _, s := range t.Series {
		for _, cp := range s.ChangePoints {
			r := t.Runs[cp.Index]
			page.Changes = append(page.Changes, trendChange{Cell: s.Cell, Key: s.Key, Run: r.RunID, When: r.StartedAt.Format("2006-01-02 15:04"),
				Change: fmt.Sprintf("%s -> %s (%+.1f%%)", FormatNum(cp.Before, s.Unit), FormatNum(cp.After, s.Unit), cp.ChangePct),
				P:      fmt.Sprintf("%.2g", cp.P), Regression: cp.Regression})
		}
	}
	series := append([]trend.Series(nil), t.Series...)
	sort.SliceStable(series, func(i, j int) bool { return series[i].Cell < series[j].Cell })
	for _, s := range series {
		if !trendCharted[s.Key] && len(s.ChangePoints) == 0 {
			continue
		}
		svg, err := trendChart(t, s)
		if err != nil {
			return nil, err
		}
		if svg != "" {
			page.Charts = append(page.Charts, Chart{Title: s.Cell + ": " + s.Key, SVG: template.HTML(svg)})
		}
	}
	tmpl, err := template.New("trend").Funcs(funcs).Parse(trendTemplate)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, page); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// trendChart draws a series: the value per run with its CI as an error bar, change points as
// vertical lines ("" when the series has no finite value).
func trendChart(t *trend.Trend, s trend.Series) (string, error) {
	p := newPlot(fmt.Sprintf("%s: %s (%s)", s.Cell, s.Key, s.Unit), "run (in start order; see the runs table)", s.Unit)
	var pts plotter.XYs
	var bars errPoints
	top := math.Inf(-1)
	bottom := math.Inf(1)
	for i, pt := range s.Points {
		v := float64(pt.Value)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		pts = append(pts, plotter.XY{X: float64(i), Y: v})
		lo, hi := float64(pt.CI.Lo), float64(pt.CI.Hi)
		if math.IsNaN(lo) || math.IsInf(lo, 0) || math.IsNaN(hi) || math.IsInf(hi, 0) {
			lo, hi = v, v
		}
		bars = append(bars, errPoint{x: float64(i), y: v, lo: v - lo, hi: hi - v})
		top, bottom = math.Max(top, hi), math.Min(bottom, lo)
	}
	if len(pts) == 0 {
		return "", nil
	}
	l, sc, err := plotter.NewLinePoints(pts)
	if err != nil {
		return "", err
	}
	l.LineStyle = style(0)
	sc.GlyphStyle = draw.GlyphStyle{Color: palette[0], Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
	p.Add(l, sc)
	p.Legend.Add("value (95% CI)", l, sc)
	eb, err := plotter.NewYErrorBars(bars)
	if err != nil {
		return "", err
	}
	eb.LineStyle = draw.LineStyle{Color: palette[0], Width: vg.Points(0.8)}
	p.Add(eb)
	for k, cp := range s.ChangePoints {
		x := float64(cp.Index) - 0.5
		cl, _ := plotter.NewLine(plotter.XYs{{X: x, Y: bottom}, {X: x, Y: top}})
		c := palette[2]
		label := "change point"
		if cp.Regression {
			c, label = palette[1], "regression"
		}
		cl.LineStyle = draw.LineStyle{Color: c, Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(4), vg.Points(2)}}
		p.Add(cl)
		if k == 0 || cp.Regression {
			p.Legend.Add(fmt.Sprintf("%s at run %d (%+.1f%%)", label, cp.Index+1, cp.ChangePct), cl)
		}
	}
	p.X.Min, p.X.Max = -0.5, float64(len(s.Points))-0.5
	p.X.Tick.Marker = runTicks{n: len(s.Points)}
	return svg(p, 16*vg.Centimeter, 7*vg.Centimeter)
}

type errPoint struct{ x, y, lo, hi float64 }

type errPoints []errPoint

func (e errPoints) Len() int                        { return len(e) }
func (e errPoints) XY(i int) (float64, float64)     { return e[i].x, e[i].y }
func (e errPoints) YError(i int) (float64, float64) { return e[i].lo, e[i].hi }

// runTicks labels runs 1..n (at most ~12 labels).
type runTicks struct{ n int }

func (r runTicks) Ticks(_, _ float64) []plot.Tick {
	step := max(1, (r.n+11)/12)
	var out []plot.Tick
	for i := 0; i < r.n; i++ {
		label := ""
		if i%step == 0 {
			label = fmt.Sprint(i + 1)
		}
		out = append(out, plot.Tick{Value: float64(i), Label: label})
	}
	return out
}

// TrendText writes the terminal summary of a trend.
func TrendText(t *trend.Trend) string {
	var b strings.Builder
	fmt.Fprintf(&b, "trend of %s over %d runs (%s .. %s)\n", t.Suite, len(t.Runs), t.Runs[0].StartedAt.Format("2006-01-02 15:04"), t.Runs[len(t.Runs)-1].StartedAt.Format("2006-01-02 15:04"))
	for _, n := range t.Notes {
		fmt.Fprintln(&b, "note:", n)
	}
	changes := 0
	for _, s := range t.Series {
		for _, cp := range s.ChangePoints {
			changes++
			kind := "change"
			if cp.Regression {
				kind = "REGRESSION"
			}
			r := t.Runs[cp.Index]
			fmt.Fprintf(&b, "%-10s %s %s: %s -> %s (%+.1f%%) from run %s (%s), p=%.2g\n", kind, s.Cell, s.Key, FormatNum(cp.Before, s.Unit), FormatNum(cp.After, s.Unit), cp.ChangePct, r.RunID, r.StartedAt.Format("2006-01-02 15:04"), cp.P)
		}
	}
	if changes == 0 && len(t.Notes) == 0 {
		fmt.Fprintln(&b, "no change points")
	}
	return b.String()
}
