package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/results"
)

func (a *app) sizingCmd() *cobra.Command {
	var cell string
	var t analysis.SizingTarget
	cmd := &cobra.Command{
		Use:   "sizing RESULTS.json [--cell NAME] [--rate R] [--burst N] [--hold D]",
		Short: "Warm pools and replicas for a claim rate or a burst, computed from a run's measured refill figures",
		Long: "Computes, from one cell of a saved run (the baseline unless --cell), how many warm pools a sustained claim rate needs\n" +
			"(from the measured refill create ceiling, and from the searched sustainable rate of a ceiling run), how many replicas\n" +
			"a burst needs and how soon the pool can take the next one (from the measured refill), and with --hold how many\n" +
			"claimed sandboxes stay alive. Every figure names the measurement it came from; none is assumed.",
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			r, err := results.Read(args[0])
			if err != nil {
				return badInput(err)
			}
			switch {
			case t.Rate < 0 || t.Rate > 1e6 || t.Rate != t.Rate:
				return badInput(fmt.Errorf("--rate: expected claims/s from 0 to 1000000, got %v", t.Rate))
			case t.Burst < 0 || t.Burst > 10_000_000:
				return badInput(fmt.Errorf("--burst: expected claims from 0 to 10000000, got %d", t.Burst))
			case t.Hold < 0 || t.Hold > 30*24*time.Hour:
				return badInput(fmt.Errorf("--hold: expected a duration from 0s to 720h, got %s", t.Hold))
			}
			if cell == "" {
				cell = r.Baseline
			}
			lines, err := analysis.Sizing(r, cell, t)
			if err != nil {
				return badInput(fmt.Errorf("%s: %w", args[0], err))
			}
			fmt.Fprintf(a.stdout, "Sizing from run %s (%s), cell %s:\n", r.RunID, r.Suite, cell)
			tw := tabwriter.NewWriter(a.stdout, 0, 2, 2, ' ', 0)
			for _, l := range lines {
				fmt.Fprintf(tw, "  %s\t%s\t%s\n", l.What, l.Value, l.From)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&cell, "cell", "", "the cell whose measurements to use (default: the run's baseline)")
	cmd.Flags().Float64Var(&t.Rate, "rate", 0, "sustained claim rate to serve warm, claims/s")
	cmd.Flags().IntVar(&t.Burst, "burst", 0, "claims released together")
	cmd.Flags().DurationVar(&t.Hold, "hold", 0, "how long a claim keeps its sandbox")
	return cmd
}
