package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/labbuild"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
	"github.com/brakebench/brakebench/internal/sut/kueuelws"
)

// Gang is the running Kueue + LeaderWorkerSet stack (the gang-quota suite's system under test).
type Gang struct {
	Kueue           proc     `json:"kueue"`
	LWS             proc     `json:"lws"`
	KueueGates      []string `json:"kueueGates"` // --feature-gates items Kueue runs with
	KueueMetricsURL string   `json:"kueueMetricsURL"`
	KueueHealthURL  string   `json:"kueueHealthURL"`
	LWSHealthURL    string   `json:"lwsHealthURL"`
	KueueKubeconfig string   `json:"kueueKubeconfig"`
	LWSKubeconfig   string   `json:"lwsKubeconfig"`
	KueueWebhookURL string   `json:"kueueWebhookURL"`
	LWSWebhookURL   string   `json:"lwsWebhookURL"`
	Webhooks        []string `json:"webhooks"` // "<kind>/<name>" of the registered webhook configurations
	MetricsCertDir  string   `json:"metricsCertDir,omitempty"`
}

// KueueMetricsCertDir is where Kueue v0.19.1 reads its metrics serving certificate when internal
// certificate management is off; the path is hard-coded in cmd/kueue/main.go.
const KueueMetricsCertDir = "/etc/kueue/metrics/certs"

// kueueBaseGates are always set: the visibility server is an extension apiserver on 0.0.0.0 that
// needs in-cluster delegated auth and nothing in the lab uses it.
var kueueBaseGates = []string{"VisibilityOnDemand=false"}

// KueueBaseGates are the feature gates the lab always gives Kueue.
func KueueBaseGates() []string { return append([]string(nil), kueueBaseGates...) }

// Versions are the component versions this lab runs.
func (l *Lab) Versions() labbuild.Versions { return l.versions }

func (l *Lab) gangDir() string { return filepath.Join(l.dir, "gang") }

// markerName marks a KueueMetricsCertDir this lab created (so Down removes only its own).
func (l *Lab) markerName() string { return ".brakebench-lab-" + l.cfg.Name }

