package cli

import (
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/brakebench/brakebench/internal/results"
)

func (a *app) reportCmd() *cobra.Command {
	var gf gateFlags
	var out string
	cmd := &cobra.Command{
		Use:   "report RESULTS.json",
		Short: "Re-render report.html and junit.xml (and re-evaluate gates) from saved results",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			r, err := results.Read(args[0])
			if err != nil {
				return badInput(err)
			}
			dir := out
			if dir == "" {
				dir = filepath.Dir(args[0])
			}
			if err := checkOutFlag(dir, out != "", "next to "+args[0]); err != nil {
				return err
			}
			gf.inputRun = r.RunID
			var cells []string
			for _, s := range r.Summary {
				cells = append(cells, s.Name)
			}
			gs, err := gf.load(a.stderr, r.Suite, planSchema(cells, r.CellAxes, r.AxisPrimary))
			if err != nil {
				return err
			}
			gf.input = args[0]
			return a.finish(r, gs, &gf, dir)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory for the report (default: next to RESULTS.json)")
	cmd.Flags().StringVar(&gf.file, "gates", "", "gate file (default: the suite's configs/gates/<suite>.yaml)")
	cmd.Flags().BoolVar(&gf.none, "no-gates", false, "evaluate no gates")
	cmd.Flags().StringVar(&gf.baseline, "baseline", "", "an earlier results.json of this suite: gates may use baseline.cell(...).METRIC, and the report fails (exit 3) on a significant regression against it")
	return cmd
}
