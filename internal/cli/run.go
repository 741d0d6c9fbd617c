package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/brakebench/brakebench/faults"
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/labbuild"
	"github.com/brakebench/brakebench/internal/progress"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/provider/kindprovider"
	"github.com/brakebench/brakebench/internal/provider/kubeconfigprovider"
	"github.com/brakebench/brakebench/internal/provider/labprovider"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/reports"
	"github.com/brakebench/brakebench/suites"
)

func (a *app) providers() provider.Registry {
	versions, _ := labbuild.LoadVersions()
	b := &labbuild.Builder{}
	return provider.Registry{
		"lab":        labprovider.Factory(a.newLab),
		"kubeconfig": kubeconfigprovider.Factory,
		"kind": kindprovider.Factory(func(ctx context.Context, mod, version string) (string, error) {
			return b.ModuleDir(ctx, mod, version)
		}, versions.AgentSandbox),
	}
}

func (a *app) suitesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "suites",
		Short: "List the suites with the brakes and faults each supports",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			reg := suites.Default()
			for _, n := range reg.Names() {
				s, _ := reg.Get(n)
				fmt.Fprintf(a.stdout, "%-20s %s\n", n, s.Description())
				fmt.Fprintf(a.stdout, "%-20s brakes: %s", "", strings.Join(s.Brakes(), ", "))
				if f := s.Faults(); len(f) > 0 {
					fmt.Fprintf(a.stdout, "; faults: %s", strings.Join(f, ", "))
				}
				fmt.Fprintln(a.stdout)
			}
			return nil
		},
	}
}

// prepare resolves config, suite and plan: everything that can be wrong with the input.
func (a *app) prepare(name string) (*config.Resolved, suites.Suite, *suites.Plan, error) {
	s, err := suites.Default().Get(name)
	if err != nil {
		return nil, nil, nil, badInput(err)
	}
	cfg, err := a.g.load(name)
	if err != nil {
		return nil, nil, nil, err
	}
	plan, err := s.Plan(cfg)
	if err != nil {
		return nil, nil, nil, badInput(err)
	}
	return cfg, s, plan, nil
}

func (a *app) planCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "plan SUITE",
		Short: "Print the resolved matrix and what would be created or changed, then exit (dry run)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			cfg, _, plan, err := a.prepare(args[0])
			if err != nil {
				return err
			}
			if asJSON {
				raw, _ := json.MarshalIndent(plan, "", "  ")
				fmt.Fprintln(a.stdout, string(raw))
				return nil
			}
			fmt.Fprintf(a.stdout, "suite %s on cluster provider %q, seed %d, %d cells:\n", plan.Suite, cfg.Cluster.Provider, plan.Seed, len(plan.Cells))
			for i, c := range plan.Cells {
				fmt.Fprintf(a.stdout, "  %2d. %-22s controller flags: %s\n", i+1, c.ID, strings.Join(c.Flags, " "))
			}
			fmt.Fprintln(a.stdout, "changes:")
			for _, ch := range plan.Changes {
				fmt.Fprintf(a.stdout, "  - %s\n", ch)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON")
	return cmd
}

func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (a *app) runCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "run SUITE",
		Short: "Run a suite's matrix and write results under --out",
		Long:  "Runs SUITE on the selected cluster (the embedded lab by default: built and brought up if needed,\nand taken down again afterwards if this command brought it up). Every change is reverted on\nsuccess, error, Ctrl-C and SIGTERM.",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.run(cmd.Context(), args[0])
		},
	}
}

func (a *app) run(ctx context.Context, name string) (err error) {
	cfg, s, plan, err := a.prepare(name)
	if err != nil {
		return err
	}
	prov, err := a.providers().New(cfg)
	if err != nil {
		return badInput(err)
	}
	pr := progress.New(a.stderr)
	cluster, err := prov.Connect(ctx)
	if err != nil {
		if cfg.Cluster.Provider == "kubeconfig" {
			return badInput(err)
		}
		return fmt.Errorf("cluster %s: %w", prov.Name(), err)
	}
	reverts := &faults.Stack{}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Minute)
		defer cancel()
		var cleanup []error
		if rerr := reverts.Run(cctx); rerr != nil {
			cleanup = append(cleanup, rerr)
		}
		if cerr := cluster.Close(cctx); cerr != nil {
			cleanup = append(cleanup, cerr)
		}
		if len(cleanup) > 0 {
			err = &ExitError{Code: ExitCleanup, Err: errors.Join(append([]error{err}, cleanup...)...)}
		} else if ctx.Err() != nil {
			err = &ExitError{Code: ExitInterrupted, Err: errors.New("interrupted; everything brakebench changed was reverted")}
		}
	}()
	clients, err := kube.NewClients(cluster.RESTConfig())
	if err != nil {
		return err
	}
	versions, _ := labbuild.LoadVersions()
	env := &suites.Env{
		Config: cfg, Cluster: cluster, Clients: clients, Progress: pr, Reverts: reverts, RunID: newRunID(),
		Versions: map[string]string{"kubernetes": versions.Kubernetes, "etcd": versions.Etcd, "kwok": versions.Kwok, "agent-sandbox": versions.AgentSandbox},
	}
	if cfg.Controller.Version != "" {
		env.Versions["agent-sandbox"] = cfg.Controller.Version
	}
	pr.Printf("run %s: suite %s, %d cells, seed %d", env.RunID, name, len(plan.Cells), plan.Seed)
	res, err := s.Run(ctx, env, plan)
	if err != nil {
		return err
	}
	out := filepath.Join(cfg.Out, fmt.Sprintf("%s-%s", name, res.StartedAt.Format("20060102-150405")))
	path, err := results.Write(out, res)
	if err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	fmt.Fprintln(a.stdout)
	reports.Table(a.stdout, res)
	fmt.Fprintf(a.stdout, "\nresults: %s\n", path)
	if len(res.Errors) > 0 {
		return fmt.Errorf("%d cell(s) had errors: %s", len(res.Errors), strings.Join(res.Errors, "; "))
	}
	return nil
}