// StartGang makes Kueue and the LeaderWorkerSet controller run with Kueue's feature gates set to
// gates ("Name=bool" items on top of the lab's own). The first call builds both (cached), installs
// their CRDs and RBAC, starts both as local processes under their ServiceAccounts and registers
// their webhooks with URL client configs; later calls only restart Kueue when the gates differ.
func (l *Lab) StartGang(ctx context.Context, s *State, gates []string) (*Gang, error) {
	want := append(append([]string{}, kueueBaseGates...), gates...)
	if g := s.Gang; g != nil && alive(g.Kueue.PID, g.Kueue.Binary) && alive(g.LWS.PID, g.LWS.Binary) {
		if slices.Equal(g.KueueGates, want) {
			return g, nil
		}
		return g, l.restartKueue(ctx, s, want)
	}
	if s.Gang != nil {
		if err := l.StopGang(ctx, s); err != nil {
			return nil, err
		}
	}
	bins, err := l.BuildAddons(ctx, []string{"kueue", "lws"})
	if err != nil {
		return nil, err
	}
	kueueDir, err := l.builder.ModuleDir(ctx, "sigs.k8s.io/kueue", l.versions.Kueue)
	if err != nil {
		return nil, err
	}
	lwsDir, err := l.builder.ModuleDir(ctx, "sigs.k8s.io/lws", l.versions.LWS)
	if err != nil {
		return nil, err
	}
	c, err := s.clients()
	if err != nil {
		return nil, err
	}
	g := &Gang{
		KueueKubeconfig: filepath.Join(l.gangDir(), "kueue.kubeconfig"),
		LWSKubeconfig:   filepath.Join(l.gangDir(), "lws.kubeconfig"),
	}
	s.Gang = g
	if err := l.save(s); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = l.StopGang(context.WithoutCancel(ctx), s)
		}
	}()
	certDir := filepath.Join(l.gangDir(), "certs")
	caPEM, err := writeServingCerts(certDir)
	if err != nil {
		return nil, err
	}
	if g.MetricsCertDir, err = l.placeKueueMetricsCert(certDir); err != nil {
		return nil, err
	}
	if err := l.save(s); err != nil {
		return nil, err
	}
	labels := map[string]string{kube.ManagedByKey: kube.ManagedByValue}
	var crds []*unstructured.Unstructured
	for _, read := range []func() ([]*unstructured.Unstructured, error){
		func() ([]*unstructured.Unstructured, error) { return kueuelws.KueueCRDs(kueueDir) },
		func() ([]*unstructured.Unstructured, error) { return kueuelws.LWSCRDs(lwsDir) },
	} {
		objs, err := read()
		if err != nil {
			return nil, err
		}
		crds = append(crds, objs...)
	}
	if err := c.Apply(ctx, crds, labels); err != nil {
		return nil, fmt.Errorf("Kueue/LWS CRDs: %w", err)
	}
	names := make([]string, 0, len(crds))
	for _, crd := range crds {
		names = append(names, crd.GetName())
	}
	if err := agentsandbox.WaitCRDsEstablished(ctx, c, names, time.Minute); err != nil {
		return nil, fmt.Errorf("Kueue/LWS CRDs not established: %w", err)
	}
	rbac, err := kueuelws.RBAC(kueueDir, lwsDir)
	if err != nil {
		return nil, err
	}
	if err := c.Apply(ctx, rbac, labels); err != nil {
		return nil, fmt.Errorf("Kueue/LWS RBAC: %w", err)
	}
	for _, sa := range []struct{ ns, name, path string }{
		{kueuelws.KueueNamespace, kueuelws.KueueServiceAccount, g.KueueKubeconfig},
		{kueuelws.LWSNamespace, kueuelws.LWSServiceAccount, g.LWSKubeconfig},
	} {
		if err := agentsandbox.ServiceAccountKubeconfig(ctx, c, sa.ns, sa.name, sa.path, 48*time.Hour); err != nil {
			return nil, err
		}
	}
	// LWS first: Kueue's LeaderWorkerSet integration waits for the LWS API.
	ports, err := freePorts(6)
	if err != nil {
		return nil, err
	}
	lwsCfg := filepath.Join(l.gangDir(), "lws-config.yaml")
	if err := os.WriteFile(lwsCfg, []byte(kueuelws.LWSConfig(ports[0], ports[1], ports[2], certDir)), 0o644); err != nil {
		return nil, err
	}
	p, _, err := startProc("lws-controller-manager", bins["lws"].Path("lws-controller-manager"),
		[]string{"--config=" + lwsCfg, "--zap-log-level=2"}, []string{"KUBECONFIG=" + g.LWSKubeconfig},
		filepath.Join(l.dir, "logs", "lws-controller-manager.log"))
	if err != nil {
		return nil, err
	}
	g.LWS = *p
	g.LWSWebhookURL = fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	g.LWSHealthURL = fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[2])
	if err := l.save(s); err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, g.LWSHealthURL, 90*time.Second, func() bool { return alive(p.PID, p.Binary) }); err != nil {
		return nil, fmt.Errorf("LWS controller did not become ready (log %s): %w\n%s", p.Log, err, tailFile(p.Log, 2000))
	}
	kueueCfg := filepath.Join(l.gangDir(), "kueue-config.yaml")
	if err := os.WriteFile(kueueCfg, []byte(kueuelws.KueueConfig(ports[3], ports[4], ports[5], certDir)), 0o644); err != nil {
		return nil, err
	}
	g.KueueWebhookURL = fmt.Sprintf("https://127.0.0.1:%d", ports[3])
	g.KueueMetricsURL = fmt.Sprintf("https://127.0.0.1:%d/metrics", ports[4])
	g.KueueHealthURL = fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[5])
	g.Kueue = proc{Name: "kueue", Binary: bins["kueue"].Path("kueue"), Args: []string{"--config=" + kueueCfg, "--zap-log-level=2"},
		Log: filepath.Join(l.dir, "logs", "kueue.log")}
	if err := l.startKueue(ctx, s, want); err != nil {
		return nil, err
	}
	var hooks []*unstructured.Unstructured
	for _, read := range []func() ([]*unstructured.Unstructured, error){
		func() ([]*unstructured.Unstructured, error) {
			return kueuelws.LWSWebhooks(lwsDir, g.LWSWebhookURL, caPEM)
		},
		func() ([]*unstructured.Unstructured, error) {
			return kueuelws.KueueWebhooks(kueueDir, g.KueueWebhookURL, caPEM)
		},
	} {
		objs, err := read()
		if err != nil {
			return nil, err
		}
		hooks = append(hooks, objs...)
	}
	for _, h := range hooks {
		g.Webhooks = append(g.Webhooks, h.GetKind()+"/"+h.GetName())
	}
	if err := l.save(s); err != nil { // before they exist: StopGang must find them
		return nil, err
	}
	if err := c.Apply(ctx, hooks, labels); err != nil {
		return nil, fmt.Errorf("Kueue/LWS webhooks: %w", err)
	}
	ok = true
	return g, l.save(s)
}

