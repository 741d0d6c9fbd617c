package reports

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/browsertest"
	"github.com/brakebench/brakebench/internal/gates"
	"github.com/brakebench/brakebench/internal/results"
)

// testdata/results.json was written by `brakebench run warmpool-burst` on the lab (60 claims,
// cells none and max-refill-rate, one repetition).
func fixture(t *testing.T) *results.Results {
	t.Helper()
	r, err := results.Read("testdata/results.json")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var verdicts = []gates.Verdict{
	{Name: "every claim becomes Ready", Expr: "all.claims.failed == 0", Passed: true, Message: "passed"},
	{Name: "p99 under 1s", Expr: "cell(none).claim.p99 <= 1s", Passed: false, Measured: 2793, Threshold: 1000, Unit: "ms", Message: "run: 2793.0ms <= 1000.0ms is false"},
}

// external matches anything that would make a browser fetch: src/href attributes, CSS url(),
// @import, to any scheme other than a fragment or a relative file.
var external = regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:|//)|url\(\s*["']?(https?:|//)|@import`)

func render(t *testing.T) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	r := fixture(t)
	raw, _ := os.ReadFile("testdata/results.json")
	if err := os.WriteFile(filepath.Join(dir, "results.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	html, _, err := WriteAll(dir, r, verdicts)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(html)
	return html, page
}

func TestReportIsCompleteAndSelfContained(t *testing.T) {
	_, page := render(t)
	s := string(page)
	order := []string{`id="verdict"`, `id="gates"`, `id="provenance"`, `id="comparison"`, `id="charts"`, `id="faults"`, `id="crosscheck"`, `id="raw"`}
	last := -1
	for _, id := range order {
		i := strings.Index(s, id)
		if i < 0 || i < last {
			t.Errorf("section %s missing or out of order", id)
		}
		last = i
	}
	for _, want := range []string{"FAIL: 1 of 2 gates failed", "claim.p99_ms", "ceiling.refill_create_5s", "max-refill-rate", "v1.37.2", "results.json"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if n := strings.Count(s, "<svg"); n < 3 {
		t.Errorf("%d charts, want at least 3", n)
	}
	if m := external.FindString(s); m != "" {
		t.Errorf("report would fetch from the network: %q", m)
	}
}

// TestReportInChromium loads the report in headless Chromium (Debian's chromium package; .ci/run
// installs it), checks what a reader sees, records every network request with a net log, and
// leaves a screenshot for the CI log.
func TestReportInChromium(t *testing.T) {
	bin := browsertest.Chromium(t)
	html, _ := render(t)
	tmp := t.TempDir()
	base := browsertest.Args(tmp, filepath.Join(tmp, "net.json"))
	dom, external := browsertest.Load(t, bin, html)
	for _, want := range []string{"FAIL: 1 of 2 gates failed", "Comparison (baseline: none)", "Controller metric cross-check"} {
		if !bytes.Contains(dom, []byte(want)) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	if n := bytes.Count(dom, []byte("<svg")); n < 3 {
		t.Errorf("rendered page has %d charts", n)
	}
	if n := bytes.Count(dom, []byte("<table")); n < 4 {
		t.Errorf("rendered page has %d tables", n)
	}
	for _, u := range external {
		t.Errorf("the report made a request: %s", u)
	}
	shotDir := filepath.Join("..", "out", "ci-artifacts")
	if err := os.MkdirAll(shotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot, _ := filepath.Abs(filepath.Join(shotDir, "report.png"))
	if out, err := exec.Command(bin, append(base, "--window-size=1280,5000", "--screenshot="+shot, "file://"+html)...).CombinedOutput(); err != nil {
		t.Fatalf("screenshot: %v\n%s", err, out)
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10_000 {
		t.Fatalf("screenshot missing or empty: %v", err)
	}
	t.Logf("report screenshot (CI artifact): %s", shot)
}

func TestJUnitOneCasePerGate(t *testing.T) {
	raw, err := JUnit(fixture(t), verdicts)
	if err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Suites[0]
	if s.Tests != 2 || s.Failures != 1 || len(s.Cases) != 2 || s.Cases[1].Failure == nil || s.Cases[0].Failure != nil {
		t.Fatalf("junit %+v", s)
	}
	if !strings.Contains(s.Cases[1].Failure.Text, "measured 2793ms, threshold 1000ms") {
		t.Errorf("failure text %q", s.Cases[1].Failure.Text)
	}
}

// scaled returns a copy of r whose claim latencies are multiplied by f.
func scaled(t *testing.T, f float64) *results.Results {
	r := fixture(t)
	for i := range r.Cells {
		for j := range r.Cells[i].Claims {
			if l := r.Cells[i].Claims[j].LatencyMS; l != nil {
				v := *l * f
				r.Cells[i].Claims[j].LatencyMS = &v
			}
		}
	}
	return r
}

func TestCompare(t *testing.T) {
	paths := []string{"a/results.json", "b/results.json"}
	find := func(c *Comparison, cell, key string) results.Metric {
		for _, rc := range c.Cells {
			for _, m := range rc.Metrics {
				if rc.Cell == cell && m.Key == key {
					return m.Runs[1]
				}
			}
		}
		t.Fatalf("no %s/%s", cell, key)
		return results.Metric{}
	}
	slower, err := NewComparison(paths, []*results.Results{fixture(t), scaled(t, 2)})
	if err != nil {
		t.Fatal(err)
	}
	// One repetition a side: the change is measured but no p-value is claimed.
	if m := find(slower, "none", "claim.p50_ms"); m.Delta == nil || m.Delta.Comparison.Significant || float64(m.Delta.Pct) < 90 ||
		FormatDelta(m.Delta) != "~ (insufficient repetitions)" {
		t.Errorf("doubling latency with one repetition a side: %+v (%q)", m.Delta, FormatDelta(m.Delta))
	}
	// Four repetitions a side (copies of the fixture's cell, each scaled a little): significant.
	reps := func(f float64) *results.Results {
		r := scaled(t, f)
		var cells []results.Cell
		for rep, k := range []float64{0.98, 1.0, 1.01, 1.03} {
			for _, c := range r.Cells {
				c.Rep, c.ID = rep+1, fmt.Sprintf("%s#%d", c.Name, rep+1)
				var claims []results.Claim
				for _, cl := range c.Claims {
					if cl.LatencyMS != nil {
						v := *cl.LatencyMS * k
						cl.LatencyMS = &v
					}
					claims = append(claims, cl)
				}
				c.Claims = claims
				cells = append(cells, c)
			}
		}
		r.Cells = cells
		return r
	}
	slower4, err := NewComparison(paths, []*results.Results{reps(1), reps(2)})
	if err != nil {
		t.Fatal(err)
	}
	if m := find(slower4, "none", "claim.p50_ms"); m.Delta == nil || !m.Delta.Comparison.Significant || float64(m.Delta.Pct) < 90 {
		t.Errorf("doubling latency over four repetitions a side should be a significant +100%%: %+v", m.Delta)
	}
	same, err := NewComparison(paths, []*results.Results{fixture(t), fixture(t)})
	if err != nil {
		t.Fatal(err)
	}
	if m := find(same, "none", "claim.p50_ms"); m.Delta == nil || m.Delta.Comparison.Significant || FormatDelta(m.Delta)[0] != '~' {
		t.Errorf("identical runs must compare as ~: %+v", m.Delta)
	}
	if len(same.Warnings) != 0 {
		t.Errorf("identical configs warned: %v", same.Warnings)
	}
	var buf bytes.Buffer
	same.Text(&buf)
	if !strings.Contains(buf.String(), "cell none") || !strings.Contains(buf.String(), "vs A") {
		t.Errorf("text:\n%s", buf.String())
	}
	other := fixture(t)
	other.Suite = "warmpool-sustained"
	if _, err := NewComparison(paths, []*results.Results{fixture(t), other}); err == nil || !strings.Contains(err.Error(), "only runs of one suite can be compared") {
		t.Errorf("different suites: %v", err)
	}
	changed := fixture(t)
	changed.Config["workload"].(map[string]any)["claims"] = 61.0
	c, err := NewComparison(paths, []*results.Results{fixture(t), changed})
	if err != nil || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "workload.claims: 60 -> 61") {
		t.Errorf("config difference warnings: %v %v", c, err)
	}
}

// An A/A run (a brake listed twice) gets a noise-floor section: the identical cells compared
// metric by metric, with the interval each difference could not resolve.
func TestReportNoiseFloor(t *testing.T) {
	r := fixture(t)
	var base results.Cell
	for _, c := range r.Cells {
		if c.Name == "none" {
			base = c
			break
		}
	}
	var cells []results.Cell
	for i, k := range []float64{0.98, 1.0, 1.01, 1.03, 0.99, 1.02, 1.0, 0.97} {
		c := base
		c.Name, c.Rep = "none", i%4+1
		if i >= 4 {
			c.Name = "none_2"
		}
		c.ID = fmt.Sprintf("%s#%d", c.Name, c.Rep)
		c.Claims = nil
		for _, cl := range base.Claims {
			if cl.LatencyMS != nil {
				v := *cl.LatencyMS * k
				cl.LatencyMS = &v
			}
			c.Claims = append(c.Claims, cl)
		}
		cells = append(cells, c)
	}
	r.Cells = cells
	r.Summary = analysis.Summarize(cells, []string{"none", "none_2"}, "none", r.Seed)
	dir := t.TempDir()
	html, _, err := WriteAll(dir, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(html)
	for _, want := range []string{"A/A noise floor: none_2 vs none", "claim.p99_ms", "No metric differs significantly"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
