// Package cli is brakebench's command line (cobra). Commands parse flags into a config.Loader,
// resolve and validate the whole configuration first (exit 2 on bad input, before any cluster is
// touched), then hand over to the lab, suites and reports.
package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/brakebench/brakebench/internal/progress"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/brakebench/brakebench/internal/config"
)

// Exit codes (documented in the README).
const (
	ExitOK          = 0
	ExitRunError    = 1
	ExitBadInput    = 2
	ExitGateFailed  = 3
	ExitCleanup     = 4
	ExitInterrupted = 130
)

// ExitError carries an exit code.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

func badInput(err error) error { return &ExitError{Code: ExitBadInput, Err: err} }

// globalFlags are shared by every command that reads configuration.
type globalFlags struct {
	files      []string
	sets       []string
	cluster    string
	kubeconfig string
	context    string
	out        string
}

func (g *globalFlags) loader(suite string) config.Loader {
	flags := map[string]string{}
	if g.cluster != "" {
		flags["cluster.provider"] = g.cluster
	}
	if g.kubeconfig != "" {
		flags["cluster.kubeconfig"] = g.kubeconfig
	}
	if g.context != "" {
		flags["cluster.context"] = g.context
	}
	if g.out != "" {
		flags["out"] = g.out
	}
	return config.Loader{Suite: suite, Files: g.files, Env: os.Environ(), Sets: g.sets, Flags: flags, FlagNames: configFlagNames}
}

// configFlagNames names the flag that sets each config key, for error messages.
var configFlagNames = map[string]string{"cluster.provider": "--cluster", "cluster.kubeconfig": "--kubeconfig", "cluster.context": "--context", "out": "--out"}

func (g *globalFlags) load(suite string) (*config.Resolved, error) {
	r, err := g.loader(suite).Load()
	if err != nil {
		return nil, badInput(err)
	}
	return r, nil
}

// app is what commands share.
type app struct {
	g      globalFlags
	stdout io.Writer
	stderr io.Writer
	// moduleDir finds a module in the Go module cache, downloading it on first use; nil: the
	// lab builder's (tests replace it).
	moduleDir func(ctx context.Context, mod, version string) (string, error)
	// prog is the command's one progress display on stderr (the lab's builds and the run's cells
	// share it, so neither's bars redraw over the other's lines).
	prog *progress.Progress
}

// progress returns the command's progress display, created on first use.
func (a *app) progress() *progress.Progress {
	if a.prog == nil {
		a.prog = progress.New(a.stderr)
	}
	return a.prog
}

// interrupted is the error of a command stopped by Ctrl-C or SIGTERM (exit 130).
func interrupted(what string) error {
	return &ExitError{Code: ExitInterrupted, Err: fmt.Errorf("interrupted %s", what)}
}

// NewRoot builds the command tree.
func NewRoot(stdout, stderr io.Writer) *cobra.Command {
	return newRoot(&app{stdout: stdout, stderr: stderr})
}

// newRoot builds the command tree on a (tests set its moduleDir).
func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:           "brakebench",
		Short:         "Chaos and benchmark harness for Kubernetes control-loop brakes",
		Long:          "brakebench fires SandboxClaim bursts at agent-sandbox warm pools, injects faults, and measures\nclaim latency and create-rate ceilings with and without each brake.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	pf := root.PersistentFlags()
	pf.StringArrayVarP(&a.g.files, "file", "f", nil, "config file (YAML); repeatable, later files win")
	pf.StringArrayVar(&a.g.sets, "set", nil, "override one config key: --set workload.claims=60 (repeatable)")
	pf.StringVar(&a.g.cluster, "cluster", "", "cluster provider: lab (default), kind, kubeconfig")
	pf.StringVar(&a.g.kubeconfig, "kubeconfig", "", "kubeconfig file (kubeconfig provider)")
	pf.StringVar(&a.g.context, "context", "", "kubeconfig context (required with --cluster kubeconfig)")
	pf.StringVar(&a.g.out, "out", "", "output directory for results (default out/)")
	root.AddCommand(a.labCmd(), a.suitesCmd(), a.runCmd(), a.planCmd(), a.configCmd(), a.reportCmd(), a.compareCmd(), a.trendCmd(), a.reproduceCmd(), a.cleanupCmd(), a.exporterCmd(), a.agentCmd(), a.sizingCmd(), a.tuneCmd())
	for _, c := range root.Commands() {
		switch c.Name() {
		case "suites", "report", "compare", "trend":
			rejectConfigFlags(c)
		}
	}
	// The completion command is added here rather than when the root executes, so that its usage
	// errors are bad input too (`completion bash x` exited 1, `completion typo` printed help).
	root.InitDefaultCompletionCmd()
	root.SetHelpCommand(helpCmd())
	usageErrorsAreBadInput(root)
	return root
}

