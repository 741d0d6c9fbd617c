// Package lab runs the embedded lab cluster: a real control plane (kube-apiserver, etcd,
// kube-scheduler, kube-controller-manager) started by kwokctl's binary runtime from the cached
// binaries, simulated kwok nodes, the agent-sandbox CRDs from the pinned module, and the
// agent-sandbox controller as a local process authenticating as its own ServiceAccount.
package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/labbuild"
	"github.com/brakebench/brakebench/internal/progress"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
)

// Lab is one named lab on this machine.
type Lab struct {
	cfg      config.Lab
	versions labbuild.Versions
	builder  *labbuild.Builder
	pr       *progress.Progress
	dir      string
	records  string // where real nodes register themselves (DefaultRealNodeRecords)
}

// State is what `lab status` shows and what later commands read; saved as state.json.
type State struct {
	Name                 string            `json:"name"`
	Dir                  string            `json:"dir"`
	Kubeconfig           string            `json:"kubeconfig"`
	ControllerKubeconfig string            `json:"controllerKubeconfig"`
	Server               string            `json:"server"`
	Versions             map[string]string `json:"versions"`
	Binaries             map[string]string `json:"binaries"`
	Nodes                int               `json:"nodes"`
	CRDVersion           string            `json:"crdVersion"` // agent-sandbox version whose CRDs are installed
	Controller           *Controller       `json:"controller,omitempty"`
	Gang                 *Gang             `json:"gang,omitempty"`
	KEDA                 *KEDA             `json:"keda,omitempty"`
	RealNode             *RealNode         `json:"realNode,omitempty"`
	Karpenter            *Karpenter        `json:"karpenter,omitempty"`
	// ControllerDeployment is set when the controller runs as a Deployment on the real node
	// (lab.controllerMode: deployment) instead of as a local process (Controller).
	ControllerDeployment *ControllerDeployment `json:"controllerDeployment,omitempty"`
	CreatedAt            time.Time             `json:"createdAt"`
	UpSeconds            float64               `json:"upSeconds"`
}

// Controller is the running agent-sandbox controller.
type Controller struct {
	proc
	Version    string   `json:"version"`
	Extra      []string `json:"extra"` // the caller's flags, on top of the ones the lab always sets
	MetricsURL string   `json:"metricsURL"`
	HealthURL  string   `json:"healthURL"`
}

// New returns a handle on the lab cfg.Name; nothing is started.
func New(cfg config.Lab, versions labbuild.Versions, pr *progress.Progress) (*Lab, error) {
	if pr == nil {
		pr = progress.Discard()
	}
	cache, err := CacheDir(cfg)
	if err != nil {
		return nil, err
	}
	state := cfg.StateDir
	if state == "" {
		state = filepath.Join(cache, "labs")
	}
	return &Lab{
		cfg: cfg, versions: versions, pr: pr,
		builder: &labbuild.Builder{CacheDir: cache, Progress: pr},
		dir:     filepath.Join(state, cfg.Name),
		records: DefaultRealNodeRecords,
	}, nil
}

// CacheDir is the binary cache: lab.cacheDir or <user cache dir>/brakebench.
func CacheDir(cfg config.Lab) (string, error) {
	if cfg.CacheDir != "" {
		return filepath.Abs(cfg.CacheDir)
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no user cache dir (set lab.cacheDir): %w", err)
	}
	return filepath.Join(d, "brakebench"), nil
}

// Dir is the lab's state directory.
func (l *Lab) Dir() string { return l.dir }

// Build builds (or finds cached) every component the lab needs.
func (l *Lab) Build(ctx context.Context) (map[string]labbuild.Result, error) {
	return l.builder.BuildAll(ctx, labbuild.LabComponents(l.versions))
}

// BuildAddons builds (or finds cached) the named optional components (kueue, lws, keda).
func (l *Lab) BuildAddons(ctx context.Context, names []string) (map[string]labbuild.Result, error) {
	all := labbuild.Addons(l.versions)
	comps := make([]labbuild.Component, 0, len(names))
	for _, n := range names {
		c, ok := all[n]
		if !ok {
			return nil, fmt.Errorf("unknown lab component %q (optional components: %s)", n, strings.Join(labbuild.AddonNames(), ", "))
		}
		comps = append(comps, c)
	}
	return l.builder.BuildAll(ctx, comps)
}

