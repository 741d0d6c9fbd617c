package lab

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/brakebench/brakebench/internal/kube"
)

// component is one kwokctl-managed control-plane process as kwokctl recorded it.
type component struct {
	Binary  string
	Args    []string
	WorkDir string
	Metric  string // /metrics URL ("" if none)
}

func (l *Lab) clusterDir() string { return filepath.Join(l.kwokDir(), "clusters", l.kwokName()) }

func (l *Lab) component(name string) (component, error) {
	raw, err := os.ReadFile(filepath.Join(l.clusterDir(), "kwok.yaml"))
	if err != nil {
		return component{}, err
	}
	docs, err := kube.DecodeYAML(raw)
	if err != nil {
		return component{}, err
	}
	for _, d := range docs {
		comps, _, _ := unstructured.NestedSlice(d.Object, "components")
		for _, c := range comps {
			m, _ := c.(map[string]any)
			if m["name"] != name {
				continue
			}
			out := component{}
			out.Binary, _ = m["binary"].(string)
			out.WorkDir, _ = m["workDir"].(string)
			args, _ := m["args"].([]any)
			for _, a := range args {
				if s, ok := a.(string); ok {
					out.Args = append(out.Args, s)
				}
			}
			if metric, ok := m["metric"].(map[string]any); ok && metric["host"] != nil {
				scheme, _ := metric["scheme"].(string)
				out.Metric = fmt.Sprintf("%s://%s%s", scheme, metric["host"], metric["path"])
			}
			return out, nil
		}
	}
	return component{}, fmt.Errorf("kwokctl has no component %q in %s", name, l.clusterDir())
}

// ComponentArgs are the arguments a control-plane component runs with now: the ones brakebench
// last gave it, or kwokctl's.
func (l *Lab) ComponentArgs(name string) ([]string, error) {
	if raw, err := os.ReadFile(filepath.Join(l.dir, "args", name)); err == nil {
		return strings.Fields(string(raw)), nil
	}
	c, err := l.component(name)
	return c.Args, err
}

// leaseHolders are kwokctl's components that hold a leader-election lease: they exit when the
// API server is away longer than their renew deadline (10 s), so an API server restart stops
// them first and starts them again after it.
var leaseHolders = []string{"kube-scheduler", "kube-controller-manager"}

// RestartComponent stops a kwokctl-managed component (kube-apiserver, kube-scheduler,
// kube-controller-manager) and starts it again with args, recording its pid where kwokctl
// keeps it so `lab down` still stops it; it returns once the component answers /healthz. A
// restart of the kube-apiserver takes the lease holders along (with the flags they run with),
// so a slow restart never leaves the lab without a scheduler.
func (l *Lab) RestartComponent(ctx context.Context, name string, args []string) error {
	if name != "kube-apiserver" {
		return l.restartOne(ctx, name, args)
	}
	held := map[string][]string{}
	for _, h := range leaseHolders {
		a, err := l.ComponentArgs(h)
		if err != nil {
			return err
		}
		held[h] = a
	}
	for _, h := range leaseHolders {
		if pid := readPID(filepath.Join(l.clusterDir(), "pids", h+".pid")); pid > 0 {
			if err := stopPID(pid, "", stopGrace(h)); err != nil {
				return fmt.Errorf("stop %s before the API server's restart: %w", h, err)
			}
		}
	}
	if err := l.restartOne(ctx, name, args); err != nil {
		return err
	}
	for _, h := range leaseHolders {
		if err := l.restartOne(ctx, h, held[h]); err != nil {
			return fmt.Errorf("start %s after the API server's restart: %w", h, err)
		}
	}
	return nil
}

// stopGrace is how long a restart lets a component exit on SIGTERM before it is killed. The
// kube-apiserver waits out its 60 s request timeout for the watches still open to it (measured
// on the lab: 62 s from SIGTERM to exit), and has nothing to flush (etcd holds its state; its
// own endpoint lease is removed in the first milliseconds of the shutdown), so it gets 2 s;
// every other component 15 s.
func stopGrace(name string) time.Duration {
	if name == "kube-apiserver" {
		return 2 * time.Second
	}
	return 15 * time.Second
}

// releaseLease deletes the leader-election Lease of a lease holder that has just been stopped,
// so the process started next takes it at once: kube-controller-manager does not release its
// Lease when it exits, and its successor waited the old holder's lease out (17.5 s measured on
// the lab after each restart, during which no namespace got its default ServiceAccount and the
// next cell's pool could not fill). Best effort: if the delete fails, the new process waits for
// the Lease to expire, as it did before.
func (l *Lab) releaseLease(ctx context.Context, name string) {
	s, err := l.Load()
	if err != nil {
		return
	}
	cfg, err := kube.RESTConfig(s.Kubeconfig, "")
	if err != nil {
		return
	}
	c, err := kube.NewClients(cfg)
	if err != nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = c.Typed.CoordinationV1().Leases("kube-system").Delete(cctx, name, metav1.DeleteOptions{})
}

// restartOne stops one component and starts it again with args.
func (l *Lab) restartOne(ctx context.Context, name string, args []string) error {
	c, err := l.component(name)
	if err != nil {
		return err
	}
	pidFile := filepath.Join(l.clusterDir(), "pids", name+".pid")
	if pid := readPID(pidFile); pid > 0 {
		if err := stopPID(pid, "", stopGrace(name)); err != nil {
			return err
		}
	}
	if slices.Contains(leaseHolders, name) {
		l.releaseLease(ctx, name)
	}
	p, _, err := startProc(name, c.Binary, args, nil, filepath.Join(l.clusterDir(), "logs", name+".log"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(p.PID)), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(l.dir, "args"), 0o755); err != nil {
		return err
	}
	var b []byte
	for _, a := range args {
		b = append(append(b, a...), '\n')
	}
	if err := os.WriteFile(filepath.Join(l.dir, "args", name), b, 0o644); err != nil {
		return err
	}
	health := c.Metric
	if health == "" {
		return nil
	}
	health = health[:len(health)-len("/metrics")] + "/healthz"
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback lab component, self-signed
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, health, nil)
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if !alive(p.PID, "") {
			return fmt.Errorf("%s exited after restart; see %s", name, filepath.Join(l.clusterDir(), "logs", name+".log"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not healthy 90 s after restart", name)
}
