package reports

import (
	"bytes"
	"html"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/browsertest"
	"github.com/brakebench/brakebench/internal/gates"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/stats"
)

var nan = stats.Num(math.NaN())

// page renders r (with gates vs) and returns the page as a reader sees its text: entities
// unescaped (html/template writes "+" as "&#43;").
func page(t *testing.T, r *results.Results, vs []gates.Verdict) string {
	t.Helper()
	path, _, err := WriteAll(t.TempDir(), r, vs)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return html.UnescapeString(string(raw))
}

// summary returns the fixture's summary of cell name.
func summary(t *testing.T, r *results.Results, name string) *results.Summary {
	t.Helper()
	for i := range r.Summary {
		if r.Summary[i].Name == name {
			return &r.Summary[i]
		}
	}
	t.Fatalf("no summary %s", name)
	return nil
}

// sequential gives the fixture's cells the records of a sequential run: the baseline ran while
// max-refill-rate ran, max-refill-rate stopped at 4 repetitions with p50 and p99 as given.
func sequential(t *testing.T, p50, p99 results.MetricVerdict, invs ...results.InvariantVerdict) *results.Results {
	t.Helper()
	r := fixture(t)
	base := summary(t, r, "none")
	base.Stopping = &results.Stopping{Design: "sequential", Reps: 4, MinReps: 3, MaxReps: 10, Reason: "baseline", Detail: "ran while max-refill-rate ran"}
	c := summary(t, r, "max-refill-rate")
	c.Stopping = &results.Stopping{Design: "sequential", Reps: 4, MinReps: 3, MaxReps: 10, Reason: "effect", Detail: "p99 crossed the efficacy boundary at 4 repetitions"}
	p50.Key, p99.Key = "claim.p50_ms", "claim.p99_ms"
	c.Verdict = &results.Verdict{Metrics: []results.MetricVerdict{p50, p99}}
	c.Invariants = invs
	return r
}

var (
	faster = results.MetricVerdict{Verdict: "faster", Pct: -34.8, CI: stats.CI{Lo: -45.1, Hi: -22.0}, P: 0.004, MDEPct: 12, Look: 4, Text: "34.8% faster"}
	slower = results.MetricVerdict{Verdict: "slower", Pct: 51.2, CI: stats.CI{Lo: 20.5, Hi: 90.1}, P: 0.0004, MDEPct: 15, Look: 3}
	equiv  = results.MetricVerdict{Verdict: "equivalent", Pct: 1.2, CI: stats.CI{Lo: -8, Hi: 9.5}, P: 0.7, MDEPct: 18, EquivalencePct: 20, Look: 6}
	open   = results.MetricVerdict{Verdict: "~", Pct: -9.5, CI: stats.CI{Lo: -30, Hi: 12}, P: 0.2, MDEPct: 24}
	few    = results.MetricVerdict{Verdict: "insufficient repetitions", Pct: nan, CI: stats.CI{Lo: nan, Hi: nan}, P: nan, MDEPct: nan}
	held   = []results.InvariantVerdict{
		{Key: "correctness.double_bound", Reps: 5, Text: "held in 5 of 5"},
		{Key: "correctness.orphans", Reps: 5, Text: "held in 5 of 5"},
	}
	broken = []results.InvariantVerdict{
		{Key: "correctness.double_bound", Reps: 3, Text: "held in 3 of 3"},
		{Key: "correctness.refill_creates_per_slot", Ideal: 1, Tolerance: 0.05, Reps: 3, Violated: 3, Values: []stats.Num{45, 27, 4}, Text: "correctness.refill_creates_per_slot violated in 3 of 3 repetitions (45, 27, 4)"},
	}
)

// cellClass is the class of the verdict table cell whose text starts with text ("-" when there
// is none).
func cellClass(p, text string) string {
	m := regexp.MustCompile(`<td class="v ?([a-z]*)"[^>]*>` + regexp.QuoteMeta(text)).FindStringSubmatch(p)
	if m == nil {
		return "-"
	}
	return m[1]
}

