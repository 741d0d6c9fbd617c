package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/images"
	"github.com/brakebench/brakebench/internal/lab"
	"github.com/brakebench/brakebench/internal/labbuild"
	"github.com/brakebench/brakebench/internal/sut/karpenter"
)

func (a *app) newLab(cfg *config.Resolved) (*lab.Lab, error) {
	v, err := labbuild.LoadVersions()
	if err != nil {
		return nil, err
	}
	if cfg.Controller.Version != "" {
		v.AgentSandbox = cfg.Controller.Version
	}
	return lab.New(cfg.Lab, v, a.progress())
}

// loadLab resolves the configuration and returns a handle on its lab (nothing is started).
func (a *app) loadLab() (*config.Resolved, *lab.Lab, error) {
	cfg, err := a.g.load("")
	if err != nil {
		return nil, nil, err
	}
	l, err := a.newLab(cfg)
	return cfg, l, err
}

// loadRunningLab is loadLab for a command that needs the lab up: its saved state too.
func (a *app) loadRunningLab() (*config.Resolved, *lab.Lab, *lab.State, error) {
	cfg, l, err := a.loadLab()
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := l.Load()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("lab %q: %w (brakebench lab up brings it up)", cfg.Lab.Name, err)
	}
	return cfg, l, s, nil
}

func (a *app) labCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "lab", Short: "Build and run the embedded lab cluster (real control plane, kwok nodes, agent-sandbox)"}
	var with []string
	build := &cobra.Command{
		Use:   "build",
		Short: "Build every lab component from the Go module proxy into the versioned cache",
		Long:  "Builds kube-apiserver, kube-scheduler, kube-controller-manager, kubectl, etcd, kwok, kwokctl and\nagent-sandbox-controller at the versions pinned in configs/versions.yaml. A cold build takes about\n20 minutes on 2 cores (Kubernetes ~13 of them); a cached one takes seconds. --with adds the optional\ncomponents the gang-quota (kueue, lws) and pool-autoscaling (keda) suites and the real node\n(kubelet, containerd, cni-plugins, pause) need.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, l, err := a.loadLab()
			if err != nil {
				return err
			}
			res, err := l.Build(cmd.Context())
			if err != nil {
				return err
			}
			if len(with) > 0 {
				extra, err := l.BuildAddons(cmd.Context(), with)
				if err != nil {
					return err
				}
				for n, r := range extra {
					res[n] = r
				}
			}
			names := make([]string, 0, len(res))
			for n := range res {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				fmt.Fprintf(a.stdout, "%-14s %-10s %s\n", n, res[n].Component.Version, res[n].Dir)
			}
			return nil
		},
	}
	build.Flags().StringSliceVar(&with, "with", nil, "also build optional components: "+strings.Join(labbuild.AddonNames(), ", ")+" (suites build what they need)")
	var controllerArgs []string
	up := &cobra.Command{
		Use:   "up",
		Short: "Bring the lab up (builds first if needed); running it twice is safe",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, l, err := a.loadLab()
			if err != nil {
				return err
			}
			s, err := l.Up(cmd.Context(), append(append([]string{}, cfg.Controller.Args...), controllerArgs...))
			if err != nil {
				return err
			}
			printState(a, s)
			return nil
		},
	}
	up.Flags().StringArrayVar(&controllerArgs, "controller-arg", nil, "extra agent-sandbox controller flag (repeatable)")
	down := &cobra.Command{
		Use:   "down",
		Short: "Stop every lab process and remove the lab's state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, l, err := a.loadLab()
			if err != nil {
				return err
			}
			if err := l.Down(cmd.Context()); err != nil {
				return &ExitError{Code: ExitCleanup, Err: err}
			}
			fmt.Fprintf(a.stdout, "lab %q is down; %s removed\n", cfg.Lab.Name, l.Dir())
			return nil
		},
	}
	var asJSON bool
	status := &cobra.Command{
		Use:   "status",
		Short: "Show the lab's components, versions, ports and kubeconfig",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, l, err := a.loadLab()
			if err != nil {
				return err
			}
			s, err := l.Load()
			if lab.IsNotUp(err) {
				fmt.Fprintf(a.stdout, "lab %q is not up\n", cfg.Lab.Name)
				if left := l.Leftovers(); len(left) > 0 {
					pids := make([]string, len(left))
					for i, pid := range left {
						pids[i] = strconv.Itoa(pid)
					}
					fmt.Fprintf(a.stdout, "but processes of it are still running: PIDs %s (run `brakebench lab down`)\n", strings.Join(pids, ", "))
				}
				return nil
			}
			if err != nil {
				return err
			}
			if asJSON {
				raw, _ := json.MarshalIndent(s, "", "  ")
				fmt.Fprintln(a.stdout, string(raw))
				return nil
			}
			printState(a, s)
			if herr := l.Healthy(cmd.Context(), s); herr != nil {
				fmt.Fprintf(a.stdout, "health:     UNHEALTHY: %v\n", herr)
			} else {
				fmt.Fprintf(a.stdout, "health:     ok\n")
			}
			return nil
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, "print the saved state as JSON")
	var ref string
	importImage := &cobra.Command{
		Use:   "import-image --ref REF BINARY",
		Short: "Import a static binary as a one-layer image into the lab's real node (e.g. brakebench for loadgen.runnerImage)",
		Long: "Writes BINARY (statically linked: build brakebench with CGO_ENABLED=0) as a single-layer linux/amd64\n" +
			"image REF whose entrypoint is the binary, and imports it into the real node's containerd (namespace\n" +
			"k8s.io), where pods run it with imagePullPolicy Never. Needs a lab up with lab.realNode=true.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ref == "" {
				return badInput(fmt.Errorf("--ref: the image reference pods will name, e.g. brakebench.local/brakebench:dev"))
			}
			if err := images.CheckRef(ref); err != nil {
				return badInput(fmt.Errorf("--ref %s: expected an image reference like brakebench.local/brakebench:dev: %w", config.QuoteShort(ref), err))
			}
			if err := images.CheckStatic(args[0]); err != nil {
				return badInput(err)
			}
			cfg, l, s, err := a.loadRunningLab()
			if err != nil {
				return err
			}
			if s.RealNode == nil {
				return badInput(fmt.Errorf("lab %q has no real node: bring it up with --set lab.realNode=true", cfg.Lab.Name))
			}
			bin, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			path := "/" + filepath.Base(bin)
			if err := l.ImportImage(cmd.Context(), s, images.Spec{Ref: ref, Files: map[string]string{path: bin}, Entrypoint: []string{path}}); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "imported %s (entrypoint %s) into the real node of lab %q\n", ref, path, cfg.Lab.Name)
			return nil
		},
	}
	importImage.Flags().StringVar(&ref, "ref", "", "image reference, e.g. brakebench.local/brakebench:dev")
	cmd.AddCommand(build, up, down, status, importImage, a.labKarpenterCmd())
	return cmd
}

