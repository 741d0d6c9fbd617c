package reports

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/brakebench/brakebench/internal/brakes"
	"github.com/brakebench/brakebench/internal/stats"
	"github.com/brakebench/brakebench/internal/tune"
)

//go:embed tune.html.tmpl
var tuneTemplate string

type tunePage struct {
	R       *tune.Result
	Rows    []tuneRow
	Chart   *Chart
	Confirm []tuneCheck
	// Links are relative paths from tune.html to each round's report (and the confirmation's).
	Links map[string]string
}

type tuneRow struct {
	Item, Iteration, Reps, Change, CI, Checks, Fate string
	Winner, Out                                     bool
}

type tuneCheck struct {
	Constraint, Value, Bound string
	Held                     bool
}

// TuneHTML renders tune.html (self-contained: inline CSS and SVG, no network fetches): the
// recommendation and its snippet, the confirmation's verdict, every setting tried with its
// estimate and interval, and where the budget went. links maps a round's (or "confirm") results
// path to the path of its report relative to tune.html ("" entries are left out).
func TuneHTML(r *tune.Result, links map[string]string) ([]byte, error) {
	page := tunePage{R: r, Rows: tuneRows(r), Links: links}
	if r.Confirmation != nil {
		for _, c := range r.Confirmation.Checks {
			page.Confirm = append(page.Confirm, tuneCheck{c.Constraint, numOrDash(float64(c.Value)), numOrDash(float64(c.Bound)), c.Held})
		}
	}
	svg, err := tuneChart(r)
	if err != nil {
		return nil, err
	}
	if svg != "" {
		page.Chart = &Chart{Title: "every setting tried: change of " + r.Objective + " against no brake (search estimate, per-setting 95% interval)", SVG: template.HTML(svg)}
	}
	tmpl, err := template.New("tune").Funcs(funcs).Funcs(template.FuncMap{
		"pct":  func(v stats.Num) string { return pctOrDash(float64(v)) },
		"pval": func(v stats.Num) string { return numOrDash(float64(v)) },
		"mde":  func(v stats.Num) string { return strings.TrimPrefix(pctOrDash(float64(v)), "+") },
	}).Parse(tuneTemplate)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, page); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func numOrDash(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.IsInf(v, 1):
		return "none in time"
	case math.IsInf(v, -1):
		return "none"
	}
	return fmt.Sprintf("%.4g", v)
}

func pctOrDash(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.IsInf(v, 1):
		return "failed claims"
	}
	return fmt.Sprintf("%+.1f%%", v)
}

// tuneRows are the evidence table: the winner first, then the settings by how far they got and
// their estimate.
func tuneRows(r *tune.Result) []tuneRow {
	cands := append([]tune.Candidate(nil), r.Candidates...)
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if (a.Item == r.Winner) != (b.Item == r.Winner) {
			return a.Item == r.Winner
		}
		if a.Rounds != b.Rounds {
			return a.Rounds > b.Rounds
		}
		return lessNaN(float64(a.Pct), float64(b.Pct))
	})
	var out []tuneRow
	for _, c := range cands {
		var checks []string
		for _, ch := range c.Checks {
			mark := "held"
			if !ch.Held {
				mark = "VIOLATED"
			}
			checks = append(checks, fmt.Sprintf("%s: %s (%s)", ch.Constraint, numOrDash(float64(ch.Value)), mark))
		}
		ci := "-"
		if !math.IsNaN(float64(c.CI.Lo)) {
			ci = fmt.Sprintf("[%s, %s]", pctOrDash(float64(c.CI.Lo)), pctOrDash(float64(c.CI.Hi)))
		}
		out = append(out, tuneRow{Item: c.Item, Iteration: fmt.Sprint(c.Iteration), Reps: fmt.Sprint(c.Reps), Change: pctOrDash(float64(c.Pct)), CI: ci,
			Checks: strings.Join(checks, "; "), Fate: c.Fate, Winner: c.Item == r.Winner, Out: strings.HasPrefix(c.Fate, "out after")})
	}
	return out
}

func lessNaN(a, b float64) bool {
	switch {
	case math.IsNaN(a):
		return false
	case math.IsNaN(b):
		return true
	}
	return a < b
}

