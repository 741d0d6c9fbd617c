// Package reports renders results: the terminal comparison table (and, later, HTML and JUnit).
package reports

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/brakebench/brakebench/internal/catalog"
	"github.com/brakebench/brakebench/internal/results"
)

// TableRows are the metrics the terminal table shows, in order.
var TableRows = []string{
	"claim.p50_ms", "claim.p90_ms", "claim.p99_ms",
	"claims.warm", "claims.cold", "claims.failed",
	"ceiling.sandbox_create_1s", "ceiling.sandbox_create_5s",
	"ceiling.refill_create_5s", "ceiling.pod_schedule_1s", "ceiling.pod_schedule_5s",
	"pool.refill_start_s", "pool.refill_s",
	"controller.claim_startup_p50_ms", "cpu.kube-apiserver_s",
	"claims.all_ready_s", "writes.per_claim", "writes.conflicts_per_claim",
	"autoscale.bound", "autoscale.max_spec", "autoscale.end_spec", "autoscale.replica_changes",
	"autoscale.decision_up_s", "autoscale.capacity_up_s", "autoscale.decision_down_s", "autoscale.capacity_down_s",
	"autoscale.overshoot_max", "autoscale.api_writes", "autoscale.exporter_reads", "autoscale.claims_warm", "autoscale.claims_cold",
	"gang.resize_accepted", "gang.peak_gpus_running", "gang.quota_gpus", "gang.peak_reserved_gpus",
	"gang.over_quota_gpus", "gang.peak_unreserved_gpus", "gang.unreserved_s", "gang.bypass_ratio", "gang.scale_replicas_accepted", "gang.admitted_s",
}