func TestVerdictSection(t *testing.T) {
	for _, tc := range []struct {
		name    string
		r       func(t *testing.T) *results.Results
		want    []string
		notWant []string
		// classes: verdict cell text -> its class ("" neutral, "pass" green, "fail" red)
		classes map[string]string
	}{
		{
			name: "faster",
			r:    func(t *testing.T) *results.Results { return sequential(t, faster, faster, held...) },
			want: []string{"p99 -34.8% [-45.1, -22.0] faster (p=0.004, settled at 4 reps)", "all invariants held in 5 of 5",
				"p99 crossed the efficacy boundary at 4 repetitions", "ran while max-refill-rate ran", "sequential, 3 to 10 repetitions", `title="34.8% faster"`},
			classes: map[string]string{"p50 -34.8%": "pass", "p99 -34.8%": "pass", "baseline": ""},
		},
		{
			name:    "slower, invariant violated",
			r:       func(t *testing.T) *results.Results { return sequential(t, equiv, slower, broken...) },
			want:    []string{"p99 +51.2% [+20.5, +90.1] slower (p<0.001, settled at 3 reps)", `<li class="fail">correctness.refill_creates_per_slot violated in 3 of 3 repetitions (45, 27, 4)</li>`},
			notWant: []string{"all invariants held", "correctness.double_bound"},
			classes: map[string]string{"p99 +51.2%": "fail", "p50 +1.2%": ""},
		},
		{
			name:    "equivalent",
			r:       func(t *testing.T) *results.Results { return sequential(t, equiv, equiv) },
			want:    []string{"p50 +1.2% [-8.0, +9.5] no change larger than 20% (MDE 18%)"},
			notWant: []string{"faster (", "slower ("},
			classes: map[string]string{"p99 +1.2%": ""},
		},
		{
			name: "not settled, insufficient repetitions",
			r: func(t *testing.T) *results.Results {
				r := sequential(t, few, open)
				summary(t, r, "max-refill-rate").Stopping = &results.Stopping{Design: "sequential", Reps: 10, MinReps: 3, MaxReps: 10, Reason: "max", Detail: "reached the planned maximum of 10 repetitions"}
				return r
			},
			want:    []string{"p99 -9.5% [-30.0, +12.0] ~ not settled at 10 reps (MDE 24%)", ">p50 insufficient repetitions<", "reached the planned maximum of 10 repetitions"},
			classes: map[string]string{"p99 -9.5%": "", "p50 insufficient": ""},
		},
		{
			name: "open: the run ended before the design settled it",
			r: func(t *testing.T) *results.Results {
				r := sequential(t, open, open)
				summary(t, r, "max-refill-rate").Stopping = &results.Stopping{Design: "sequential", Reps: 3, MinReps: 3, MaxReps: 10, Reason: "interrupted", Detail: "the run ended after 3 repetitions (planned up to 10); p50, p99 not settled"}
				return r
			},
			want:    []string{"p50 -9.5% [-30.0, +12.0] ~ open at 3 reps (MDE 24%)", "the run ended after 3 repetitions (planned up to 10)"},
			notWant: []string{"not settled at"},
		},
		{
			name: "not applicable cell, missing metric, no stopping record",
			r: func(t *testing.T) *results.Results {
				r := sequential(t, faster, faster)
				c := summary(t, r, "max-refill-rate")
				c.Stopping = nil
				c.Verdict.Metrics = c.Verdict.Metrics[1:]
				r.Summary = append(r.Summary, results.Summary{Name: "gpu", NotApplicable: "needs a node with nvidia.com/gpu"})
				return r
			},
			want:    []string{"not applicable: needs a node with nvidia.com/gpu", "p99 -34.8%"},
			notWant: []string{"p50 -34.8%"},
		},
		{
			name:    "results written before verdicts",
			r:       fixture,
			want:    []string{`id="no-verdict"`, "No cell has a verdict in these results", "PASS: all 1 gates hold"},
			notWant: []string{"INCOMPLETE", "all invariants held"},
		},
		{
			name: "a verdict without metrics, non-finite figures",
			r: func(t *testing.T) *results.Results {
				r := fixture(t)
				summary(t, r, "max-refill-rate").Verdict = &results.Verdict{}
				r.Summary = append(r.Summary, results.Summary{Name: "odd", Reps: 2, Verdict: &results.Verdict{Metrics: []results.MetricVerdict{
					{Key: "claim.p99_ms", Verdict: "faster", Pct: nan, CI: stats.CI{Lo: nan, Hi: stats.Num(math.Inf(1))}, P: nan},
					{Key: "claim.p50_ms", Verdict: "new-kind", Text: "something new"},
				}}})
				return r
			},
			want:    []string{">p99 faster<", ">p50 something new<", "<th class=\"k\">claim p99</th>"},
			classes: map[string]string{"p99 faster": "pass"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := page(t, tc.r(t), verdicts[:1])
			v, g := strings.Index(p, `id="verdict"`), strings.Index(p, `id="gates"`)
			if v < 0 || g < 0 || v > g {
				t.Errorf("the verdict section (at %d) must come before the gates (at %d)", v, g)
			}
			if strings.Contains(p[:v], "<table") {
				t.Error("a table before the verdict section")
			}
			section := p[v:g]
			for _, w := range tc.want {
				if !strings.Contains(p, w) {
					t.Errorf("report lacks %q", w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(section, w) {
					t.Errorf("verdict section has %q", w)
				}
			}
			for text, class := range tc.classes {
				if got := cellClass(section, text); got != class {
					t.Errorf("cell %q: class %q, want %q", text, got, class)
				}
			}
		})
	}
}

// An incomplete run is headed as such and never reads PASS, in the HTML and in the terminal.
func TestIncompleteRunNeverPasses(t *testing.T) {
	const heading = "INCOMPLETE: interrupted after 5 of 40 cells — verdicts cover only what ran"
	pass := []gates.Verdict{verdicts[0], {Name: "no failed claims", Passed: true}}
	for _, tc := range []struct {
		name     string
		edit     func(r *results.Results)
		gates    []gates.Verdict
		complete bool
		want     []string
		notWant  []string
	}{
		{
			name:  "incomplete, every gate held",
			edit:  func(r *results.Results) { r.Incomplete = "interrupted after 5 of 40 cells" },
			gates: pass,
			want:  []string{heading, `class="verdict warn" id="incomplete"`, `<p class="verdict warn">gates held on the cells that ran: 2 of 2`},
		},
		{
			name:  "incomplete, a gate failed",
			edit:  func(r *results.Results) { r.Incomplete = "INCOMPLETE: interrupted after 5 of 40 cells" },
			gates: verdicts,
			want:  []string{heading, "FAIL: 1 of 2 gates failed on the cells that ran"},
		},
		{
			name:  "interrupted, said only by a run error",
			edit:  func(r *results.Results) { r.Errors = []string{"interrupted after 5 of 40 cells"} },
			gates: pass,
			want:  []string{heading, "gates held on the cells that ran"},
		},
		{
			name: "a cell stopped by the interruption, no gates",
			edit: func(r *results.Results) {
				r.Summary[1].Stopping = &results.Stopping{Reps: 2, Reason: "interrupted", Detail: "interrupted at 2 repetitions"}
			},
			want: []string{"INCOMPLETE: interrupted (cell max-refill-rate stopped at 2 repetitions)", `class="verdict neutral">No gates were evaluated`},
		},
		{
			name:     "complete run: the control",
			edit:     func(*results.Results) {},
			gates:    pass,
			complete: true,
			want:     []string{`<p class="verdict pass">PASS: all 2 gates hold</p>`},
			notWant:  []string{"INCOMPLETE", "cells that ran"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sequential(t, faster, faster, held...)
			tc.edit(r)
			p := page(t, r, tc.gates)
			var text bytes.Buffer
			Table(&text, r)
			incomplete := !tc.complete
			for _, out := range []struct{ what, s string }{{"report.html", p}, {"terminal table", text.String()}} {
				if incomplete && strings.Contains(out.s, "PASS") {
					t.Errorf("%s of an incomplete run says PASS", out.what)
				}
			}
			if incomplete && !strings.HasPrefix(text.String(), "INCOMPLETE: ") {
				t.Errorf("terminal table does not start with the incomplete heading:\n%s", text.String())
			}
			if incomplete {
				if h, v := strings.Index(p, "INCOMPLETE: "), strings.Index(p, `id="verdict"`); h < 0 || h > v {
					t.Error("the incomplete heading must come before the verdict section")
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(p, w) {
					t.Errorf("report lacks %q", w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(p, w) || strings.Contains(text.String(), w) {
					t.Errorf("report or table has %q", w)
				}
			}
		})
	}
}

// Every comparison row's delta shows its MDE beside the p-value, "MDE n/a" when there is none.
func TestComparisonShowsMDE(t *testing.T) {
	for _, tc := range []struct {
		name string
		mde  stats.Num
		want string
	}{
		{"measured", 18.2, "MDE 18%"},
		{"small", 2.46, "MDE 2.5%"},
		{"null", nan, "MDE n/a"},
		{"absent (old results)", 0, "MDE n/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := fixture(t)
			deltas := 0
			for i := range r.Summary {
				for j := range r.Summary[i].Metrics {
					if d := r.Summary[i].Metrics[j].Delta; d != nil {
						d.MDEPct = tc.mde
						deltas++
					}
				}
			}
			if deltas == 0 {
				t.Fatal("the fixture has no comparison")
			}
			p := page(t, r, nil)
			c := strings.Index(p, `id="comparison"`)
			if c < 0 {
				t.Fatal("no comparison section")
			}
			table, _, _ := strings.Cut(p[c:], "</table>")
			if got := strings.Count(table, tc.want); got != deltas {
				t.Errorf("%d of %d comparisons show %q", got, deltas, tc.want)
			}
			if got := strings.Count(table, "MDE "); got != deltas {
				t.Errorf("%d MDEs for %d comparisons", got, deltas)
			}
			if !regexp.MustCompile(`(p=[0-9.]+|insufficient repetitions) · ` + regexp.QuoteMeta(tc.want)).MatchString(table) {
				t.Errorf("no MDE beside a p-value in:\n%s", table)
			}
		})
	}
}

// What a reader's browser shows of an interrupted run with verdicts: the incomplete heading
// first, the verdict words, no PASS anywhere.
func TestVerdictInChromium(t *testing.T) {
	bin := browsertest.Chromium(t)
	r := sequential(t, equiv, faster, broken...)
	r.Incomplete = "interrupted after 5 of 40 cells"
	path, _, err := WriteAll(t.TempDir(), r, verdicts[:1])
	if err != nil {
		t.Fatal(err)
	}
	dom, external := browsertest.Load(t, bin, path)
	text := html.UnescapeString(string(dom))
	order := []string{"INCOMPLETE: interrupted after 5 of 40 cells", "p50 +1.2% [-8.0, +9.5] no change larger than 20% (MDE 18%)",
		"p99 -34.8% [-45.1, -22.0] faster (p=0.004, settled at 4 reps)", "violated in 3 of 3 repetitions (45, 27, 4)", "gates held on the cells that ran", "Comparison (baseline: none)"}
	last := -1
	for _, w := range order {
		i := strings.Index(text, w)
		if i < 0 || i < last {
			t.Errorf("rendered page lacks %q or shows it out of order", w)
		}
		last = max(last, i)
	}
	if strings.Contains(text, "PASS") {
		t.Error("rendered page of an incomplete run says PASS")
	}
	for _, u := range external {
		t.Errorf("the report made a request: %s", u)
	}
}

// The design column says when the design paired each repetition with the baseline's of its
// round, and says nothing new for results written before pairing.
func TestAnswerRowPairedDesign(t *testing.T) {
	for _, tc := range []struct {
		paired bool
		want   string
	}{
		{true, "sequential paired by round, 3 to 10 repetitions"},
		{false, "sequential, 3 to 10 repetitions"},
	} {
		s := results.Summary{Name: "max-refill-rate", Reps: 4, Stopping: &results.Stopping{Design: "sequential", Paired: tc.paired, Reps: 4, MinReps: 3, MaxReps: 10, Reason: "effect"}}
		if got := answerRow(s, nil, false).Design; got != tc.want {
			t.Errorf("paired %v: design %q, want %q", tc.paired, got, tc.want)
		}
	}
}