// startKueue starts the Kueue manager with the feature gates and waits until it is ready.
func (l *Lab) startKueue(ctx context.Context, s *State, gates []string) error {
	g := s.Gang
	args := append(append([]string{}, g.Kueue.Args[:2]...), "--feature-gates="+strings.Join(gates, ","))
	p, _, err := startProc("kueue", g.Kueue.Binary, args, []string{"KUBECONFIG=" + g.KueueKubeconfig}, g.Kueue.Log)
	if err != nil {
		return err
	}
	g.Kueue = *p
	g.KueueGates = gates
	if err := l.save(s); err != nil {
		return err
	}
	if err := waitHTTP(ctx, g.KueueHealthURL, 120*time.Second, func() bool { return alive(p.PID, p.Binary) }); err != nil {
		return fmt.Errorf("the Kueue manager did not become ready (log %s): %w\n%s", p.Log, err, tailFile(p.Log, 2000))
	}
	return nil
}

func (l *Lab) restartKueue(ctx context.Context, s *State, gates []string) error {
	if err := stopPID(s.Gang.Kueue.PID, s.Gang.Kueue.Binary, 15*time.Second); err != nil {
		return err
	}
	return l.startKueue(ctx, s, gates)
}

// StopGang removes the webhook configurations first (their failurePolicy is Fail: left behind
// they would block pod creation), then stops both processes and removes the metrics
// certificate it placed. Safe to call when nothing runs.
func (l *Lab) StopGang(ctx context.Context, s *State) error {
	g := s.Gang
	if g == nil {
		return nil
	}
	var errs []error
	if len(g.Webhooks) > 0 {
		c, err := s.clients()
		if err != nil {
			errs = append(errs, err)
		}
		for _, ref := range g.Webhooks {
			if c == nil {
				break
			}
			kind, name, _ := strings.Cut(ref, "/")
			gvr := kueuelws.ValidatingGVR
			if kind == "MutatingWebhookConfiguration" {
				gvr = kueuelws.MutatingGVR
			}
			if derr := c.Dynamic.Resource(gvr).Delete(ctx, name, metav1.DeleteOptions{}); derr != nil && !apierrors.IsNotFound(derr) {
				errs = append(errs, fmt.Errorf("delete %s: %w", ref, derr))
			}
		}
	}

	for _, p := range []proc{g.Kueue, g.LWS} {
		if err := stopPID(p.PID, p.Binary, 15*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if err := l.removeKueueMetricsCert(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	s.Gang = nil
	return l.save(s)
}

// placeKueueMetricsCert copies the lab's serving certificate to Kueue's hard-coded metrics
// certificate path. It refuses to touch a directory it did not create.
func (l *Lab) placeKueueMetricsCert(certDir string) (string, error) {
	dir := KueueMetricsCertDir
	if _, err := os.Stat(dir); err == nil {
		if _, merr := os.Stat(filepath.Join(dir, l.markerName())); merr != nil {
			return "", fmt.Errorf("%s exists and was not created by this lab; Kueue %s (internal certificates off) reads its metrics certificate from there, so the lab will not overwrite it", dir, l.versions.Kueue)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("the Kueue %s manager reads its metrics certificate from the hard-coded %s (internal certificates off); the lab cannot create it: %w (run as a user who can, e.g. root in CI)", l.versions.Kueue, dir, err)
	}
	for _, f := range []string{"tls.crt", "tls.key", l.markerName()} {
		var b []byte
		if f != l.markerName() {
			var err error
			if b, err = os.ReadFile(filepath.Join(certDir, f)); err != nil {
				return "", err
			}
		} else {
			b = []byte(l.dir + "\n")
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// removeKueueMetricsCert removes what placeKueueMetricsCert created (and /etc/kueue when empty).
func (l *Lab) removeKueueMetricsCert() error {
	dir := KueueMetricsCertDir
	if _, err := os.Stat(filepath.Join(dir, l.markerName())); err != nil {
		return nil
	}
	for _, f := range []string{"tls.crt", "tls.key", l.markerName()} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	// Remove the directories only when empty (someone else may have put files there since).
	for d := dir; d != "/etc"; d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			break
		}
	}
	return nil
}

func freePorts(n int) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for len(out) < n {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}