// helpCmd is `brakebench help [command]`: cobra's own printed the root's help and exited 0 for
// a command that does not exist (`brakebench help rnu`).
func helpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil {
				return badInput(fmt.Errorf("help: %w", err))
			}
			if len(rest) > 0 {
				return badInput(fmt.Errorf("help: unknown command %q for %q (see %s --help)", rest[0], cmd.CommandPath(), cmd.CommandPath()))
			}
			return cmd.Help()
		},
	}
}

// helpFlag is the --help of a command that groups subcommands (the root, lab, completion). It
// reads as false when the command line also holds a word that names none of them, so that the
// command's Args reports the unknown command (exit 2): cobra checks --help first and printed the
// group's help with exit 0 for `brakebench rnu --help`.
type helpFlag struct {
	set bool
	cmd *cobra.Command
}

func (h *helpFlag) String() string {
	return strconv.FormatBool(h.set && len(h.cmd.Flags().Args()) == 0)
}

func (h *helpFlag) Set(v string) error {
	b, err := strconv.ParseBool(v)
	h.set = b
	return err
}

func (h *helpFlag) Type() string { return "bool" }

func (h *helpFlag) IsBoolFlag() bool { return true }

// rejectConfigFlags makes a command that reads no configuration refuse the configuration flags
// (they were silently ignored: `report -f x.yaml` looked as if it did something).
func rejectConfigFlags(c *cobra.Command) {
	c.PreRunE = func(cmd *cobra.Command, _ []string) error {
		for _, f := range []string{"set", "file", "cluster", "kubeconfig", "context"} {
			if cmd.Flags().Changed(f) {
				return badInput(fmt.Errorf("%s reads no configuration: --%s has no effect here", cmd.CommandPath(), f))
			}
		}
		return nil
	}
}

// usageErrorsAreBadInput makes every usage error exit 2, as the README promises: an unknown
// flag, a wrong number of arguments, and an unknown command, also below a parent command
// (`brakebench lab typo` printed the help and exited 0).
func usageErrorsAreBadInput(root *cobra.Command) {
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return badInput(fmt.Errorf("%w (see %s --help)", err, c.CommandPath()))
	})
	var fix func(c *cobra.Command)
	fix = func(c *cobra.Command) {
		if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
			c.Flags().VarPF(&helpFlag{cmd: c}, "help", "h", "help for "+c.Name()).NoOptDefVal = "true"
			c.Args = func(cmd *cobra.Command, args []string) error {
				if len(args) > 0 {
					return fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
				}
				return nil
			}
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
		if orig := c.Args; orig != nil {
			c.Args = func(cmd *cobra.Command, args []string) error {
				if err := orig(cmd, args); err != nil {
					return badInput(fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath()))
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			fix(sub)
		}
	}
	fix(root)
}

// Main runs the CLI and returns the process exit code.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := NewRoot(os.Stdout, os.Stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(os.Stderr, "brakebench:", err)
	var ee *ExitError
	switch {
	case errors.As(err, &ee):
		return ee.Code
	case ctx.Err() != nil:
		return ExitInterrupted
	case config.IsConfigError(err):
		return ExitBadInput
	}
	return ExitRunError
}
