package cli

import (
	"encoding/json"
	"fmt"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/loadgen"
)

// agentCmd is the in-cluster runner (loadgen.runner in-cluster): the harness starts it as a Job
// with the burst's spec; it fires the burst at the spec's T0, watches the claims, and prints one
// JSON record per claim. Hidden: nobody runs it by hand.
func (a *app) agentCmd() *cobra.Command {
	var spec, kubeconfig, kubeContext string
	cmd := &cobra.Command{
		Use:    "agent --spec JSON",
		Short:  "In-cluster runner: fire one burst and report each claim (started by the harness as a Job)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var s loadgen.AgentSpec
			if err := json.Unmarshal([]byte(spec), &s); err != nil {
				return badInput(fmt.Errorf("--spec: %w", err))
			}
			if s.Namespace == "" || len(s.Schedule) == 0 || s.T0.IsZero() {
				return badInput(fmt.Errorf("--spec: namespace, schedule and t0 are required"))
			}
			rc, err := rest.InClusterConfig()
			if err != nil || kubeconfig != "" || kubeContext != "" {
				if rc, err = kube.RESTConfig(kubeconfig, kubeContext); err != nil {
					return badInput(fmt.Errorf("no in-cluster config and no usable kubeconfig: %w", err))
				}
			}
			rc.QPS, rc.Burst = -1, 0 // the generator's own limiter (loadgen.qps) is the only one
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return loadgen.RunAgent(ctx, rc, s, a.stdout)
		},
	}
	cmd.Flags().StringVar(&spec, "spec", "", "the burst (loadgen.AgentSpec as JSON)")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig (default: in-cluster config)")
	cmd.Flags().StringVar(&kubeContext, "context", "", "kubeconfig context")
	return cmd
}
