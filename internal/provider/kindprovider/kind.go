// Package kindprovider creates kind clusters with the sigs.k8s.io/kind Go library (pinned in
// go.mod) behind e2e-framework's E2EClusterProvider interface. e2e-framework's own kind support
// shells out to a kind CLI it installs at an old version; this one needs only a Docker engine.
package kindprovider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/pkg/types"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/provider/kubeconfigprovider"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
)

// ErrNoDocker says kind cannot run here.
var ErrNoDocker = errors.New("the kind provider needs a running Docker engine")

// DockerAvailable checks that a Docker engine (not just the client) answers.
func DockerAvailable(ctx context.Context) error {
	if _, err := exec.LookPath("docker"); err != nil {
		return fmt.Errorf("%w: no docker command on PATH", ErrNoDocker)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: `docker info` failed: %s", ErrNoDocker, strings.TrimSpace(string(out)))
	}
	return nil
}

// Cluster implements types.E2EClusterProvider with the kind library.
type Cluster struct {
	name       string
	image      string
	kubeconfig string
	dir        string
	rc         *rest.Config
	p          *kindcluster.Provider
}

var _ types.E2EClusterProvider = (*Cluster)(nil)

// NewCluster returns a kind cluster handle; dir holds its kubeconfig.
func NewCluster(name, image, dir string) *Cluster {
	return &Cluster{name: name, image: image, dir: dir, p: kindcluster.NewProvider()}
}

func (c *Cluster) WithName(name string) types.E2EClusterProvider { c.name = name; return c }

// WithVersion selects the node image tag (kindest/node:<version>).
func (c *Cluster) WithVersion(v string) types.E2EClusterProvider {
	c.image = "kindest/node:" + v
	return c
}

// WithPath is a no-op: the library needs no kind binary.
func (c *Cluster) WithPath(string) types.E2EClusterProvider { return c }

func (c *Cluster) WithOpts(opts ...types.ClusterOpts) types.E2EClusterProvider {
	for _, o := range opts {
		o(c)
	}
	return c
}

func (c *Cluster) SetDefaults() types.E2EClusterProvider {
	if c.name == "" {
		c.name = "brakebench"
	}
	return c
}

// Create creates the cluster (or reuses one of the same name) and writes its kubeconfig.
func (c *Cluster) Create(ctx context.Context, _ ...string) (string, error) {
	return c.CreateWithConfig(ctx, "")
}

func (c *Cluster) CreateWithConfig(ctx context.Context, configFile string) (string, error) {
	if err := DockerAvailable(ctx); err != nil {
		return "", err
	}
	existing, err := c.p.List()
	if err != nil {
		return "", err
	}
	found := false
	for _, n := range existing {
		found = found || n == c.name
	}
	if !found {
		opts := []kindcluster.CreateOption{kindcluster.CreateWithNodeImage(c.image), kindcluster.CreateWithWaitForReady(3 * time.Minute)}
		if configFile != "" {
			opts = append(opts, kindcluster.CreateWithConfigFile(configFile))
		}
		if err := c.p.Create(c.name, opts...); err != nil {
			return "", fmt.Errorf("kind create cluster %s: %w", c.name, err)
		}
	}
	return c.GenerateKubeconfig()
}

func (c *Cluster) GetKubeconfig() string { return c.kubeconfig }

func (c *Cluster) GenerateKubeconfig(...string) (string, error) {
	raw, err := c.p.KubeConfig(c.name, false)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return "", err
	}
	c.kubeconfig = filepath.Join(c.dir, "kind-"+c.name+".kubeconfig")
	if err := os.WriteFile(c.kubeconfig, []byte(raw), 0o600); err != nil {
		return "", err
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig([]byte(raw))
	if err != nil {
		return "", err
	}
	c.rc = rc
	return c.kubeconfig, nil
}

func (c *Cluster) GetKubectlContext() string { return "kind-" + c.name }

func (c *Cluster) ExportLogs(_ context.Context, dest string) error {
	return c.p.CollectLogs(c.name, dest)
}

func (c *Cluster) Destroy(context.Context) error { return c.p.Delete(c.name, c.kubeconfig) }

func (c *Cluster) WaitForControlPlane(context.Context, klient.Client) error { return nil }

func (c *Cluster) KubernetesRestConfig() *rest.Config { return c.rc }

// Factory is the brakebench provider for kind: it creates the cluster (and deletes it on Close),
// installs agent-sandbox from the pinned module's release manifests (published controller image),
// and drives that controller Deployment. moduleDir finds a module in the Go module cache.
func Factory(moduleDir func(ctx context.Context, mod, version string) (string, error), defaultVersion string) provider.Factory {
	return func(cfg *config.Resolved) (provider.Provider, error) {
		v := cfg.Controller.Version
		if v == "" {
			v = defaultVersion
		}
		return &Provider{cfg: cfg, moduleDir: moduleDir, version: v}, nil
	}
}

// Provider adapts Cluster to provider.Provider.
type Provider struct {
	cfg       *config.Resolved
	moduleDir func(ctx context.Context, mod, version string) (string, error)
	version   string
}

func (p *Provider) Name() string { return "kind" }

// Connect creates the cluster and installs agent-sandbox. The temporary directory holding the
// cluster's kubeconfig goes with the cluster on Close, and at once on every failure (without a
// Docker engine, Create fails first and nothing is left behind).
func (p *Provider) Connect(ctx context.Context) (_ provider.Cluster, err error) {
	dir, err := os.MkdirTemp("", "brakebench-kind-")
	if err != nil {
		return nil, fmt.Errorf("kind: temporary directory for the kubeconfig: %w", err)
	}
	defer func() {
		if err != nil {
			if rerr := os.RemoveAll(dir); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
	}()
	kc := NewCluster(p.cfg.Cluster.KindName, p.cfg.Cluster.KindImage, dir)
	if _, err := kc.Create(ctx); err != nil {
		return nil, err
	}
	kp := &kubeconfigprovider.Provider{Kubeconfig: kc.GetKubeconfig(), Context: kc.GetKubectlContext(),
		Namespace: p.cfg.Controller.Namespace, Deployment: p.cfg.Controller.Deployment, Name_: "kind",
		KueueNamespace: p.cfg.GangQuota.KueueNamespace, KueueDeployment: p.cfg.GangQuota.KueueDeployment,
		ExporterURL: p.cfg.Autoscale.ExporterURL, ControllerFlags: agentsandbox.FlagsAt(p.moduleDir)}
	rc := kc.KubernetesRestConfig()
	rc.QPS, rc.Burst = -1, 0
	destroy := func(ctx context.Context) error { return errors.Join(kc.Destroy(ctx), os.RemoveAll(dir)) }
	cl, err := kubeconfigprovider.NewCluster(kp, rc, true, destroy)
	if err != nil {
		return nil, errors.Join(err, kc.Destroy(context.WithoutCancel(ctx)))
	}
	if err := p.install(ctx, rc); err != nil {
		return nil, errors.Join(err, kc.Destroy(context.WithoutCancel(ctx)))
	}
	return cl, nil
}

func (p *Provider) install(ctx context.Context, rc *rest.Config) error {
	mod, err := p.moduleDir(ctx, "sigs.k8s.io/agent-sandbox", p.version)
	if err != nil {
		return err
	}
	objs, err := agentsandbox.InClusterManifests(mod, p.version)
	if err != nil {
		return err
	}
	c, err := kube.NewClients(rc)
	if err != nil {
		return err
	}
	return c.Apply(ctx, objs, map[string]string{kube.ManagedByKey: kube.ManagedByValue})
}