func (l *Lab) statePath() string { return filepath.Join(l.dir, "state.json") }
func (l *Lab) kwokDir() string   { return filepath.Join(l.dir, "kwok") }

// kwokName is kwokctl's cluster name; kwokctl prefixes kube contexts with "kwok-".
func (l *Lab) kwokName() string { return l.cfg.Name }

// Load reads the saved state; errNotUp when there is none.
func (l *Lab) Load() (*State, error) {
	raw, err := os.ReadFile(l.statePath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, errNotUp
	}
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", l.statePath(), err)
	}
	return &s, nil
}

// IsNotUp reports whether err means the lab has no state.
func IsNotUp(err error) bool { return errors.Is(err, errNotUp) }

func (l *Lab) save(s *State) error {
	raw, _ := json.MarshalIndent(s, "", "  ")
	return os.WriteFile(l.statePath(), raw, 0o644)
}

// Healthy reports whether the saved lab answers: apiserver /readyz and the controller process.
func (l *Lab) Healthy(ctx context.Context, s *State) error {
	cfg, err := kube.RESTConfig(s.Kubeconfig, "")
	if err != nil {
		return err
	}
	c, err := kube.NewClients(cfg)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := c.Typed.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(cctx); err != nil {
		return fmt.Errorf("kube-apiserver not ready: %w", err)
	}
	if s.Controller != nil && !alive(s.Controller.PID, s.Controller.Binary) {
		return fmt.Errorf("agent-sandbox controller (pid %d) is not running; see %s", s.Controller.PID, s.Controller.Log)
	}
	if rn := s.RealNode; rn != nil {
		for _, p := range []*proc{rn.Containerd, rn.Kubelet} {
			if p == nil || !alive(p.PID, p.Binary) {
				return errors.New("the real node's containerd or kubelet is not running")
			}
		}
	}
	return nil
}

// Context is the lab's kube context name (kwokctl prefixes the cluster name with "kwok-").
func (s *State) Context() string { return "kwok-" + s.Name }

