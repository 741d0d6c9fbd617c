package reports

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/reproduce"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/stats"
)

//go:embed compare.html.tmpl
var compareTemplate string

// Comparison is the model of a compare view.
type Comparison struct {
	Runs     []*results.Results
	Labels   []string
	Cells    []analysis.RunComparison
	Warnings []string
	Charts   []Chart
	// Invariants are each shared cell's invariants judged in every run (verdicts per
	// repetition; their rows print these instead of a p-value).
	Invariants []analysis.InvariantAcross
}

// NewComparison checks that runs can be compared (same suite and schema: an error otherwise),
// lists the configuration differences as warnings, and compares every shared cell.
func NewComparison(paths []string, runs []*results.Results) (*Comparison, error) {
	c := &Comparison{Runs: runs}
	for i, r := range runs {
		if r.Suite != runs[0].Suite {
			return nil, fmt.Errorf("%s is suite %q but %s is suite %q: only runs of one suite can be compared", paths[i], r.Suite, paths[0], runs[0].Suite)
		}
		if r.Schema != runs[0].Schema {
			return nil, fmt.Errorf("%s has schema %q but %s has %q", paths[i], r.Schema, paths[0], runs[0].Schema)
		}
		label := filepath.Base(filepath.Dir(paths[i]))
		if label == "." || label == "/" {
			label = filepath.Base(paths[i])
		}
		c.Labels = append(c.Labels, fmt.Sprintf("%c: %s", 'A'+i, label))
		if i > 0 {
			for _, d := range analysis.ConfigDiff(runs[0].Config, r.Config) {
				c.Warnings = append(c.Warnings, fmt.Sprintf("config differs (%c vs A): %s", 'A'+i, d))
			}
			for k, v := range r.Versions {
				if runs[0].Versions[k] != v {
					c.Warnings = append(c.Warnings, fmt.Sprintf("version differs (%c vs A): %s %s -> %s", 'A'+i, k, runs[0].Versions[k], v))
				}
			}
			a, b := runs[0].Cluster, r.Cluster
			for _, d := range [][3]string{{"provider", a.Provider, b.Provider}, {"distribution", a.Distribution, b.Distribution},
				{"Kubernetes", a.ServerVersion, b.ServerVersion}, {"control-plane tier", a.ControlPlaneTier, b.ControlPlaneTier},
				{"nodes", fmt.Sprint(a.Nodes), fmt.Sprint(b.Nodes)}} {
				if d[1] != d[2] {
					c.Warnings = append(c.Warnings, fmt.Sprintf("cluster differs (%c vs A): %s %s -> %s", 'A'+i, d[0], d[1], d[2]))
				}
			}
		}
	}
	c.Cells = analysis.CompareRuns(runs, runs[0].Seed)
	if len(c.Cells) == 0 {
		return nil, fmt.Errorf("the runs share no cell name to compare")
	}
	c.Invariants = analysis.CompareInvariants(runs, c.Cells)
	for _, cell := range c.Cells {
		var groups []cdfGroup
		for i, r := range runs {
			groups = append(groups, cdfGroup{label: c.Labels[i], cells: cellsNamed(r, cell.Cell)})
		}
		svg, err := cdfChart("Claim latency CDF: "+cell.Cell, groups)
		if err != nil {
			return nil, err
		}
		c.Charts = append(c.Charts, Chart{Title: cell.Cell, SVG: template.HTML(svg)})
	}
	return c, nil
}

func typesText(t map[string]int) string {
	if len(t) == 0 {
		return ""
	}
	var parts []string
	for k, n := range t {
		parts = append(parts, fmt.Sprintf("%dx %s", n, k))
	}
	sort.Strings(parts)
	return ", " + strings.Join(parts, " ")
}

func zonesText(z []string) string {
	if len(z) == 0 {
		return ""
	}
	return ", zones " + strings.Join(z, " ")
}

func valueCI(m results.Metric) string {
	return FormatNum(float64(m.Value), m.Unit) + " " + fmtCI(&m)
}

// InvariantLines are the invariants violated in some run, regressions first ("regression: cell
// none: correctness.pool_excess_max violated in 3 of 3 repetitions (45, 27, 4) in B, held in 3 of
// 3 repetitions in A"), or one line saying they all held ("" when none was judged).
func (c *Comparison) InvariantLines() []string {
	var out []string
	for _, ch := range analysis.InvariantChanges(c.Invariants) {
		out = append(out, ch.Text)
	}
	if len(out) == 0 && len(c.Invariants) > 0 {
		out = append(out, "invariants: held in every repetition of every shared cell in every run")
	}
	return out
}

// VsA is the "vs A" entry of a cell's metric in run i: both runs' verdicts for an invariant, the
// delta (p-value or "~") for any other metric.
func (c *Comparison) VsA(cell, key string, i int, d *results.Delta) string {
	for _, ia := range c.Invariants {
		if ia.Cell == cell && ia.Key == key {
			if t := ia.VsA(i); t != "" {
				return t
			}
		}
	}
	return FormatDelta(d)
}

// Text writes the benchstat-style terminal table, the invariants' verdicts first.
func (c *Comparison) Text(w io.Writer) {
	for _, l := range c.InvariantLines() {
		fmt.Fprintln(w, l)
	}
	for i, r := range c.Runs {
		fmt.Fprintf(w, "%s  %s on %s/%s (Kubernetes %s, %d nodes%s%s, harness RTT %.1f ms), %s, agent-sandbox %s\n", c.Labels[i], r.Suite,
			r.Cluster.Provider, r.Cluster.Distribution, r.Cluster.ServerVersion, r.Cluster.Nodes, typesText(r.Cluster.InstanceTypes),
			zonesText(r.Cluster.Zones), r.Cluster.RTTms, r.StartedAt.Format("2006-01-02 15:04"), r.Versions["agent-sandbox"])
	}
	for _, wn := range c.Warnings {
		fmt.Fprintln(w, "warning:", wn)
	}
	for _, cell := range c.Cells {
		fmt.Fprintf(w, "\ncell %s\n", cell.Cell)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		head := []string{"metric"}
		for i, l := range c.Labels {
			head = append(head, strings.SplitN(l, ":", 2)[0])
			if i > 0 {
				head = append(head, "vs A")
			}
		}
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, m := range cell.Metrics {
			row := []string{m.Key}
			for i, rm := range m.Runs {
				row = append(row, valueCI(rm))
				if i > 0 {
					row = append(row, c.VsA(cell.Cell, m.Key, i, rm.Delta))
				}
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		_ = tw.Flush()
	}
}

// HTML renders compare.html (self-contained).
func (c *Comparison) HTML() ([]byte, error) {
	t, err := template.New("compare").Funcs(template.FuncMap{"vci": valueCI, "delta": FormatDelta, "hasPrefix": strings.HasPrefix}).Parse(compareTemplate)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, c); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

//go:embed reproduce.html.tmpl
var reproduceTemplate string

// ReproduceHTML renders the measured-vs-published table (self-contained).
func ReproduceHTML(rows []reproduce.Row, quick bool) ([]byte, error) {
	t, err := template.New("reproduce").Funcs(template.FuncMap{"num": FormatNum, "f": func(n stats.Num) float64 { return float64(n) }}).Parse(reproduceTemplate)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	err = t.Execute(&buf, struct {
		Rows  []reproduce.Row
		Quick bool
	}{rows, quick})
	return buf.Bytes(), err
}
