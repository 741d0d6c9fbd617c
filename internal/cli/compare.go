package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/pipeline"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/reports"
)

func (a *app) compareCmd() *cobra.Command {
	var out string
	var gate bool
	cmd := &cobra.Command{
		Use:   "compare A.json B.json [C.json ...]",
		Short: "Compare runs cell by cell (pre-upgrade, vendor comparisons): deltas, CIs, p-values, compare.html",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			var runs []*results.Results
			for _, p := range args {
				r, err := results.Read(p)
				if err != nil {
					return badInput(err)
				}
				runs = append(runs, r)
			}
			if err := sameRunTwice(args, runs); err != nil {
				return badInput(err)
			}
			c, err := reports.NewComparison(args, runs)
			if err != nil {
				return badInput(err)
			}
			dir := out
			if dir == "" {
				dir = filepath.Dir(args[len(args)-1])
			}
			if err := checkOutFlag(dir, out != "", "next to the last results file, "+args[len(args)-1]); err != nil {
				return err
			}
			c.Text(a.stdout)
			// Invariants violated in a later run that held in A come first.
			regs := analysis.RunRegressions(c.Cells, c.Invariants)
			for _, r := range regs {
				fmt.Fprintln(a.stdout, "REGRESSION", r)
			}
			path, err := pipeline.WriteComparison(c, dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "\ncompare: %s\n", path)
			if gate && len(regs) > 0 {
				return &ExitError{Code: ExitGateFailed, Err: fmt.Errorf("%d regression(s) against %s", len(regs), args[0])}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory for compare.html (default: next to the last results file)")
	cmd.Flags().BoolVar(&gate, "gate", false, "exit 3 when an invariant held in the first run is violated in a later one, or a latency, failure or correctness metric of a later run is significantly worse than in the first")
	return cmd
}

// sameRunTwice reports a run given twice to compare, as one file (symbolic links resolved) or as
// a copy (the same run id and start time): it compared a run with itself, "no change" by
// construction.
func sameRunTwice(args []string, runs []*results.Results) error {
	for j := range args {
		for i := 0; i < j; i++ {
			switch {
			case pipeline.SameFile(args[i], args[j]):
				return fmt.Errorf("%s is given twice, as argument %d and argument %d: compare needs different runs", args[j], i+1, j+1)
			case runs[i].RunID != "" && runs[i].RunID == runs[j].RunID && runs[i].StartedAt.Equal(runs[j].StartedAt):
				return fmt.Errorf("%s and %s hold the same run (id %s): compare needs different runs", args[i], args[j], runs[i].RunID)
			}
		}
	}
	return nil
}
