package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/gates"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/lab"
	"github.com/brakebench/brakebench/internal/labbuild"
	"github.com/brakebench/brakebench/internal/pipeline"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/provider/kindprovider"
	"github.com/brakebench/brakebench/internal/provider/kubeconfigprovider"
	"github.com/brakebench/brakebench/internal/provider/labprovider"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
	"github.com/brakebench/brakebench/internal/undo"
	"github.com/brakebench/brakebench/suites"
)

func (a *app) providers() provider.Registry {
	versions, _ := labbuild.LoadVersions()
	return provider.Registry{
		"lab":        labprovider.Factory(a.newLab),
		"kubeconfig": kubeconfigprovider.FactoryWithFlags(agentsandbox.FlagsAt(a.fetchModule)),
		"kind":       kindprovider.Factory(a.fetchModule, versions.AgentSandbox),
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

// prepare resolves suite, config and plan: everything that can be wrong with the input, before
// any cluster is touched. extra settings (a reproduce scenario's) come before the user's --set.
// writesOut: the command writes under the output directory, which is created and probed before
// planning. ctx (the command's signal context) bounds planning, which may download the
// controller's module: Ctrl-C or SIGTERM there ends the command with exit 130.
func (a *app) prepare(ctx context.Context, name string, writesOut bool, extra ...string) (*config.Resolved, suites.Suite, *suites.Plan, error) {
	reg := suites.Default()
	if !slices.Contains(reg.Names(), name) {
		return nil, nil, nil, badInput(fmt.Errorf("no suite named %q (known: %s; `brakebench suites` describes them)", name, strings.Join(reg.Names(), ", ")))
	}
	s, err := reg.Get(name)
	if err != nil {
		return nil, nil, nil, badInput(err)
	}
	l := a.g.loader(name)
	l.Sets = append(append([]string{}, extra...), l.Sets...)
	cfg, err := l.Load()
	if err != nil {
		return nil, nil, nil, badInput(err)
	}
	if writesOut {
		if err := checkOut(cfg); err != nil {
			return nil, nil, nil, err
		}
	}
	if ctx.Err() != nil {
		return nil, nil, nil, interrupted("before planning; nothing was changed")
	}
	plan, err := s.Plan(cfg, a.planContext(ctx))
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, nil, interrupted("while planning; nothing was changed")
		}
		return nil, nil, nil, badInput(err)
	}
	return cfg, s, plan, nil
}

// checkOut makes sure results can be written before anything runs: it creates the output
// directory and writes and removes a probe file in it. A failure is bad input (exit 2).
func checkOut(cfg *config.Resolved) error {
	fail := func(err error) error {
		return badInput(&config.Error{Source: cfg.Source("out"), Key: "out", Msg: "expected a directory brakebench can write results to: " + err.Error()})
	}
	if err := probeDir(cfg.Out); err != nil {
		return fail(err)
	}
	return nil
}

// probeDir creates dir and writes and removes a probe file in it.
func probeDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".brakebench-probe-*")
	if err != nil {
		return err
	}
	_, werr := f.WriteString("brakebench checks that it can write here\n")
	return errors.Join(werr, f.Close(), os.Remove(f.Name()))
}

// checkOutFlag makes sure a command that reads no configuration (report, compare, trend) can
// write into its output directory before it does any work: dir is --out, or when --out was not
// given (given false) its default, which def describes. A failure is bad input (exit 2) naming
// --out and the directory, as for run.
func checkOutFlag(dir string, given bool, def string) error {
	err := probeDir(dir)
	switch {
	case err == nil:
		return nil
	case given:
		return badInput(fmt.Errorf("--out %s: expected a directory brakebench can write to: %w", dir, err))
	}
	return badInput(fmt.Errorf("--out not given: its default %s (%s) is not a directory brakebench can write to: %w; give --out DIR", dir, def, err))
}

