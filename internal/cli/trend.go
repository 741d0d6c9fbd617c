package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/brakebench/brakebench/internal/trend"
	"github.com/brakebench/brakebench/reports"
)

func (a *app) trendCmd() *cobra.Command {
	var out string
	var gate bool
	opt := trend.DefaultOptions
	cmd := &cobra.Command{
		Use:   "trend DIR|RESULTS.json...",
		Short: "Follow many runs of one suite over time: per-cell series, change points, trend.html; --gate for nightly CI",
		Long: "Reads results.json files (a directory stands for every results.json below it), orders them by\n" +
			"start time, and per cell and metric detects change points with E-divisive means (each confirmed\n" +
			"by Student's t-test, corrected for the splits searched). Writes trend.html and trend.json. With --gate it exits 3 when the newest run\n" +
			"lies after a detected regression (a latency, failure or correctness metric that got worse).",
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if !(opt.PValue > 0 && opt.PValue < 1) {
				return badInput(fmt.Errorf("--p-value: expected a probability between 0 and 1, got %v", opt.PValue))
			}
			if opt.MinWindow < 1 || opt.MinWindow > 1000 {
				return badInput(fmt.Errorf("--min-window: expected 1 to 1000 runs, got %d", opt.MinWindow))
			}
			if !(opt.MinEffect >= 0 && opt.MinEffect < 1000) {
				return badInput(fmt.Errorf("--min-effect: expected a change in percent from 0 to under 1000, got %v", opt.MinEffect))
			}
			if opt.MinRuns < 2*opt.MinWindow {
				return badInput(fmt.Errorf("--min-runs: expected at least twice --min-window (%d), got %d", 2*opt.MinWindow, opt.MinRuns))
			}
			paths, err := trend.Expand(args)
			if err != nil {
				return badInput(err)
			}
			dir, def := out, "the current directory"
			if dir == "" {
				dir = "."
				if fi, err := os.Stat(args[0]); err == nil && fi.IsDir() && len(args) == 1 {
					dir, def = args[0], "the one directory given"
				}
			}
			if err := checkOutFlag(dir, out != "", def); err != nil {
				return err
			}
			runs, err := trend.Load(paths)
			if err != nil {
				return badInput(err)
			}
			t := trend.Build(runs, opt)
			page, err := reports.TrendHTML(t)
			if err != nil {
				return err
			}
			raw, err := json.MarshalIndent(t, "", " ")
			if err != nil {
				return err
			}
			html, js := filepath.Join(dir, "trend.html"), filepath.Join(dir, "trend.json")
			if err := os.WriteFile(html, page, 0o644); err != nil {
				return err
			}
			if err := os.WriteFile(js, raw, 0o644); err != nil {
				return err
			}
			fmt.Fprint(a.stdout, reports.TrendText(t))
			fmt.Fprintf(a.stdout, "\ntrend: %s\n       %s\n", html, js)
			if regs := t.Regressions(); gate && len(regs) > 0 {
				return &ExitError{Code: ExitGateFailed, Err: fmt.Errorf("the newest run lies after a detected regression:\n  %s", strings.Join(regs, "\n  "))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory for trend.html and trend.json (default: the one directory given, else .)")
	cmd.Flags().BoolVar(&gate, "gate", false, "exit 3 when the newest run lies after a detected regression")
	cmd.Flags().Float64Var(&opt.PValue, "p-value", opt.PValue, "significance a change point must reach (Student's t-test between its sides, corrected for the splits searched)")
	cmd.Flags().IntVar(&opt.MinWindow, "min-window", opt.MinWindow, "fewest runs on each side of a change point (a single spike is never one)")
	cmd.Flags().IntVar(&opt.MinRuns, "min-runs", opt.MinRuns, "fewest runs before any change point is claimed")
	cmd.Flags().Float64Var(&opt.MinEffect, "min-effect", opt.MinEffect, "smallest change of a series' mean, in percent of the mean before it, that is a change point (0: any significant change; a series that does not vary is otherwise flagged for a rounding error)")
	return cmd
}
