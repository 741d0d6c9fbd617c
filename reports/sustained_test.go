package reports

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/stats"
)

// sustainedCell is a ceiling cell whose search passed every rate below knee and broke at it.
func sustainedCell(base results.Cell, name string, rep int, knee float64, rates []float64) results.Cell {
	c := base
	c.Name, c.Rep, c.ID = name, rep, fmt.Sprintf("%s#%d", name, rep)
	s := &results.Sustained{Criteria: []string{"p99", "failed"}, SLOMS: 2000, Pass: 0, Fail: stats.Num(math.Inf(1))}
	for _, r := range rates {
		ok := r < knee
		p := results.SustainedProbe{Rate: r, Completed: math.Min(r, knee), P50MS: 300, P99MS: 900, LagP99MS: 3, PoolMinReady: 5, PoolRefilled: true, OK: ok, Judged: int(r * 15)}
		if ok {
			p.Reason = "every criterion held"
			s.Pass = stats.Num(math.Max(float64(s.Pass), r))
		} else {
			p.P99MS, p.Reason = stats.Num(math.Inf(1)), "claim p99 timeout over the SLO 2s"
			s.Fail = stats.Num(math.Min(float64(s.Fail), r))
		}
		s.Probes = append(s.Probes, p)
	}
	s.Stop = "bracket within tolerance"
	c.Stats.Sustained = s
	return c
}

// The ceiling section comes first, states each cell's estimate and change, draws both charts
// with the knee marked, and lists every probe; a run without a search has no such section.
func TestReportSustainedSection(t *testing.T) {
	r := fixture(t)
	base := r.Cells[0]
	var cells []results.Cell
	for rep, k := range []float64{1, 1.05, 0.95} {
		cells = append(cells,
			sustainedCell(base, "none", rep+1, 20*k, []float64{5, 10, 20, 14, 17}),
			sustainedCell(base, "max-refill-rate", rep+1, 40*k, []float64{5, 10, 20, 40, 28, 34}))
	}
	r.Cells = cells
	r.Baseline = "none"
	r.Summary = analysis.Summarize(cells, []string{"none", "max-refill-rate"}, "none", r.Seed)
	dir := t.TempDir()
	html, _, err := WriteAll(dir, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(html)
	page := string(raw)
	i, j := strings.Index(page, `id="ceiling"`), strings.Index(page, `id="verdict"`)
	if i < 0 || i > j {
		t.Fatalf("ceiling section missing or after the verdict (at %d, verdict at %d)", i, j)
	}
	for _, want := range []string{"Ceiling search: completed vs offered rate", "Ceiling search: claim p99 vs offered rate",
		"completed = offered", "max-refill-rate: ceiling", "geometric mean of 3 repetitions", "broke: claim p99 timeout over the SLO 2s", "baseline"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The brake doubles every repetition's highest passing rate, but 3 repetitions a side cannot
	// reach p < 0.1 in the permutation test over repetitions: "~", with the change and its MDE.
	if !strings.Contains(page, "~ (median &#43;100.0%, p=0.100); MDE") {
		i := strings.Index(page, "max-refill-rate</td>")
		t.Errorf("the max-refill-rate cell's change is not the honest \"~\" at 3 repetitions: %s", page[i:min(len(page), i+500)])
	}
	r2 := fixture(t)
	rep, err := Build(r2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sustained != nil {
		t.Errorf("a burst run has a ceiling section: %+v", rep.Sustained)
	}
}
