package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/reproduce"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/reports"
)

func (a *app) reproduceCmd() *cobra.Command {
	var quick, strict bool
	var only []string
	cmd := &cobra.Command{
		Use:   "reproduce",
		Short: "Run the published-number scenarios (configs/published.yaml) and print measured vs published",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.reproduce(cmd.Context(), quick, strict, only)
		},
	}
	cmd.Flags().BoolVar(&quick, "quick", false, "CI-sized scenarios (verdicts then describe the reduced runs)")
	cmd.Flags().StringSliceVar(&only, "scenario", nil, "run only these scenarios")
	cmd.Flags().BoolVar(&strict, "strict", false, "exit 3 when a measured figure differs from the published one")
	return cmd
}

func (a *app) reproduce(ctx context.Context, quick, strict bool, only []string) (err error) {
	cat, err := reproduce.Load(analysis.MetricUnits())
	if err != nil {
		return err
	}
	type prepared struct {
		name string
		run  func(provider.Cluster) (*results.Results, error)
		dir  string
	}
	// Resolve every scenario before touching a cluster.
	var todo []prepared
	var firstCfg *config.Resolved
	stamp := time.Now().Format("20060102-150405")
	for _, name := range cat.ScenarioNames() {
		if len(only) > 0 && !slices.Contains(only, name) {
			continue
		}
		sc := cat.Scenarios[name]
		sets := append([]string{}, sc.Set...)
		if quick {
			sets = append(sets, sc.Quick...)
		}
		cfg, s, plan, err := a.prepare(ctx, sc.Suite, true, sets...)
		if err != nil {
			return fmt.Errorf("scenario %s: %w", name, err)
		}
		p := prepared{name: name, dir: filepath.Join(cfg.Out, "reproduce-"+stamp, name)}
		p.run = func(cl provider.Cluster) (*results.Results, error) { return a.execute(ctx, cl, cfg, s, plan) }
		todo = append(todo, p)
		if firstCfg == nil {
			firstCfg = cfg
		}
	}
	if len(todo) == 0 {
		return badInput(fmt.Errorf("no scenario selected (known: %s)", strings.Join(cat.ScenarioNames(), ", ")))
	}
	cluster, err := a.connect(ctx, firstCfg)
	if err != nil {
		return err
	}
	defer func() { err = a.closeCluster(ctx, cluster, err) }()
	ran := map[string]*results.Results{}
	for _, p := range todo {
		res, err := p.run(cluster)
		if err != nil {
			return fmt.Errorf("scenario %s: %w", p.name, err)
		}
		if _, err := results.Write(p.dir, res); err != nil {
			return err
		}
		if _, _, err := reports.WriteAll(p.dir, res, nil); err != nil {
			return err
		}
		ran[p.name] = res
		if ctx.Err() != nil {
			break
		}
	}
	var rows []reproduce.Row
	for _, f := range cat.Figures {
		r := ran[f.Scenario]
		rows = append(rows, reproduce.Judge(f, r, reproduce.Environment(r)))
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tpublished\tmeasured\tratio\tverdict\twhy it may differ")
	for _, r := range rows {
		pub := fmt.Sprintf("%g %s", r.Published, r.Unit)
		if r.AtMost {
			pub = "<= " + pub
		} else if r.High > 0 {
			pub = fmt.Sprintf("%g-%g %s", r.Low, r.High, r.Unit)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, pub, reports.FormatNum(float64(r.Measured), r.Unit), reports.FormatNum(float64(r.Ratio), ""), r.Verdict, r.Why)
	}
	_ = tw.Flush()
	raw, _ := json.MarshalIndent(struct {
		Quick bool            `json:"quick"`
		Rows  []reproduce.Row `json:"rows"`
	}{quick, rows}, "", "  ")
	dir := filepath.Join(firstCfg.Out, "reproduce-"+stamp)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "reproduce.json"), raw, 0o644); err != nil {
		return err
	}
	page, err := reports.ReproduceHTML(rows, quick)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "reproduce.html"), page, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "\nreproduce: %s\n", filepath.Join(dir, "reproduce.html"))
	if strict {
		var differ []string
		for _, r := range rows {
			if r.Verdict == "differs" {
				differ = append(differ, r.ID)
			}
		}
		if len(differ) > 0 {
			return &ExitError{Code: ExitGateFailed, Err: fmt.Errorf("--strict: %d figure(s) differ from the published ones: %s", len(differ), strings.Join(differ, ", "))}
		}
	}
	return nil
}
