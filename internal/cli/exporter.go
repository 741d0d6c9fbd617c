package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/demand"
	"github.com/brakebench/brakebench/internal/images"
	"github.com/brakebench/brakebench/internal/kube"
)

// exporterCmd runs the demand exporter on its own, for clusters where KEDA cannot reach the
// harness: run it in a pod (in-cluster config, a namespaced read-only Role on sandboxclaims) or
// anywhere KEDA can reach, and point poolAutoscaling.exporterURL at it.
func (a *app) exporterCmd() *cobra.Command {
	var ns, selector, listen, kubeconfig, kubeContext, image, installNS string
	var printManifests bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "exporter",
		Short: "Serve the count of SandboxClaims in a namespace as JSON for KEDA's metrics-api scaler",
		Long: "Serves {\"claims\": N} at " + demand.Path + ", N being the SandboxClaims matching --selector (in --namespace, or\n" +
			"every namespace), from an informer: an API error leaves the last count in place instead of reading as\n" +
			"zero demand. In a pod it uses the in-cluster config and needs only get/list/watch on sandboxclaims.\n" +
			"--print-manifests prints what runs it in-cluster. It gives up (exit 2) when the cluster has not answered\n" +
			"the first list within --timeout.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkExporterFlags(ns, selector, listen, installNS, image); err != nil {
				return err
			}
			if printManifests {
				if image == "" {
					return badInput(fmt.Errorf("--print-manifests needs --image (an image built from this repository; brakebench publishes none)"))
				}
				for _, o := range demand.Manifests(installNS, ns, selector, image, 8080) {
					raw, err := yaml.Marshal(o.Object)
					if err != nil {
						return err
					}
					fmt.Fprintf(a.stdout, "---\n%s", raw)
				}
				fmt.Fprintf(a.stdout, "# KEDA reads: --set poolAutoscaling.exporterURL=http://brakebench-demand.%s.svc:8080%s\n", installNS, demand.Path)
				return nil
			}
			if timeout <= 0 || timeout > 24*time.Hour {
				return badInput(fmt.Errorf("--timeout: expected a positive duration up to 24h, got %s", timeout))
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
			fmt.Fprintf(a.stderr, "exporter: listing SandboxClaims from %s (giving up after %s)\n", rc.Host, timeout)
			syncCtx, syncCancel := context.WithTimeout(ctx, timeout)
			e, err := demand.Start(syncCtx, dc, ns, selector, listen)
			syncCancel()
			switch {
			case err != nil && ctx.Err() != nil:
				return interrupted("before the exporter served")
			case errors.Is(err, demand.ErrCannotList):
				// Nothing was served yet: an unreachable cluster is bad input, as for run.
				return badInput(fmt.Errorf("cannot use the cluster at %s (waited up to %s, --timeout): %w", rc.Host, timeout, err))
			case err != nil:
				return err
			}
			where := "every namespace"
			if ns != "" {
				where = "namespace " + ns
			}
			fmt.Fprintf(a.stdout, "serving the count of SandboxClaims matching %q in %s at http://%s%s\n", selector, where, e.Addr(), demand.Path)
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			return e.Stop(sctx)
		},
	}
	cmd.Flags().StringVar(&ns, "namespace", "", "namespace whose SandboxClaims are counted (default: every namespace; a suite run uses a new namespace per cell)")
	cmd.Flags().StringVar(&selector, "selector", kube.ManagedByKey+"="+kube.ManagedByValue, "label selector of the claims to count (default: the claims brakebench creates)")
	cmd.Flags().StringVar(&installNS, "install-namespace", "brakebench", "with --print-manifests: the namespace the exporter runs in")
	cmd.Flags().StringVar(&listen, "listen", ":8080", "address to serve on")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig (default: in-cluster config, else $KUBECONFIG)")
	cmd.Flags().StringVar(&kubeContext, "context", "", "kubeconfig context")
	cmd.Flags().BoolVar(&printManifests, "print-manifests", false, "print a Deployment, Service, ServiceAccount and read-only Role that run the exporter in --namespace, and exit")
	cmd.Flags().StringVar(&image, "image", "", "with --print-manifests: the brakebench image to run")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait for the cluster to answer the first list of SandboxClaims")
	return cmd
}

// checkExporterFlags checks the exporter's flags before it contacts a cluster: a bad namespace or
// selector failed only at the API server, and a bad --listen only after the first list.
// Empty --namespace and --selector mean every namespace and every claim.
func checkExporterFlags(ns, selector, listen, installNS, image string) error {
	for _, f := range []struct{ flag, val string }{{"--namespace", ns}, {"--install-namespace", installNS}} {
		if f.val == "" && f.flag == "--namespace" {
			continue
		}
		if errs := validation.IsDNS1123Label(f.val); len(errs) > 0 {
			return badInput(fmt.Errorf("%s %s: expected a namespace (a lower-case DNS-1123 label): %s", f.flag, config.QuoteShort(f.val), strings.Join(errs, "; ")))
		}
	}
	if _, err := labels.Parse(selector); err != nil {
		return badInput(fmt.Errorf("--selector %s: expected a label selector like %s=%s: %w", config.QuoteShort(selector), kube.ManagedByKey, kube.ManagedByValue, err))
	}
	if err := checkListen(listen); err != nil {
		return badInput(fmt.Errorf("--listen %s: expected HOST:PORT or :PORT with a port from 0 to 65535: %w", config.QuoteShort(listen), err))
	}
	if image != "" {
		if err := images.CheckRef(image); err != nil {
			return badInput(fmt.Errorf("--image %s: expected an image reference like ghcr.io/you/brakebench:dev: %w", config.QuoteShort(image), err))
		}
	}
	return nil
}

// checkListen checks an address to serve on: a host that is empty, an IP address or a DNS name,
// and a port number from 0 to 65535.
func checkListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("port %s is not a number from 0 to 65535", config.QuoteShort(port))
	}
	if host != "" && net.ParseIP(host) == nil && len(validation.IsDNS1123Subdomain(strings.ToLower(host))) > 0 {
		return fmt.Errorf("host %s is neither an IP address nor a DNS name", config.QuoteShort(host))
	}
	return nil
}
