package reports

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/gates"
	"github.com/brakebench/brakebench/internal/results"
)

//go:embed report.html.tmpl
var reportTemplate string

// Report is what the HTML template renders.
type Report struct {
	R        *results.Results
	Verdicts []gates.Verdict
	Failed   int
	Cells    []string // summary cell names in display order
	Rows     []Row
	Charts   []Chart
	Checks   []CrossCheck
	Raw      string // results.json file name, linked from the raw-data section
	// Claims is set when the run has warm-pool claim cells (their charts, cross-check, raw table).
	Claims bool
	// Gang holds the gang-quota arms side by side.
	Gang []GangArm
	// Autoscale holds the pool-autoscaling cells side by side.
	Autoscale []AutoscaleArm
	// NoiseFloors are the A/A comparisons of the run (a brake listed twice).
	NoiseFloors []NoiseFloor
	// Faults are the cells' fault timelines and statistics.
	Faults []FaultCell
	// Answer is the Verdict section (nil when no cell has a verdict).
	Answer *Answer
	// Sustained is the ceiling search's section (nil unless a cell ran one).
	Sustained *Sustained
	// Incomplete heads a run that did not finish its plan ("" for a complete run): its gates are
	// never reported as a pass.
	Incomplete string
}

// NoiseFloor is an A/A pair: identical cells compared, metric by metric.
type NoiseFloor struct {
	Original, Copy string
	Rows           []NoiseRow
	Significant    int // metrics whose A/A difference tested significant (expected: about 5%)
}

// NoiseRow is one metric's A/A difference.
type NoiseRow struct {
	Key, A, B, Delta, CI, Verdict string
	Significant                   bool
}

// Row is one metric across cells.
type Row struct {
	Key, Unit string
	Values    []RowCell
}

// RowCell is one metric of one cell.
type RowCell struct {
	Value, CI, Delta, P, MDE string
	Significant              bool
	NA                       bool
}

// Chart is one inline SVG chart.
type Chart struct {
	Title string
	SVG   template.HTML
}

// CrossCheck puts the controller's own histogram next to the client-observed latency.
type CrossCheck struct {
	Cell                 string
	Client, Controller   [3]string // p50, p90, p99 (ms)
	ClientN, ControllerN int
}

func fmtCI(m *results.Metric) string {
	lo, hi := float64(m.CI.Lo), float64(m.CI.Hi)
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return ""
	}
	return fmt.Sprintf("[%s, %s]", FormatNum(lo, m.Unit), FormatNum(hi, m.Unit))
}

// Build assembles the report model: tables, charts (inline SVG) and cross-checks.
func Build(r *results.Results, verdicts []gates.Verdict) (*Report, error) {
	rep := &Report{R: r, Verdicts: verdicts, Failed: gates.Failed(verdicts), Raw: "results.json",
		Answer: buildAnswer(r), Incomplete: IncompleteText(r)}
	for _, s := range r.Summary {
		rep.Cells = append(rep.Cells, s.Name)
	}
	var keys []string
	seen := map[string]string{}
	for _, s := range r.Summary {
		for _, m := range s.Metrics {
			if _, ok := seen[m.Key]; !ok {
				keys = append(keys, m.Key)
				seen[m.Key] = m.Unit
			}
		}
	}
	for _, k := range keys {
		row := Row{Key: k, Unit: seen[k]}
		for _, s := range r.Summary {
			m, ok := r.Find(s.Name, k)
			if s.NotApplicable != "" {
				row.Values = append(row.Values, RowCell{NA: true})
				continue
			}
			if !ok {
				row.Values = append(row.Values, RowCell{Value: "-"})
				continue
			}
			rc := RowCell{Value: FormatNum(float64(m.Value), m.Unit), CI: fmtCI(m)}
			if d := m.Delta; d != nil {
				rc.Significant = d.Comparison.Significant
				rc.MDE = mdeText(float64(d.MDEPct))
				rc.P = fmt.Sprintf("p=%.3f", float64(d.Comparison.P))
				if math.IsNaN(float64(d.Comparison.P)) {
					rc.P = shortNote(d.Comparison.Note)
				}
				if d.Comparison.Significant {
					rc.Delta = fmt.Sprintf("%+.1f%%", float64(d.Pct))
					if lo, hi := float64(d.CI.Lo), float64(d.CI.Hi); !math.IsNaN(lo) && !math.IsInf(hi, 0) && !math.IsInf(lo, 0) {
						rc.Delta += fmt.Sprintf(" (CI %s..%s)", FormatNum(lo, m.Unit), FormatNum(hi, m.Unit))
					}
				} else {
					rc.Delta = "~"
				}
			}
			invariantCell(&rc, s, k)
			row.Values = append(row.Values, rc)
		}
		rep.Rows = append(rep.Rows, row)
	}
	rep.NoiseFloors = noiseFloors(r)
	rep.Faults = faultCells(r)
	var err error
	if rep.Sustained, err = sustainedSection(r); err != nil {
		return nil, err
	}
	if rep.Gang, err = gangArms(r); err != nil {
		return nil, err
	}
	if rep.Autoscale, err = autoscaleArms(r); err != nil {
		return nil, err
	}
	for _, c := range r.Cells {
		rep.Claims = rep.Claims || (c.Gang == nil && c.Autoscale == nil && c.NotApplicable == "")
	}
	if !rep.Claims {
		return rep, nil
	}
	cdf, err := latencyCDF(r)
	if err != nil {
		return nil, err
	}
	if cdf == "" {
		cdf = "<p>No claim became Ready in any cell: there is no latency to draw.</p>"
	}
	rep.Charts = append(rep.Charts, Chart{"Claim latency CDF per cell", template.HTML(cdf)})
	// One rate chart and one per-claim scatter per cell name (its first repetition).
	firsts := map[string]bool{}
	cells := append([]results.Cell(nil), r.Cells...)
	sort.SliceStable(cells, func(i, j int) bool { return cells[i].Rep < cells[j].Rep })
	for _, name := range rep.Cells {
		for i := range cells {
			c := &cells[i]
			if c.Name != name || firsts[name] || c.Error != "" || c.NotApplicable != "" {
				continue
			}
			firsts[name] = true
			rate, err := rateChart(c)
			if err != nil {
				return nil, err
			}
			sc, err := timelineScatter(c)
			if err != nil {
				return nil, err
			}
			rep.Charts = append(rep.Charts, Chart{"Rates over time: " + c.ID, template.HTML(rate)}, Chart{"Per-claim timeline: " + c.ID, template.HTML(sc)})
		}
	}
	for _, c := range r.Cells {
		if c.Error != "" || c.NotApplicable != "" {
			continue
		}
		cc := CrossCheck{Cell: c.ID, ClientN: c.Stats.Latency.All.N}
		l := c.Stats.Latency.All
		cc.Client = [3]string{FormatNum(l.P50, "ms"), FormatNum(l.P90, "ms"), FormatNum(l.P99, "ms")}
		if h := c.Stats.ControllerLatencyMS; h != nil {
			cc.Controller = [3]string{FormatNum(h.P50, "ms"), FormatNum(h.P90, "ms"), FormatNum(h.P99, "ms")}
			cc.ControllerN = h.N
		} else {
			cc.Controller = [3]string{"-", "-", "-"}
		}
		rep.Checks = append(rep.Checks, cc)
	}
	return rep, nil
}

