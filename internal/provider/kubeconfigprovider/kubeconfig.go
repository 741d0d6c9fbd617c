// Package kubeconfigprovider connects to an existing cluster (EKS, GKE, anything with a kubeconfig
// context). It never creates or deletes the cluster and never installs a controller; changing the
// controller's flags (brake cells) needs --set cluster.allowContext=<context>.
package kubeconfigprovider

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
	"github.com/brakebench/brakebench/internal/sut/kueuelws"
)

// Provider connects to cfg.Cluster.Context.
type Provider struct {
	Kubeconfig, Context, AllowContext string
	Namespace, Deployment             string
	KueueNamespace, KueueDeployment   string
	ExporterURL                       string
	Name_                             string
	// ControllerFlags reads the flags a controller version defines (nil: no check); a version
	// switch then drops the Deployment's args the target does not define.
	ControllerFlags func(ctx context.Context, version string) (agentsandbox.Flags, error)
}

// Factory implements provider.Factory.
func Factory(cfg *config.Resolved) (provider.Provider, error) {
	return newProvider(cfg), nil
}

// FactoryWithFlags is Factory with the controller's flags read per version by flags.
func FactoryWithFlags(flags func(ctx context.Context, version string) (agentsandbox.Flags, error)) provider.Factory {
	return func(cfg *config.Resolved) (provider.Provider, error) {
		p := newProvider(cfg)
		p.ControllerFlags = flags
		return p, nil
	}
}

func newProvider(cfg *config.Resolved) *Provider {
	return &Provider{
		Kubeconfig: cfg.Cluster.Kubeconfig, Context: cfg.Cluster.Context, AllowContext: cfg.Cluster.AllowContext,
		Namespace: cfg.Controller.Namespace, Deployment: cfg.Controller.Deployment, Name_: "kubeconfig",
		KueueNamespace: cfg.GangQuota.KueueNamespace, KueueDeployment: cfg.GangQuota.KueueDeployment,
		ExporterURL: cfg.Autoscale.ExporterURL,
	}
}

// Name implements provider.Provider.
func (p *Provider) Name() string { return p.Name_ }

// Connect checks the context exists and the cluster answers.
func (p *Provider) Connect(ctx context.Context) (provider.Cluster, error) {
	rc, err := kube.RESTConfig(p.Kubeconfig, p.Context)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = -1, 0
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(cctx); err != nil {
		return nil, fmt.Errorf("cluster of context %q is unreachable: %w", p.Context, err)
	}
	return &Cluster{p: p, rc: rc, dep: &agentsandbox.Deployment{Client: c, Namespace: p.Namespace, Name: p.Deployment, Flags: p.ControllerFlags},
		kueue: &kueuelws.Deployment{Client: c, Namespace: p.KueueNamespace, Name: p.KueueDeployment}}, nil
}

// NewCluster wraps an already-made rest.Config (the kind provider reuses this).
func NewCluster(p *Provider, rc *rest.Config, created bool, closeFn func(context.Context) error) (*Cluster, error) {
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &Cluster{p: p, rc: rc, created: created, closeFn: closeFn, dep: &agentsandbox.Deployment{Client: c, Namespace: p.Namespace, Name: p.Deployment, Flags: p.ControllerFlags},
		kueue: &kueuelws.Deployment{Client: c, Namespace: p.KueueNamespace, Name: p.KueueDeployment}}, nil
}

// Cluster is a connected existing cluster.
type Cluster struct {
	p       *Provider
	rc      *rest.Config
	dep     *agentsandbox.Deployment
	kueue   *kueuelws.Deployment
	created bool
	closeFn func(context.Context) error
}

// Info implements provider.Cluster.
func (c *Cluster) Info() provider.Info {
	return provider.Info{Provider: c.p.Name_, Kubeconfig: c.p.Kubeconfig, Context: c.p.Context, Server: c.rc.Host, Created: c.created}
}

// RESTConfig implements provider.Cluster.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.rc) }

// Controller implements provider.Cluster.
func (c *Cluster) Controller() provider.Controller { return &guarded{c: c} }

// MetricsTargets implements provider.Cluster: the apiserver's own /metrics.
func (c *Cluster) MetricsTargets() []provider.MetricsTarget {
	return []provider.MetricsTarget{{Component: "kube-apiserver", URL: "/metrics", ViaAPIServer: true}}
}

// Close never deletes a cluster it did not create.
func (c *Cluster) Close(ctx context.Context) error {
	if c.closeFn != nil && c.created {
		return c.closeFn(ctx)
	}
	return nil
}

// guarded refuses to change a cluster brakebench did not create unless the user allowed it.
type guarded struct{ c *Cluster }

func (g *guarded) allowed() error {
	if g.c.created || g.c.p.AllowContext == g.c.p.Context {
		return nil
	}
	return fmt.Errorf("changing the agent-sandbox controller on context %q needs --set cluster.allowContext=%s", g.c.p.Context, g.c.p.Context)
}

func (g *guarded) Configure(ctx context.Context, version string, extra []string) (func(context.Context) error, error) {
	if err := g.allowed(); err != nil {
		return func(context.Context) error { return nil }, err // nothing was changed
	}
	return g.c.dep.Configure(ctx, version, extra)
}

// TakeNotes implements provider.Noter.
func (g *guarded) TakeNotes() []string { return g.c.dep.TakeNotes() }

func (g *guarded) Current() (string, []string) {
	v, a, _ := g.c.dep.Current(context.Background())
	return v, a
}

func (g *guarded) Restore(ctx context.Context, version string, flags []string) error {
	if err := g.allowed(); err != nil {
		return err
	}
	return g.c.dep.Restore(ctx, version, flags)
}

func (g *guarded) Stop(ctx context.Context) (func(context.Context) error, error) {
	if err := g.allowed(); err != nil {
		return func(context.Context) error { return nil }, err // nothing was changed
	}
	return g.c.dep.Stop(ctx)
}

// ControllerLog implements provider.ControllerLogs: the controller Deployment's pods' logs
// (reading them changes nothing, so cluster.allowContext is not needed).
func (c *Cluster) ControllerLog(ctx context.Context) (io.ReadCloser, error) {
	return c.dep.Logs(ctx)
}