func (a *app) planCmd() *cobra.Command {
	var asJSON bool
	var from string
	var effect float64
	cmd := &cobra.Command{
		Use:   "plan SUITE",
		Short: "Print the resolved matrix and what would be created or changed, then exit (dry run)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, _, plan, err := a.prepare(cmd.Context(), args[0], false)
			if err != nil {
				return err
			}
			var earlier *results.Results
			if from != "" {
				if earlier, err = results.Read(from); err != nil {
					return badInput(fmt.Errorf("--from: %w", err))
				}
			}
			if effect <= 0 || effect >= 1000 {
				return badInput(fmt.Errorf("--effect: expected a change in percent above 0 and below 1000, got %g", effect))
			}
			if asJSON {
				raw, _ := json.MarshalIndent(plan, "", "  ")
				fmt.Fprintln(a.stdout, string(raw))
				return nil
			}
			fmt.Fprintf(a.stdout, "suite %s on cluster provider %q, seed %d, %d cells:\n", plan.Suite, cfg.Cluster.Provider, plan.Seed, len(plan.Cells))
			for i, c := range plan.Cells {
				if c.NotApplicable != "" {
					fmt.Fprintf(a.stdout, "  %2d. %-26s not applicable: %s\n", i+1, c.ID, c.NotApplicable)
					continue
				}
				v := c.Version
				if v == "" {
					v = "pinned"
				}
				fmt.Fprintf(a.stdout, "  %2d. %-26s controller %s flags: %s\n", i+1, c.ID, v, strings.Join(c.Flags, " "))
			}
			if n := cfg.Matrix.Warmup; n > 0 {
				fmt.Fprintf(a.stdout, "  before them: %d unmeasured warm-up cell(s) of %s (matrix.warmup)\n", n, plan.Baseline)
			}
			if steps := cfg.Lab.Steps(); len(steps) > 0 && cfg.Cluster.Provider == "lab" {
				fmt.Fprintf(a.stdout, "  before each cell: lab housekeeping %s\n", strings.Join(steps, " then "))
			}
			planEstimate(a.stdout, cfg, plan, earlier, from, effect)
			fmt.Fprintln(a.stdout, "changes:")
			for _, ch := range plan.Changes {
				fmt.Fprintf(a.stdout, "  - %s\n", ch)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON")
	cmd.Flags().StringVar(&from, "from", "", "an earlier results.json of this cluster: estimate the run's duration from its cell times and the repetitions needed from its spread")
	cmd.Flags().Float64Var(&effect, "effect", 20, "with --from: the change in claim p99 (%) the repetitions should detect with 80% power")
	return cmd
}

func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// upgradeFlags select the pre-upgrade preset: the same suite at two controller versions.
type upgradeFlags struct {
	preset, from, to string
}

func (u upgradeFlags) sets() ([]string, error) {
	switch u.preset {
	case "":
		if u.from != "" || u.to != "" {
			return nil, badInput(fmt.Errorf("--from/--to go with --preset upgrade"))
		}
		return nil, nil
	case "upgrade":
		if u.from == "" || u.to == "" || u.from == u.to {
			return nil, badInput(fmt.Errorf("--preset upgrade needs --from vA and --to vB (two different versions)"))
		}
		return []string{"controller.versions=" + u.from + "," + u.to}, nil
	}
	return nil, badInput(fmt.Errorf("unknown --preset %q (known: upgrade)", u.preset))
}

func (a *app) runCmd() *cobra.Command {
	var gf gateFlags
	var up upgradeFlags
	cmd := &cobra.Command{
		Use:   "run SUITE",
		Short: "Run a suite's matrix and write results under --out",
		Long:  "Runs SUITE on the selected cluster (the embedded lab by default: built and brought up if needed,\nand taken down again afterwards if this command brought it up). Every change is reverted on\nsuccess, error, Ctrl-C and SIGTERM.",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.run(cmd.Context(), args[0], gf, up)
		},
	}
	cmd.Flags().StringVar(&up.preset, "preset", "", "upgrade: run the suite at --from and --to and compare them")
	cmd.Flags().StringVar(&up.from, "from", "", "with --preset upgrade: the version running today")
	cmd.Flags().StringVar(&up.to, "to", "", "with --preset upgrade: the version to upgrade to")
	cmd.Flags().StringVar(&gf.file, "gates", "", "gate file (default: the suite's configs/gates/<suite>.yaml)")
	cmd.Flags().BoolVar(&gf.none, "no-gates", false, "evaluate no gates")
	cmd.Flags().StringVar(&gf.baseline, "baseline", "", "an earlier results.json of this suite: gates may use baseline.cell(...).METRIC, and the run fails (exit 3) on a significant regression against it")
	return cmd
}

func (a *app) run(ctx context.Context, name string, gf gateFlags, up upgradeFlags) (err error) {
	presetSets, err := up.sets()
	if err != nil {
		return err
	}
	cfg, s, plan, err := a.prepare(ctx, name, true, presetSets...)
	if err != nil {
		return err
	}
	if up.preset == "upgrade" && strings.Join(cfg.Controller.Versions, ",") != up.from+","+up.to {
		return badInput(fmt.Errorf("--preset upgrade sets controller.versions; do not set it as well"))
	}
	// The line about skipped built-in gates waits until the cluster is up, so that it is not the
	// first line of every default run.
	var gateNote strings.Builder
	gs, err := gf.load(&gateNote, name, planSchema(plan.Names, plan.Axes, plan.Primary))
	if err != nil {
		return err
	}
	cluster, err := a.connect(ctx, cfg)
	if err != nil {
		return err
	}
	_, _ = io.WriteString(a.stderr, gateNote.String())
	defer func() { err = a.closeCluster(ctx, cluster, err) }()
	res, err := a.execute(ctx, cluster, cfg, s, plan)
	if err != nil {
		return err
	}
	res.CellAxes, res.AxisPrimary = plan.Axes, plan.Primary
	dir := runDir(cfg, res)
	// The built-in invariant gate judges every version's cells: an upgrade run whose --from
	// version over-fills the pool exits 3 (the upgrade view says whether --to fixed it).
	ferr := a.finish(res, gs, &gf, dir)
	a.keepControllerLog(ctx, cluster, dir)
	if up.preset == "upgrade" {
		regs, cerr := a.upgradeView(res, up, dir)
		if cerr != nil {
			return errors.Join(ferr, cerr)
		}
		// An invariant B violates that held in A fails the upgrade (exit 3), unless the run
		// already failed for another reason (a run error stays exit 1).
		var ee *ExitError
		if len(regs) > 0 && (ferr == nil || (errors.As(ferr, &ee) && ee.Code == ExitGateFailed)) {
			return errors.Join(ferr, &ExitError{Code: ExitGateFailed,
				Err: fmt.Errorf("upgrade %s -> %s: %d invariant(s) violated in B that held in A: %s", up.from, up.to, len(regs), strings.Join(regs, "; "))})
		}
	}
	return ferr
}

// keepControllerLog copies the agent-sandbox controller's log into the run's output directory
// (the lab's state directory, where it is written, goes when the lab comes down): a controller
// that exited at start is diagnosed from it after the run. Best effort: a run's verdict does not
// depend on it.
func (a *app) keepControllerLog(ctx context.Context, cluster provider.Cluster, dir string) {
	cl, ok := cluster.(provider.ControllerLogs)
	if !ok {
		return
	}
	r, err := cl.ControllerLog(ctx)
	if err != nil {
		fmt.Fprintf(a.stderr, "controller log not kept: %v\n", err)
		return
	}
	defer r.Close()
	path := filepath.Join(dir, filepath.FromSlash(lab.ControllerLogName))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		fmt.Fprintf(a.stderr, "controller log not kept: %v\n", err)
		return
	}
	f, err := os.Create(path)
	if err == nil {
		_, err = io.Copy(f, r)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "controller log not kept: %v\n", err)
		return
	}
	fmt.Fprintf(a.stdout, "controller log: %s\n", path)
}