// FormatNum prints a number compactly ("timeout" for +Inf, "-" for no data).
func FormatNum(v float64, unit string) string {
	switch {
	case math.IsInf(v, 1):
		return "timeout"
	case math.IsNaN(v):
		return "-"
	case unit == "claims":
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// FormatDelta prints a delta benchstat-style: "+12% (p=0.002)" or "~ (p=0.40)".
func FormatDelta(d *results.Delta) string {
	if d == nil {
		return ""
	}
	p := float64(d.Comparison.P)
	if math.IsNaN(p) {
		if d.Comparison.Note != "" {
			return "~ (" + shortNote(d.Comparison.Note) + ")"
		}
		return "~"
	}
	if !d.Comparison.Significant {
		return fmt.Sprintf("~ (p=%.2f)", p)
	}
	pct := float64(d.Pct)
	if math.IsInf(pct, 0) || math.IsNaN(pct) {
		return fmt.Sprintf("%s (p=%.3f)", d.Comparison.Delta, p)
	}
	return fmt.Sprintf("%+.0f%% (p=%.3f)", pct, p)
}

// shortNote is the first clause of a comparison's note ("insufficient repetitions (2 vs 3; ...)"
// -> "insufficient repetitions").
func shortNote(n string) string {
	if i := strings.Index(n, " ("); i > 0 {
		return n[:i]
	}
	return n
}

// Table writes the cells side by side with each cell's delta against the baseline.
// An incomplete run is headed as such (IncompleteText).
func Table(w io.Writer, r *results.Results) {
	if t := IncompleteText(r); t != "" {
		fmt.Fprintln(w, t)
	}
	SustainedLines(w, r)
	Verdicts(w, r)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var head []string
	head = append(head, "metric")
	for _, s := range r.Summary {
		head = append(head, fmt.Sprintf("%s (n=%d)", s.Name, s.Reps))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, key := range tableRows() {
		row := []string{key}
		any := false
		for _, s := range r.Summary {
			m, ok := r.Find(s.Name, key)
			switch {
			case s.NotApplicable != "":
				row = append(row, "n/a")
			case !ok:
				row = append(row, "-")
			default:
				any = any || !math.IsNaN(float64(m.Value))
				cellText := FormatNum(float64(m.Value), m.Unit)
				if d := deltaText(s, m); d != "" {
					cellText += " " + d
				}
				row = append(row, cellText)
			}
		}
		if any {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
	}
	_ = tw.Flush()
	if d := r.Drift; d != nil {
		fmt.Fprintf(w, "drift: %+.1f%% [%+.1f, %+.1f] over the run's %.1f min (%s, %d repetitions)\n",
			float64(d.PctOverRun), float64(d.CI.Lo), float64(d.CI.Hi), d.Minutes, d.Metric, d.Repetitions)
	}
	if t := WarmupText(r); t != "" {
		fmt.Fprintln(w, t)
	}
	if t := LabOverRunText(r.LabOverRun); t != "" {
		fmt.Fprintln(w, t)
	}
	for _, c := range r.Cells {
		if c.Stats.BrakeEvidence != "" {
			verdict := "NOT JUDGED"
			if e := c.Stats.BrakeEngaged; e != nil && *e {
				verdict = "ENGAGED"
			} else if e != nil {
				verdict = "NOT ENGAGED"
			}
			fmt.Fprintf(w, "brake %-20s %-11s %s\n", c.ID, verdict, c.Stats.BrakeEvidence)
		}
	}
	podStartText(w, r)
	faultText(w, r)
}

// podStartText prints, for cells whose sandboxes ran on the lab's real node, their pods' start
// step by step: a real runtime's cold start when claims waited on it, else the refill's pods.
func podStartText(w io.Writer, r *results.Results) {
	ms := func(v float64) string {
		if math.IsNaN(v) {
			return "-"
		}
		return FormatNum(v, "ms") + "ms"
	}
	for _, c := range r.Cells {
		ps := c.Stats.PodStart
		if ps == nil || ps.Placement != "real-node" {
			continue
		}
		what := "cold start on this lab's runtime"
		if c.Stats.Cold == 0 {
			what = "pod start (refill; no claim waited) on this lab's runtime"
		}
		fmt.Fprintf(w, "%s %s: node %s, %d pods Ready: created->scheduled p50 %s, scheduled->running p50 %s, running->Ready p50 %s, created->Ready p50 %s p90 %s (a tiny local image, no pull: not a cloud node pulling an image)\n",
			what, c.ID, ps.Node, ps.CreateToReady.N, ms(ps.Schedule.P50), ms(ps.Run.P50), ms(ps.Ready.P50), ms(ps.CreateToReady.P50), ms(ps.CreateToReady.P90))
	}
}

// tableRows are TableRows, then whether the brakes bound and every brake and fault type's own
// metrics (rows no cell measured are left out of the table).
func tableRows() []string {
	rows := append(append([]string(nil), TableRows...), "brake.engaged")
	for _, m := range catalog.Default.Metrics() {
		rows = append(rows, m.Key)
	}
	return rows
}

// Verdicts prints the answer first, one block per compared cell: the verdict metrics' lines, how
// its repetitions ended, and its invariants. Nothing when no summary has a verdict.
func Verdicts(w io.Writer, r *results.Results) {
	a := buildAnswer(r)
	if a == nil {
		return
	}
	fmt.Fprintln(w, "verdict (against "+r.Baseline+"):")
	for _, s := range r.Summary {
		switch {
		case s.NotApplicable != "":
			fmt.Fprintf(w, "  %s: not applicable: %s\n", s.Name, s.NotApplicable)
			continue
		case s.Verdict == nil && s.Name != r.Baseline:
			continue
		}
		line := "  " + s.Name + ":"
		if s.Verdict != nil {
			var parts []string
			for _, m := range s.Verdict.Metrics {
				parts = append(parts, m.Text)
			}
			line += " " + strings.Join(parts, "; ")
		} else {
			line += " baseline"
		}
		fmt.Fprintln(w, line)
		if st := s.Stopping; st != nil && st.Detail != "" {
			fmt.Fprintf(w, "      %s\n", st.Detail)
		}
		held, violated := invariantsText(s.Invariants)
		for _, v := range violated {
			fmt.Fprintf(w, "      invariant violated: %s\n", v)
		}
		if len(violated) == 0 && held != "" {
			fmt.Fprintf(w, "      %s\n", held)
		}
	}
	fmt.Fprintln(w)
}