// Up brings the lab up, or returns the running one (running Up twice is safe). On error or when
// ctx is cancelled (Ctrl-C) everything started so far is torn down before it returns.
func (l *Lab) Up(ctx context.Context, controllerArgs []string) (st *State, err error) {
	if s, lerr := l.Load(); lerr == nil {
		if herr := l.Healthy(ctx, s); herr == nil {
			l.pr.Printf("lab %q is already up (kubeconfig %s)", l.cfg.Name, s.Kubeconfig)
			return s, nil
		} else {
			l.pr.Printf("lab %q state found but unhealthy (%v); recreating", l.cfg.Name, herr)
		}
		if derr := l.Down(context.WithoutCancel(ctx)); derr != nil {
			return nil, derr
		}
	}
	bins, err := l.Build(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	// From here on, anything that fails or is interrupted is torn down.
	defer func() {
		if err != nil {
			l.pr.Printf("lab up failed or was interrupted; tearing down what was started")
			if derr := l.Down(context.WithoutCancel(ctx)); derr != nil {
				err = errors.Join(err, derr)
			}
		}
	}()
	if err = os.MkdirAll(l.dir, 0o755); err != nil {
		return nil, err
	}
	k8s := bins["kubernetes"]
	s := &State{
		Name: l.cfg.Name, Dir: l.dir, Kubeconfig: filepath.Join(l.dir, "kubeconfig"),
		ControllerKubeconfig: filepath.Join(l.dir, "agent-sandbox-controller.kubeconfig"),
		Versions: map[string]string{
			"kubernetes": l.versions.Kubernetes, "etcd": l.versions.Etcd, "kwok": l.versions.Kwok, "agent-sandbox": l.versions.AgentSandbox,
		},
		Binaries: map[string]string{
			"kube-apiserver":           k8s.Path("kube-apiserver"),
			"kube-controller-manager":  k8s.Path("kube-controller-manager"),
			"kube-scheduler":           k8s.Path("kube-scheduler"),
			"kubectl":                  k8s.Path("kubectl"),
			"etcd":                     bins["etcd"].Path("etcd"),
			"kwok":                     bins["kwok"].Path("kwok"),
			"kwokctl":                  bins["kwok"].Path("kwokctl"),
			"agent-sandbox-controller": bins["agent-sandbox"].Path("agent-sandbox-controller"),
		},
		Nodes:     l.cfg.Nodes.Count,
		CreatedAt: time.Now().UTC(),
	}
	// Saved early so `lab down` can clean up even if this process dies mid-way.
	if err = l.save(s); err != nil {
		return nil, err
	}
	task := l.pr.Task("lab up "+l.cfg.Name, 30*time.Second)
	defer func() {
		if err != nil {
			task.Done("FAILED")
		} else {
			task.Done("up")
		}
	}()
	if err = l.createCluster(ctx, s); err != nil {
		return nil, err
	}
	rc, err := kubeRESTConfig(s.Kubeconfig)
	if err != nil {
		return nil, err
	}
	clients, err := kubeClients(rc)
	if err != nil {
		return nil, err
	}
	if err = createNodes(ctx, clients, l.cfg.Nodes, l.cfg.UpTimeout); err != nil {
		return nil, err
	}
	s.Server = rc.Host
	if l.cfg.RealNode {
		if err = l.startRealNode(ctx, s, clients); err != nil {
			return nil, err
		}
	}
	if err = l.installAgentSandbox(ctx, clients, l.versions.AgentSandbox); err != nil {
		return nil, err
	}
	s.CRDVersion = l.versions.AgentSandbox
	if l.cfg.ControllerMode == "deployment" {
		if err = l.deployController(ctx, s, clients, nil); err != nil {
			return nil, err
		}
		s.UpSeconds = time.Since(start).Seconds()
		return s, l.save(s)
	}
	if err = agentsandbox.ServiceAccountKubeconfig(ctx, clients, agentsandbox.ControllerNamespace, agentsandbox.ControllerServiceAcount, s.ControllerKubeconfig, 48*time.Hour); err != nil {
		return nil, err
	}
	if err = l.save(s); err != nil {
		return nil, err
	}
	if _, err = l.StartController(ctx, s, l.versions.AgentSandbox, controllerArgs); err != nil {
		return nil, err
	}
	s.UpSeconds = time.Since(start).Seconds()
	return s, l.save(s)
}

func (l *Lab) createCluster(ctx context.Context, s *State) error {
	kwokMod, err := l.builder.ModuleDir(ctx, "sigs.k8s.io/kwok", l.versions.Kwok)
	if err != nil {
		return err
	}
	stages, err := stagesConfig(kwokMod, l.cfg.PodBootDelay, l.cfg.PodBootJitter)
	if err != nil {
		return err
	}
	// Component flags go in a KwokctlConfiguration document (kwokctl v0.8.0's --extra-args
	// indexes its patches wrongly once two components take more than one flag each).
	patches := componentPatches{}
	// The aggregation layer's request-header authentication (kwokctl sets the proxy client
	// certificate but not these): aggregated APIs such as KEDA's external metrics then see the
	// real requesting user. pki/ exists before kwokctl starts the apiserver.
	pki := filepath.Join(l.clusterDir(), "pki")
	patches.add("kube-apiserver",
		"requestheader-client-ca-file="+filepath.Join(pki, "ca.crt"),
		"requestheader-allowed-names=kwok-admin",
		"requestheader-username-headers=X-Remote-User",
		"requestheader-group-headers=X-Remote-Group",
		"requestheader-extra-headers-prefix=X-Remote-Extra-")
	patches.add("kube-controller-manager", "horizontal-pod-autoscaler-sync-period="+l.cfg.HPASyncPeriod.String())
	// kwok manages only the simulated nodes (kwokctl's binary runtime would take every node whose
	// Lease it can claim, the real node's included).
	patches.add("kwok-controller", "manage-all-nodes=false", "manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake")
	if l.cfg.RealNode {
		// logs and exec on the real node: the apiserver reaches its kubelet by IP, as the lab's admin.
		patches.add("kube-apiserver",
			"kubelet-client-certificate="+filepath.Join(pki, "admin.crt"),
			"kubelet-client-key="+filepath.Join(pki, "admin.key"),
			"kubelet-preferred-address-types=InternalIP")
	}
	for _, a := range l.cfg.APIServerArgs {
		patches.add("kube-apiserver", strings.TrimPrefix(a, "--"))
	}
	doc, err := patches.document()
	if err != nil {
		return err
	}
	stagesPath := filepath.Join(l.dir, "kwok-stages.yaml")
	if err := os.WriteFile(stagesPath, append(stages, doc...), 0o644); err != nil {
		return err
	}
	args := []string{
		"--config", stagesPath,
		"create", "cluster", "--name", l.kwokName(), "--runtime", "binary",
		"--kube-apiserver-binary", s.Binaries["kube-apiserver"],
		"--kube-controller-manager-binary", s.Binaries["kube-controller-manager"],
		"--kube-scheduler-binary", s.Binaries["kube-scheduler"],
		"--etcd-binary", s.Binaries["etcd"],
		"--kwok-controller-binary", s.Binaries["kwok"],
		"--kubeconfig", s.Kubeconfig,
		"--wait", l.cfg.UpTimeout.String(),
	}
	out, err := l.kwokctl(ctx, s, args...)
	if err != nil {
		return fmt.Errorf("kwokctl create cluster: %w\n%s", err, tail(out, 3000))
	}
	return nil
}

func (l *Lab) kwokctl(ctx context.Context, s *State, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, s.Binaries["kwokctl"], args...)
	cmd.Env = append(os.Environ(),
		"KWOK_WORKDIR="+l.kwokDir(),
		"KWOK_KUBECTL_BINARY="+s.Binaries["kubectl"],
	)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 20 * time.Second
	out, err := cmd.CombinedOutput()
	if i := slices.Index(args, "cluster"); i > 0 {
		_ = os.WriteFile(filepath.Join(l.dir, "kwokctl-"+args[i-1]+".log"), out, 0o644) // best effort: the dir may be gone
	}
	return out, err
}