// upgradeView compares the --to cells with the --from cells of one run (compare.html beside the
// report); the invariants' verdicts lead the comparison. It returns the invariants violated in B
// that held in A.
func (a *app) upgradeView(res *results.Results, up upgradeFlags, dir string) ([]string, error) {
	return pipeline.UpgradeView(res, up.from, up.to, dir, a.stdout)
}

// journalDir is where runs journal their changes: <cache dir>/journal.
func journalDir(cfg *config.Resolved) (string, error) {
	cache, err := lab.CacheDir(cfg.Lab)
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "journal"), nil
}

func runDir(cfg *config.Resolved, res *results.Results) string {
	return filepath.Join(cfg.Out, fmt.Sprintf("%s-%s", res.Suite, res.StartedAt.Format("20060102-150405")))
}

// connect creates or connects to the configured cluster. An unreachable kubeconfig cluster is
// bad input (exit 2): nothing has been touched yet.
func (a *app) connect(ctx context.Context, cfg *config.Resolved) (provider.Cluster, error) {
	prov, err := a.providers().New(cfg)
	if err != nil {
		return nil, badInput(err)
	}
	cluster, err := prov.Connect(ctx)
	if err != nil {
		if cfg.Cluster.Provider == "kubeconfig" {
			return nil, badInput(err)
		}
		return nil, fmt.Errorf("cluster %s: %w", prov.Name(), err)
	}
	return cluster, nil
}

