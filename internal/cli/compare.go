package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/reports"
)

func (a *app) compareCmd() *cobra.Command {
	var out string
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
			c, err := reports.NewComparison(args, runs)
			if err != nil {
				return badInput(err)
			}
			c.Text(a.stdout)
			page, err := c.HTML()
			if err != nil {
				return err
			}
			if out == "" {
				out = filepath.Dir(args[len(args)-1])
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			path := filepath.Join(out, "compare.html")
			if err := os.WriteFile(path, page, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "\ncompare: %s\n", path)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory for compare.html (default: next to the last results file)")
	return cmd
}
