package reports

import (
	"fmt"
	"math"
	"strings"

	"github.com/brakebench/brakebench/internal/results"
)

// Answer is the report's first screen: each compared cell's verdict against the baseline on the
// verdict metrics, how many repetitions it got and why no more, and its invariants.
type Answer struct {
	// Keys are the verdict metrics, one column each, in the order the verdicts list them.
	Keys []string
	Rows []AnswerRow
}

// Span is how many columns the verdict metrics take (at least one).
func (a *Answer) Span() int { return max(1, len(a.Keys)) }

// AnswerRow is one cell of the Verdict section.
type AnswerRow struct {
	Cell     string
	Baseline bool
	// NotApplicable is why the cell did not run on this cluster ("" when it did).
	NotApplicable string
	// Metrics has one entry per Answer.Keys (empty Text when the cell has no verdict on it).
	Metrics []AnswerMetric
	Reps    string
	// Design is "sequential, 3 to 10 repetitions" or "sequential paired by round, 3 to 10
	// repetitions" ("" when the results do not say).
	Design  string
	Stopped string // why the cell got no more repetitions ("" when the results do not say)
	// Held is "all invariants held in 5 of 5" when none was violated ("" when none was judged);
	// Violated are the violated invariants' lines.
	Held     string
	Violated []string
}

// AnswerMetric is one verdict metric of one cell.
type AnswerMetric struct {
	Text  string
	Class string // "pass" (faster), "fail" (slower), "" (neither)
	Title string // the analysis's own line, shown on hover
}

// buildAnswer assembles the Verdict section; nil when no summary has a verdict (results written
// before verdicts existed, or a suite without verdict metrics).
func buildAnswer(r *results.Results) *Answer {
	a := &Answer{}
	seen := map[string]bool{}
	compared := false
	for _, s := range r.Summary {
		if s.Verdict == nil {
			continue
		}
		compared = true
		for _, m := range s.Verdict.Metrics {
			if !seen[m.Key] {
				seen[m.Key] = true
				a.Keys = append(a.Keys, m.Key)
			}
		}
	}
	if !compared {
		return nil
	}
	for _, s := range r.Summary {
		if s.Name == r.Baseline && r.Baseline != "" {
			a.Rows = append([]AnswerRow{answerRow(s, a.Keys, true)}, a.Rows...)
			continue
		}
		if s.Verdict == nil && s.NotApplicable == "" {
			continue
		}
		a.Rows = append(a.Rows, answerRow(s, a.Keys, false))
	}
	return a
}

func answerRow(s results.Summary, keys []string, baseline bool) AnswerRow {
	row := AnswerRow{Cell: s.Name, Baseline: baseline, NotApplicable: s.NotApplicable, Reps: fmt.Sprint(s.Reps)}
	if st := s.Stopping; st != nil {
		row.Reps = fmt.Sprint(st.Reps)
		row.Design = st.Design
		if st.Paired {
			row.Design += " paired by round"
		}
		if st.MinReps > 0 && st.MaxReps > 0 {
			row.Design = strings.TrimPrefix(fmt.Sprintf("%s, %d to %d repetitions", row.Design, st.MinReps, st.MaxReps), ", ")
		}
		row.Stopped = st.Detail
		if row.Stopped == "" {
			row.Stopped = st.Reason
		}
	}
	row.Held, row.Violated = invariantsText(s.Invariants)
	if baseline || s.NotApplicable != "" {
		return row
	}
	for _, k := range keys {
		am := AnswerMetric{}
		if s.Verdict != nil {
			for _, m := range s.Verdict.Metrics {
				if m.Key == k {
					am = metricVerdict(m, s)
					break
				}
			}
		}
		row.Metrics = append(row.Metrics, am)
	}
	return row
}

// verdictLabel is a verdict metric's short name: "claim.p99_ms" -> "p99".
func verdictLabel(key string) string {
	return strings.TrimSuffix(strings.TrimPrefix(key, "claim."), "_ms")
}