func (l *Lab) installAgentSandbox(ctx context.Context, c *kube.Clients, version string) error {
	mod, err := l.builder.ModuleDir(ctx, "sigs.k8s.io/agent-sandbox", version)
	if err != nil {
		return err
	}
	crds, err := agentsandbox.CRDs(mod)
	if err != nil {
		return err
	}
	labels := map[string]string{kube.ManagedByKey: kube.ManagedByValue}
	if err := c.Apply(ctx, crds, labels); err != nil {
		return err
	}
	names := make([]string, 0, len(crds))
	for _, crd := range crds {
		names = append(names, crd.GetName())
	}
	if err := agentsandbox.WaitCRDsEstablished(ctx, c, names, time.Minute); err != nil {
		return fmt.Errorf("agent-sandbox CRDs not established: %w", err)
	}
	rbac, err := agentsandbox.RBAC(mod)
	if err != nil {
		return err
	}
	return c.Apply(ctx, rbac, labels)
}

// StartController (re)starts the agent-sandbox controller at version with extra args, as the
// controller's ServiceAccount, and waits until it reports ready.
func (l *Lab) StartController(ctx context.Context, s *State, version string, extra []string) (*Controller, error) {
	if err := l.StopController(s); err != nil {
		return nil, err
	}
	bin := s.Binaries["agent-sandbox-controller"]
	if version != l.versions.AgentSandbox {
		r, err := l.builder.Build(ctx, labbuild.AgentSandboxComponent(version))
		if err != nil {
			return nil, err
		}
		bin = r.Path("agent-sandbox-controller")
	}
	if version != s.CRDVersion {
		// Each version runs against its own CRDs (from the same module).
		rc, err := kubeRESTConfig(s.Kubeconfig)
		if err != nil {
			return nil, err
		}
		c, err := kubeClients(rc)
		if err != nil {
			return nil, err
		}
		if err := l.installAgentSandbox(ctx, c, version); err != nil {
			return nil, fmt.Errorf("agent-sandbox %s CRDs: %w", version, err)
		}
		s.CRDVersion = version
	}
	mod, err := l.builder.ModuleDir(ctx, "sigs.k8s.io/agent-sandbox", version)
	if err != nil {
		return nil, err
	}
	defined, err := agentsandbox.ControllerFlags(mod)
	if err != nil {
		return nil, err
	}
	// A flag the version does not define makes it exit at start with its usage: the plan marks
	// such cells not applicable, and nothing may pass one here.
	if bad := defined.Undefined(extra); len(bad) > 0 {
		return nil, fmt.Errorf("agent-sandbox %s does not define %s (its own cmd/agent-sandbox-controller/main.go)", version, strings.Join(bad, " "))
	}
	// A port chosen free can be taken before the controller binds it; such a start is retried
	// with other ports (the cause is in the log: "bind: address already in use").
	for attempt := 1; ; attempt++ {
		ctrl, log, err := l.startController(ctx, s, version, bin, defined, extra)
		if err == nil || attempt == 3 || !strings.Contains(log, "address already in use") {
			return ctrl, err
		}
		if err := l.StopController(s); err != nil {
			return nil, err
		}
	}
}