// labKarpenterCmd starts and stops the lab's Karpenter (brakebench's build of it with the kwok
// provider and EKS's repair policies) on a running lab.
func (a *app) labKarpenterCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "karpenter", Short: "Start or stop Karpenter (kwok provider, EKS repair policies) on a running lab"}
	var opt lab.KarpenterOptions
	start := &cobra.Command{
		Use:   "start",
		Short: "Start Karpenter on the running lab (built on first use); restarts it when the options differ",
		Long: "Runs Karpenter out of cluster against the lab with its CRDs, the kwok provider's nodes run by the lab's kwok\n" +
			"controller, one GPU instance type and EKS's repair policies with their tolerations multiplied by\n" +
			"--toleration-scale. brakebench lab karpenter stop (or lab down) removes it and every NodePool,\n" +
			"NodeClaim, node and KWOKNodeClass of brakebench's pools.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := karpenter.ScalePolicies(karpenter.EKSRepairPolicies(), opt.TolerationScale); err != nil {
				return badInput(fmt.Errorf("--toleration-scale: %w", err))
			}
			_, l, s, err := a.loadRunningLab()
			if err != nil {
				return err
			}
			k, err := l.StartKarpenter(cmd.Context(), s, opt)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "karpenter %s pid %d, gates %s\nmetrics:   %s\nlog:       %s\nrepair:    %s\n", k.Version, k.PID, k.FeatureGates, k.MetricsURL, k.Log, karpenter.EncodePolicies(k.Policies))
			return nil
		},
	}
	start.Flags().BoolVar(&opt.NodeRepair, "node-repair", true, "Karpenter's NodeRepair feature gate")
	start.Flags().BoolVar(&opt.CapacityBuffer, "capacity-buffer", false, "Karpenter's CapacityBuffer feature gate")
	start.Flags().Float64Var(&opt.TolerationScale, "toleration-scale", 1, "multiply EKS's repair tolerations by this factor in (0, 1] (0.01: AcceleratedHardwareReady after 6 s)")
	stop := &cobra.Command{
		Use:   "stop",
		Short: "Stop Karpenter and remove brakebench's NodePools, their NodeClaims and nodes, and KWOKNodeClasses",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, l, s, err := a.loadRunningLab()
			if err != nil {
				return err
			}
			if err := l.StopKarpenter(cmd.Context(), s); err != nil {
				return &ExitError{Code: ExitCleanup, Err: err}
			}
			fmt.Fprintf(a.stdout, "karpenter stopped on lab %q; no NodePool, NodeClaim or node of brakebench's pools left\n", cfg.Lab.Name)
			return nil
		},
	}
	cmd.AddCommand(start, stop)
	return cmd
}

func printState(a *app, s *lab.State) {
	w := a.stdout
	fmt.Fprintf(w, "lab:        %s (%s)\n", s.Name, s.Dir)
	fmt.Fprintf(w, "server:     %s\n", s.Server)
	fmt.Fprintf(w, "kubeconfig: %s\n", s.Kubeconfig)
	fmt.Fprintf(w, "kubectl:    %s --kubeconfig %s get nodes\n", s.Binaries["kubectl"], s.Kubeconfig)
	var vs []string
	for k, v := range s.Versions {
		vs = append(vs, k+"="+v)
	}
	sort.Strings(vs)
	fmt.Fprintf(w, "versions:   %s\n", strings.Join(vs, " "))
	fmt.Fprintf(w, "nodes:      %d simulated (kwok)\n", s.Nodes)
	if rn := s.RealNode; rn != nil {
		fmt.Fprintf(w, "real node:  %s at %s (containerd, runc, kubelet; taint %s=true:NoSchedule), Ready %.1fs after the kubelet started\n", rn.Name, rn.IP, lab.RealNodeKey, rn.ReadySeconds)
		fmt.Fprintf(w, "            images %s\n", strings.Join(rn.Images, " "))
	}
	if d := s.ControllerDeployment; d != nil {
		fmt.Fprintf(w, "controller: agent-sandbox %s as Deployment %s/%s on the real node; drive it with --cluster kubeconfig --kubeconfig %s --context %s\n", d.Version, d.Namespace, d.Name, s.Kubeconfig, s.Context())
	}
	if c := s.Controller; c != nil {
		fmt.Fprintf(w, "controller: agent-sandbox %s pid %d metrics %s log %s\n", c.Version, c.PID, c.MetricsURL, c.Log)
		fmt.Fprintf(w, "            flags %s\n", strings.Join(c.Args[1:], " "))
	}
}