// verdictHeader is a verdict metric's column heading: "claim.p99_ms" -> "claim p99".
func verdictHeader(key string) string {
	if l, ok := strings.CutPrefix(key, "claim."); ok {
		return "claim " + strings.TrimSuffix(l, "_ms")
	}
	return key
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// pctText is a percentage with a precision that keeps small figures readable ("18%", "2.5%").
func pctText(v float64) string {
	if math.Abs(v) < 10 {
		return fmt.Sprintf("%.1f%%", v)
	}
	return fmt.Sprintf("%.0f%%", v)
}

// mdeText is "MDE 18%", or "MDE n/a" when there is none: null (NaN) or absent (0, in results
// written before the MDE was recorded; a real MDE is never 0).
func mdeText(v float64) string {
	if !finite(v) || v <= 0 {
		return "MDE n/a"
	}
	return "MDE " + pctText(v)
}

func pText(p float64) string {
	if p < 0.001 {
		return "p<0.001"
	}
	return fmt.Sprintf("p=%.3f", p)
}

// metricVerdict renders one verdict metric: "p99 -34.8% [-45.1, -22.0] faster (p=0.004, settled
// at 4 reps)", "p50 +1.2% [-8.0, +9.5] no change larger than 20% (MDE 18%)", "p99 ~ not settled
// at 10 reps (MDE 24%)" ("~ open at 3 reps" when the run ended first), "p50 insufficient
// repetitions".
func metricVerdict(m results.MetricVerdict, s results.Summary) AnswerMetric {
	out := AnswerMetric{Title: m.Text}
	parts := []string{verdictLabel(m.Key)}
	known := m.Verdict == "faster" || m.Verdict == "slower" || m.Verdict == "equivalent" || m.Verdict == "~"
	if pct := float64(m.Pct); known && finite(pct) {
		parts = append(parts, fmt.Sprintf("%+.1f%%", pct))
		if lo, hi := float64(m.CI.Lo), float64(m.CI.Hi); finite(lo) && finite(hi) {
			parts = append(parts, fmt.Sprintf("[%+.1f, %+.1f]", lo, hi))
		}
	}
	reps := m.Look
	if reps <= 0 && s.Stopping != nil {
		reps = s.Stopping.Reps
	}
	if reps <= 0 {
		reps = s.Reps
	}
	switch m.Verdict {
	case "faster", "slower":
		out.Class = "pass"
		if m.Verdict == "slower" {
			out.Class = "fail"
		}
		var why []string
		if p := float64(m.P); finite(p) {
			why = append(why, pText(p))
		}
		if m.Look > 0 {
			why = append(why, fmt.Sprintf("settled at %d reps", m.Look))
		}
		w := m.Verdict
		if len(why) > 0 {
			w += " (" + strings.Join(why, ", ") + ")"
		}
		parts = append(parts, w)
	case "equivalent":
		w := "equivalent"
		if e := m.EquivalencePct; e > 0 {
			w = "no change larger than " + pctText(e)
		}
		parts = append(parts, w+" ("+mdeText(float64(m.MDEPct))+")")
	case "~":
		state := "not settled"
		if st := s.Stopping; st != nil && (st.Reason == "open" || st.Reason == "interrupted") {
			state = "open" // the run ended before the design could settle it
		}
		parts = append(parts, fmt.Sprintf("~ %s at %d reps (%s)", state, reps, mdeText(float64(m.MDEPct))))
	case "insufficient repetitions":
		parts = append(parts, "insufficient repetitions")
	default:
		switch {
		case m.Text != "":
			parts = append(parts, m.Text)
		case m.Verdict != "":
			parts = append(parts, m.Verdict)
		default:
			parts = append(parts, "no verdict")
		}
	}
	out.Text = strings.Join(parts, " ")
	return out
}

// invariantsText is "all invariants held in 5 of 5" when none was violated, else the violated
// ones' lines; both empty when no invariant was judged.
func invariantsText(invs []results.InvariantVerdict) (held string, violated []string) {
	if len(invs) == 0 {
		return "", nil
	}
	reps, same := invs[0].Reps, true
	for _, iv := range invs {
		same = same && iv.Reps == reps
		if iv.Violated == 0 {
			continue
		}
		t := iv.Text
		if t == "" {
			t = fmt.Sprintf("violated in %d of %d repetitions", iv.Violated, iv.Reps)
		}
		if !strings.Contains(t, iv.Key) {
			t = iv.Key + ": " + t
		}
		violated = append(violated, t)
	}
	if len(violated) > 0 {
		return "", violated
	}
	if same && reps > 0 {
		return fmt.Sprintf("all invariants held in %d of %d", reps, reps), nil
	}
	return "all invariants held in every repetition", nil
}

// IncompleteText is the heading of a run that did not finish its plan ("INCOMPLETE: interrupted
// after 5 of 40 cells — verdicts cover only what ran"), or "" for a complete run. A run is
// incomplete when its results say so, when a run error says it was interrupted, or when a cell
// stopped its repetitions because the run was interrupted.
func IncompleteText(r *results.Results) string {
	why := incompleteWhy(r)
	if why == "" {
		return ""
	}
	return "INCOMPLETE: " + why + " — verdicts cover only what ran"
}

func incompleteWhy(r *results.Results) string {
	if w := strings.TrimSpace(r.Incomplete); w != "" {
		if len(w) >= len("incomplete:") && strings.EqualFold(w[:len("incomplete:")], "incomplete:") {
			w = strings.TrimSpace(w[len("incomplete:"):])
		}
		if w == "" {
			return "the run did not finish its plan"
		}
		return w
	}
	for _, e := range r.Errors {
		if strings.Contains(strings.ToLower(e), "interrupted") {
			return e
		}
	}
	for _, s := range r.Summary {
		if st := s.Stopping; st != nil && st.Reason == "interrupted" {
			return fmt.Sprintf("interrupted (cell %s stopped at %d repetitions)", s.Name, st.Reps)
		}
	}
	return ""
}