// startController starts the controller once on fresh ports and waits until it reports ready;
// on failure it returns what the controller logged in this start.
func (l *Lab) startController(ctx context.Context, s *State, version, bin string, defined agentsandbox.Flags, extra []string) (*Controller, string, error) {
	mport, err := freePort()
	if err != nil {
		return nil, "", err
	}
	hport, err := freePort()
	if err != nil {
		return nil, "", err
	}
	args := []string{
		"--kubeconfig=" + s.ControllerKubeconfig,
		"--extensions=true",
		"--leader-elect=false",
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", mport),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", hport),
	}
	// The lab serves only v1beta1 CRDs (no conversion): the webhook stays off where a version
	// has one (v1.0.1 removed it with its flags).
	if defined.Defines("enable-webhook") {
		args = append(args, "--enable-webhook=false")
	}
	args = append(args, extra...)
	// The log is appended across restarts: a failure is read from what this start wrote.
	var logStart int64
	if fi, err := os.Stat(l.ControllerLogPath()); err == nil {
		logStart = fi.Size()
	}
	p, _, err := startProc("agent-sandbox-controller", bin, args, nil, l.ControllerLogPath())
	if err != nil {
		return nil, "", err
	}
	ctrl := &Controller{proc: *p, Version: version, Extra: extra,
		MetricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", mport),
		HealthURL:  fmt.Sprintf("http://127.0.0.1:%d/readyz", hport)}
	s.Controller = ctrl
	if err := l.save(s); err != nil {
		return nil, "", err
	}
	if err := waitHTTP(ctx, ctrl.HealthURL, 60*time.Second, func() bool { return alive(p.PID, bin) }); err != nil {
		log := readFrom(ctrl.Log, logStart, 64<<10)
		if cause := agentsandbox.StartupFailure(log); cause != "" {
			return nil, log, fmt.Errorf("agent-sandbox controller %s did not become ready: %s (%w; log %s, kept with the run's output as %s)", version, cause, err, ctrl.Log, ControllerLogName)
		}
		return nil, log, fmt.Errorf("agent-sandbox controller %s did not become ready (%w; log %s, kept with the run's output as %s); its last lines:\n%s", version, err, ctrl.Log, ControllerLogName, lastLines(log, 20))
	}
	return ctrl, "", nil
}

// ComponentMetricsURL is the /metrics URL kwokctl recorded for a control-plane component
// (kube-scheduler, kube-controller-manager), or "" when it has none.
func (l *Lab) ComponentMetricsURL(name string) string {
	c, err := l.component(name)
	if err != nil {
		return ""
	}
	return c.Metric
}

// StopController stops the controller if it runs: the one s records, and any other
// agent-sandbox controller process of this lab (a caller holding an older copy of the state would
// otherwise leave the one started since running beside the next: two controllers, one without
// the cell's brakes).
func (l *Lab) StopController(s *State) error {
	if s.Controller != nil {
		if err := stopPID(s.Controller.PID, s.Controller.Binary, 10*time.Second); err != nil {
			return err
		}
	}
	for _, pid := range processesMentioning(l.dir) {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && filepath.Base(strings.TrimSuffix(exe, " (deleted)")) == "agent-sandbox-controller" {
			if err := stopPID(pid, "", 10*time.Second); err != nil {
				return err
			}
		}
	}
	if s.Controller == nil {
		return nil
	}
	s.Controller = nil
	return l.save(s)
}

