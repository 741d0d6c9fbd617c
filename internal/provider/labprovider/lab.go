// Package labprovider puts the embedded lab behind the provider interface: it brings the lab up
// when it is not running (and takes it down again on Close), or reuses a running one.
package labprovider

import (
	"context"
	"fmt"
	"io"
	"os"

	"k8s.io/client-go/rest"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/lab"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/results"
)

// Provider is the lab provider.
type Provider struct {
	Lab  *lab.Lab
	Args []string // baseline controller flags (controller.args)
}

// Factory returns a provider factory whose labs are made by newLab.
func Factory(newLab func(cfg *config.Resolved) (*lab.Lab, error)) provider.Factory {
	return func(cfg *config.Resolved) (provider.Provider, error) {
		l, err := newLab(cfg)
		if err != nil {
			return nil, err
		}
		return &Provider{Lab: l, Args: cfg.Controller.Args}, nil
	}
}

// Name implements provider.Provider.
func (p *Provider) Name() string { return "lab" }

// Connect brings the lab up, or reuses it when it already runs.
func (p *Provider) Connect(ctx context.Context) (provider.Cluster, error) {
	created := true
	if s, err := p.Lab.Load(); err == nil && p.Lab.Healthy(ctx, s) == nil {
		created = false
	}
	s, err := p.Lab.Up(ctx, p.Args)
	if err != nil {
		return nil, err
	}
	if d := s.ControllerDeployment; d != nil {
		return nil, fmt.Errorf("lab %q runs the agent-sandbox controller as the Deployment %s/%s on its real node (lab.controllerMode: deployment); drive it as any cluster: --cluster kubeconfig --kubeconfig %s --context %s --set cluster.allowContext=%s",
			s.Name, d.Namespace, d.Name, s.Kubeconfig, s.Context(), s.Context())
	}
	rc, err := kube.RESTConfig(s.Kubeconfig, "")
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = -1, 0
	c := &Cluster{lab: p.Lab, state: s, rc: rc, created: created, base: p.Args}
	return c, nil
}

// Attach connects to the lab only if it is already up (cleanup must not start a lab).
func Attach(ctx context.Context, l *lab.Lab) (*Cluster, error) {
	s, err := l.Load()
	if err != nil {
		return nil, err
	}
	if err := l.Healthy(ctx, s); err != nil {
		return nil, err
	}
	rc, err := kube.RESTConfig(s.Kubeconfig, "")
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = -1, 0
	return &Cluster{lab: l, state: s, rc: rc}, nil
}

// Cluster is a connected lab.
type Cluster struct {
	lab     *lab.Lab
	state   *lab.State
	rc      *rest.Config
	created bool
	base    []string
}

// Info implements provider.Cluster.
func (c *Cluster) Info() provider.Info {
	return provider.Info{Provider: "lab", Kubeconfig: c.state.Kubeconfig, Server: c.state.Server, Created: c.created}
}

// RESTConfig implements provider.Cluster.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.rc) }

// State is the lab's saved state.
func (c *Cluster) State() *lab.State { return c.state }

// ComponentArgs implements faults.Restarter.
func (c *Cluster) ComponentArgs(name string) ([]string, error) { return c.lab.ComponentArgs(name) }

// RestartComponent implements faults.Restarter.
func (c *Cluster) RestartComponent(ctx context.Context, name string, args []string) error {
	return c.lab.RestartComponent(ctx, name, args)
}

// Controller implements provider.Cluster.
func (c *Cluster) Controller() provider.Controller { return &controller{c: c} }

// Health implements provider.Housekeeper.
func (c *Cluster) Health(ctx context.Context) (results.LabHealth, error) { return c.lab.Health(ctx) }

var _ provider.Housekeeper = (*Cluster)(nil)

// Housekeep implements provider.Housekeeper: the lab's etcd compacted and defragmented, its
// API server restarted, as the steps say.
func (c *Cluster) Housekeep(ctx context.Context, steps []string) (results.Housekeeping, error) {
	return c.lab.Housekeep(ctx, steps)
}

// MetricsTargets implements provider.Cluster.
func (c *Cluster) MetricsTargets() []provider.MetricsTarget {
	t := []provider.MetricsTarget{{Component: "kube-apiserver", URL: "/metrics", ViaAPIServer: true}}
	for _, comp := range []string{"kube-scheduler", "kube-controller-manager"} {
		if u := c.lab.ComponentMetricsURL(comp); u != "" {
			t = append(t, provider.MetricsTarget{Component: comp, URL: u, Insecure: true})
		}
	}
	if c.state.Controller != nil {
		t = append(t, provider.MetricsTarget{Component: "agent-sandbox-controller", URL: c.state.Controller.MetricsURL})
	}
	return t
}

// Close takes the lab down only if this Connect brought it up.
func (c *Cluster) Close(ctx context.Context) error {
	if !c.created {
		return nil
	}
	return c.lab.Down(ctx)
}

type controller struct{ c *Cluster }

func (k *controller) Current() (string, []string) {
	if ctl := k.c.state.Controller; ctl != nil {
		return ctl.Version, append([]string(nil), ctl.Extra...)
	}
	return "", nil
}

func (k *controller) Configure(ctx context.Context, version string, extra []string) (func(context.Context) error, error) {
	prevVersion, prevExtra := k.Current()
	revert := func(ctx context.Context) error {
		if prevVersion == "" {
			return k.c.lab.StopController(k.c.state)
		}
		_, err := k.c.lab.StartController(ctx, k.c.state, prevVersion, prevExtra)
		return err
	}
	args := append(append([]string{}, k.c.base...), extra...)
	if version == "" {
		version = prevVersion
	}
	_, err := k.c.lab.StartController(ctx, k.c.state, version, args)
	return revert, err
}

func (k *controller) Restore(ctx context.Context, version string, flags []string) error {
	if version == "" {
		return k.c.lab.StopController(k.c.state)
	}
	_, err := k.c.lab.StartController(ctx, k.c.state, version, flags)
	return err
}

func (k *controller) Stop(ctx context.Context) (func(context.Context) error, error) {
	prevVersion, prevArgs := k.Current()
	revert := func(ctx context.Context) error {
		if prevVersion == "" {
			return nil
		}
		_, err := k.c.lab.StartController(ctx, k.c.state, prevVersion, prevArgs)
		return err
	}
	return revert, k.c.lab.StopController(k.c.state)
}

// ControllerLog implements provider.ControllerLogs: the controller process's log file.
func (c *Cluster) ControllerLog(context.Context) (io.ReadCloser, error) {
	return os.Open(c.lab.ControllerLogPath())
}

// PrepareVersions implements provider.VersionPreparer: every controller version is built now.
func (c *Cluster) PrepareVersions(ctx context.Context, versions []string) error {
	for _, v := range versions {
		if err := c.lab.BuildController(ctx, v); err != nil {
			return err
		}
	}
	return nil
}

// PlacePod implements provider.PodPlacer: a pod brakebench runs in the lab (the in-cluster
// runner) goes to the real node, on the host's network.
func (c *Cluster) PlacePod(spec map[string]any) error {
	if c.state.RealNode == nil {
		return fmt.Errorf("lab %q has no real node to run pods on: bring it up with lab.realNode=true", c.state.Name)
	}
	return lab.OnRealNodeHostNetwork(spec, c.state.Server)
}