// tuneChart draws every setting's search estimate with its interval: against the brake's value
// when one brake with a value was searched, else in the order of the estimates. "" when no
// setting has a finite estimate.
func tuneChart(r *tune.Result) (string, error) {
	var dim *tune.Dim
	n := 0
	for i := range r.Dims {
		if r.Dims[i].Kind != brakes.KindBool {
			dim, n = &r.Dims[i], n+1
		}
	}
	type pt struct {
		x, y, lo, hi float64
		winner       bool
	}
	var pts []pt
	for _, c := range r.Candidates {
		y := float64(c.Pct)
		if math.IsNaN(y) || math.IsInf(y, 0) {
			continue
		}
		lo, hi := float64(c.CI.Lo), float64(c.CI.Hi)
		if math.IsNaN(lo) || math.IsNaN(hi) {
			lo, hi = y, y
		}
		x := math.NaN()
		if n == 1 {
			x = dimValue(*dim, c.Values[dim.Brake])
		}
		pts = append(pts, pt{x, y, lo, hi, c.Item == r.Winner})
	}
	if len(pts) == 0 {
		return "", nil
	}
	xlabel := "setting (by estimate)"
	if n == 1 {
		xlabel = dim.Brake
		if dim.Kind == brakes.KindDuration {
			xlabel += " (s)"
		}
	} else {
		sort.Slice(pts, func(i, j int) bool { return pts[i].y < pts[j].y })
		for i := range pts {
			pts[i].x = float64(i + 1)
		}
	}
	p := newPlot("search estimates: "+r.Objective+" against no brake", xlabel, "change (%)")
	if n == 1 && dim.Log {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	}
	var all, win plotter.XYs
	var bars errPoints
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for _, q := range pts {
		all = append(all, plotter.XY{X: q.x, Y: q.y})
		if q.winner {
			win = append(win, plotter.XY{X: q.x, Y: q.y})
		}
		bars = append(bars, errPoint{x: q.x, y: q.y, lo: q.y - q.lo, hi: q.hi - q.y})
		xmin, xmax = math.Min(xmin, q.x), math.Max(xmax, q.x)
	}
	sc, err := plotter.NewScatter(all)
	if err != nil {
		return "", err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: palette[0], Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
	p.Add(sc)
	p.Legend.Add("setting (search estimate)", sc)
	eb, err := plotter.NewYErrorBars(bars)
	if err != nil {
		return "", err
	}
	eb.LineStyle = draw.LineStyle{Color: palette[0], Width: vg.Points(0.8)}
	p.Add(eb)
	if len(win) > 0 {
		ws, err := plotter.NewScatter(win)
		if err != nil {
			return "", err
		}
		ws.GlyphStyle = draw.GlyphStyle{Color: palette[1], Radius: vg.Points(4), Shape: draw.PyramidGlyph{}}
		p.Add(ws)
		p.Legend.Add("the search's winner (biased low: see the confirmation)", ws)
	}
	zero, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: 0}, {X: xmax, Y: 0}})
	if err == nil {
		zero.LineStyle = draw.LineStyle{Color: palette[6], Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(4), vg.Points(2)}}
		p.Add(zero)
		p.Legend.Add("no brake", zero)
	}
	return svg(p, 16*vg.Centimeter, 8*vg.Centimeter)
}

// dimValue is a setting's value of a dimension as a number (seconds for a duration).
func dimValue(d tune.Dim, v string) float64 {
	if d.Kind == brakes.KindDuration {
		x, err := time.ParseDuration(v)
		if err != nil {
			return math.NaN()
		}
		return x.Seconds()
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return math.NaN()
	}
	return x
}

// TuneText writes a tune's terminal summary: the evidence table, the confirmation, the
// recommendation and its snippet.
func TuneText(w io.Writer, r *tune.Result) {
	fmt.Fprintf(w, "\ntune of %s: minimise %s", r.Suite, r.Objective)
	if len(r.Constraints) > 0 {
		var cs []string
		for _, c := range r.Constraints {
			cs = append(cs, c.Text)
		}
		fmt.Fprintf(w, " subject to %s", strings.Join(cs, ", "))
	}
	fmt.Fprintf(w, "; %d search cells of a budget of %d in %d rounds, %d confirmation cells\n", r.Spent, r.Budget, len(r.Rounds), r.ConfirmCells)
	fmt.Fprintf(w, "%-44s %4s %5s %10s %22s  %s\n", "setting", "iter", "reps", "change", "95% (per setting)", "outcome")
	for _, row := range tuneRows(r) {
		fate := row.Fate
		if row.Checks != "" && !strings.Contains(fate, "violates") {
			fate += "; " + row.Checks
		}
		fmt.Fprintf(w, "%-44s %4s %5s %10s %22s  %s\n", row.Item, row.Iteration, row.Reps, row.Change, row.CI, fate)
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	if cf := r.Confirmation; cf != nil {
		ci := "-"
		if !math.IsNaN(float64(cf.CI.Lo)) {
			ci = fmt.Sprintf("[%s, %s]", pctOrDash(float64(cf.CI.Lo)), pctOrDash(float64(cf.CI.Hi)))
		}
		fmt.Fprintf(w, "confirmation (fresh repetitions, %s): %s vs none, %d and %d repetitions: %s, %s %s %s\n",
			cf.Design, cf.Item, cf.RepsWinner, cf.RepsBaseline, cf.Verdict, r.Objective, pctOrDash(float64(cf.Pct)), ci)
		for _, c := range cf.Checks {
			mark := "held"
			if !c.Held {
				mark = "VIOLATED"
			}
			fmt.Fprintf(w, "  %s: %s against %s (%s)\n", c.Constraint, numOrDash(float64(c.Value)), numOrDash(float64(c.Bound)), mark)
		}
	}
	for _, s := range r.Spending {
		fmt.Fprintf(w, "budget: %4d cells  %s\n", s.Cells, s.What)
	}
	if r.Incomplete != "" {
		fmt.Fprintf(w, "INCOMPLETE: %s\n", r.Incomplete)
	}
	if r.Recommendation.Recommend {
		fmt.Fprintf(w, "recommendation: %s (%s)\n", r.Recommendation.Item, r.Recommendation.Why)
	} else {
		fmt.Fprintf(w, "recommendation: keep the defaults (%s)\n", r.Recommendation.Why)
	}
	fmt.Fprint(w, r.Recommendation.Snippet)
}