// Down stops everything the lab started and removes its state directory. It is safe to call on a
// lab that is half up, already down, or whose brakebench process was killed.
func (l *Lab) Down(ctx context.Context) error {
	var errs []error
	s, err := l.Load()
	if err != nil && !IsNotUp(err) {
		errs = append(errs, err)
	}
	if s != nil {
		// The real node first: its kubelet drains through the apiserver while that still runs.
		if err := l.stopRealNode(ctx, s); err != nil {
			errs = append(errs, fmt.Errorf("real node: %w", err))
		}
		if s.RealNode != nil {
			if left := s.RealNode.Leftovers(); len(left) > 0 {
				errs = append(errs, fmt.Errorf("real node left behind: %s", strings.Join(left, "; ")))
			}
		}
		if err := l.StopController(s); err != nil {
			errs = append(errs, err)
		}
		var extra []proc
		if s.KEDA != nil {
			extra = append(extra, s.KEDA.Adapter, s.KEDA.Operator)
		}
		if s.Karpenter != nil {
			extra = append(extra, s.Karpenter.proc)
		}
		for _, p := range extra {
			if err := stopPID(p.PID, p.Binary, 10*time.Second); err != nil {
				errs = append(errs, err)
			}
		}
		if s.Gang != nil {
			for _, p := range []proc{s.Gang.Kueue, s.Gang.LWS} {
				if err := stopPID(p.PID, p.Binary, 10*time.Second); err != nil {
					errs = append(errs, err)
				}
			}
		}
		if _, serr := os.Stat(s.Binaries["kwokctl"]); serr == nil {
			if out, err := l.kwokctl(ctx, s, "delete", "cluster", "--name", l.kwokName()); err != nil {
				errs = append(errs, fmt.Errorf("kwokctl delete cluster: %w: %s", err, tail(out, 500)))
			}
		}
	}
	// Whatever still mentions the lab's directory (a component kwokctl lost track of) goes too.
	for _, pid := range processesMentioning(l.dir) {
		if err := stopPID(pid, "", 5*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if err := l.removeKueueMetricsCert(); err != nil {
		errs = append(errs, err)
	}
	if left := processesMentioning(l.dir); len(left) > 0 {
		errs = append(errs, fmt.Errorf("processes still running for lab %s: %v", l.cfg.Name, left))
	}
	if err := os.RemoveAll(l.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Leftovers lists processes still running for this lab (for tests and `lab status`).
func (l *Lab) Leftovers() []int { return processesMentioning(l.dir) }

func waitHTTP(ctx context.Context, url string, timeout time.Duration, stillAlive func() bool) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if !stillAlive() {
			return errors.New("process exited")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s", url, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func tailFile(path string, n int) string {
	b, _ := os.ReadFile(path)
	return tail(b, n)
}

// ControllerLogName is where a run keeps the controller's log in its output directory.
const ControllerLogName = "logs/agent-sandbox-controller.log"

// readFrom is what path holds after offset off (at most its last max bytes).
func readFrom(path string, off int64, max int) string {
	b, _ := os.ReadFile(path)
	if off > 0 && off <= int64(len(b)) {
		b = b[off:]
	}
	return tail(b, max)
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ControllerLogPath is the agent-sandbox controller's log file (appended across restarts).
func (l *Lab) ControllerLogPath() string {
	return filepath.Join(l.dir, "logs", "agent-sandbox-controller.log")
}

// BuildController builds (or finds cached) the agent-sandbox controller at version, so a run can
// have every version it needs before its first cell.
func (l *Lab) BuildController(ctx context.Context, version string) error {
	if version == "" || version == l.versions.AgentSandbox {
		return nil
	}
	if _, err := l.builder.Build(ctx, labbuild.AgentSandboxComponent(version)); err != nil {
		return fmt.Errorf("build agent-sandbox %s: %w", version, err)
	}
	return nil
}
