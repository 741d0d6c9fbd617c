package cli

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/brakebench/brakebench/internal/demand"
	"github.com/brakebench/brakebench/internal/kube"
)

// exporterCmd runs the demand exporter on its own, for clusters where KEDA cannot reach the
// harness: run it in a pod (in-cluster config, a namespaced read-only Role on sandboxclaims) or
// anywhere KEDA can reach, and point poolAutoscaling.exporterURL at it.
func (a *app) exporterCmd() *cobra.Command {
	var ns, selector, listen, kubeconfig, kubeContext string
	cmd := &cobra.Command{
		Use:   "exporter",
		Short: "Serve the count of SandboxClaims in a namespace as JSON for KEDA's metrics-api scaler",
		Long: "Serves {\"claims\": N} at " + demand.Path + ", N being the SandboxClaims in --namespace (matching --selector),\n" +
			"from an informer: an API error leaves the last count in place instead of reading as zero demand.\n" +
			"In a pod it uses the in-cluster config and needs only get/list/watch on sandboxclaims in the namespace.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ns == "" {
				return badInput(fmt.Errorf("--namespace is required"))
			}
			rc, err := rest.InClusterConfig()
			if err != nil || kubeconfig != "" || kubeContext != "" {
				if rc, err = kube.RESTConfig(kubeconfig, kubeContext); err != nil {
					return badInput(fmt.Errorf("no in-cluster config and no usable kubeconfig: %w", err))
				}
			}
			dc, err := dynamic.NewForConfig(rc)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			e, err := demand.Start(ctx, dc, ns, selector, listen)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "serving the SandboxClaim count of namespace %s at http://%s%s\n", ns, e.Addr(), demand.Path)
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			return e.Stop(sctx)
		},
	}
	cmd.Flags().StringVar(&ns, "namespace", "", "namespace whose SandboxClaims are counted")
	cmd.Flags().StringVar(&selector, "selector", "", "label selector of the claims to count (default: all)")
	cmd.Flags().StringVar(&listen, "listen", ":8080", "address to serve on")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig (default: in-cluster config, else $KUBECONFIG)")
	cmd.Flags().StringVar(&kubeContext, "context", "", "kubeconfig context")
	return cmd
}