// closeCluster takes down what connect created, and reports an interrupt as exit 130.
func (a *app) closeCluster(ctx context.Context, cluster provider.Cluster, err error) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Minute)
	defer cancel()
	if cerr := cluster.Close(cctx); cerr != nil {
		return &ExitError{Code: ExitCleanup, Err: errors.Join(err, cerr)}
	}
	if ctx.Err() != nil {
		return &ExitError{Code: ExitInterrupted, Err: errors.New("interrupted; everything brakebench changed was reverted")}
	}
	return err
}

// execute runs one suite plan on a connected cluster; every revert registered during the run
// runs before it returns, whatever happened.
func (a *app) execute(ctx context.Context, cluster provider.Cluster, cfg *config.Resolved, s suites.Suite, plan *suites.Plan) (res *results.Results, err error) {
	runID := newRunID()
	jdir, err := journalDir(cfg)
	if err != nil {
		return nil, err
	}
	clients, err := kube.NewClients(cluster.RESTConfig())
	if err != nil {
		return nil, err
	}
	journal, err := undo.OpenJournal(jdir, runID, undo.IdentifyCluster(ctx, cluster.RESTConfig().Host, clients.Typed))
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	reverts := &undo.Stack{}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Minute)
		defer cancel()
		rerr := reverts.Run(cctx)
		_ = journal.Close()
		if rerr != nil {
			err = &ExitError{Code: ExitCleanup, Err: fmt.Errorf("%w; run `brakebench cleanup --run %s` (journal %s)", errors.Join(err, rerr), runID, journal.Path)}
			return
		}
		// Everything was reverted: the journal has nothing left to replay.
		_ = os.Remove(journal.Path)
	}()
	versions, _ := labbuild.LoadVersions()
	env := &suites.Env{
		Config: cfg, Cluster: cluster, Clients: clients, Progress: a.progress(), Reverts: reverts, Journal: journal, RunID: runID,
		Versions: map[string]string{"kubernetes": versions.Kubernetes, "etcd": versions.Etcd, "kwok": versions.Kwok, "agent-sandbox": versions.AgentSandbox},
	}
	if cfg.Controller.Version != "" {
		env.Versions["agent-sandbox"] = cfg.Controller.Version
	}
	src := a.planContext(ctx).Source
	env.Source = func(_ context.Context, version string) (string, error) { return src(version) }
	env.Progress.Printf("run %s: suite %s, %d cells, seed %d", env.RunID, s.Name(), len(plan.Cells), plan.Seed)
	return s.Run(ctx, env, plan)
}

// finish runs the post-run pipeline (gates, results.json, report.html, junit.xml, the table and
// the verdicts, into dir) and turns failures into exit codes (1 run errors, 3 gates).
func (a *app) finish(res *results.Results, gs []gates.Gate, gf *gateFlags, dir string) error {
	out, err := pipeline.Finish(res, gs, pipeline.Options{Dir: dir, NoGates: gf.none, Baseline: gf.base,
		BaselinePath: gf.baseline, Input: gf.input, Stdout: a.stdout, Stderr: a.stderr})
	if err != nil {
		return err
	}
	if len(out.CellErrors) > 0 {
		return fmt.Errorf("%d cell(s) had errors: %s", len(out.CellErrors), strings.Join(out.CellErrors, "; "))
	}
	if n := len(out.Failed); n > 0 {
		return &ExitError{Code: ExitGateFailed, Err: fmt.Errorf("%d of %d gates failed", n, len(out.Gates))}
	}
	return nil
}