// noiseFloors compares every A/A copy in the run with its original.
func noiseFloors(r *results.Results) []NoiseFloor {
	var names []string
	for _, s := range r.Summary {
		names = append(names, s.Name)
	}
	var out []NoiseFloor
	for _, pair := range analysis.AAPairs(names) {
		nf := NoiseFloor{Original: pair.Original, Copy: pair.Copy}
		for _, m := range analysis.NoiseFloor(r.Cells, pair, r.Seed) {
			d := m.Delta
			if d == nil {
				continue
			}
			a := float64(m.Value) - float64(d.Abs)
			row := NoiseRow{Key: m.Key, A: FormatNum(a, m.Unit), B: FormatNum(float64(m.Value), m.Unit), Significant: d.Comparison.Significant}
			if pct := float64(d.Pct); !math.IsNaN(pct) && !math.IsInf(pct, 0) {
				row.Delta = fmt.Sprintf("%+.1f%%", pct)
			}
			if lo, hi := float64(d.CI.Lo), float64(d.CI.Hi); a != 0 && !math.IsNaN(lo) && !math.IsInf(lo, 0) && !math.IsInf(hi, 0) {
				row.CI = fmt.Sprintf("[%+.1f%%, %+.1f%%]", lo/a*100, hi/a*100)
			}
			row.Verdict = FormatDelta(d)
			if row.Significant {
				nf.Significant++
			}
			nf.Rows = append(nf.Rows, row)
		}
		out = append(out, nf)
	}
	return out
}

var funcs = template.FuncMap{
	"hasPrefix":  strings.HasPrefix,
	"join":       strings.Join,
	"inc":        func(i int) int { return i + 1 },
	"secs":       results.FormatSecs,
	"num":        FormatNum,
	"label":      verdictHeader,
	"labOverRun": LabOverRunText,
	"warmup":     WarmupText,
	"engaged": func(b *bool) string {
		switch {
		case b == nil:
			return ""
		case *b:
			return "ENGAGED:"
		}
		return "NOT ENGAGED:"
	},
}

// Render writes the self-contained HTML report (inline CSS and SVG; no network fetches).
func Render(rep *Report) ([]byte, error) {
	t, err := template.New("report").Funcs(funcs).Parse(reportTemplate)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, rep); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteAll renders report.html and junit.xml into dir (next to results.json).
func WriteAll(dir string, r *results.Results, verdicts []gates.Verdict) (html, junit string, err error) {
	rep, err := Build(r, verdicts)
	if err != nil {
		return "", "", err
	}
	page, err := Render(rep)
	if err != nil {
		return "", "", err
	}
	html = filepath.Join(dir, "report.html")
	if err := os.WriteFile(html, page, 0o644); err != nil {
		return "", "", err
	}
	junit = filepath.Join(dir, "junit.xml")
	raw, err := JUnit(r, verdicts)
	if err != nil {
		return "", "", err
	}
	return html, junit, os.WriteFile(junit, raw, 0o644)
}
