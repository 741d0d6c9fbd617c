package lab

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
	"github.com/brakebench/brakebench/internal/sut/keda"
)

// KEDA is the running KEDA operator and metrics adapter.
type KEDA struct {
	Operator     proc   `json:"operator"`
	Adapter      proc   `json:"adapter"`
	AdapterPort  int    `json:"adapterPort"` // external.metrics.k8s.io, behind the APIService
	OperatorGRPC string `json:"operatorGRPC"`
	// Registered is true once the Service and APIService exist (StopKEDA deletes them).
	Registered bool `json:"registered"`
}

// StartKEDA builds (cached) and starts KEDA's operator and metrics adapter as local processes with
// leader election and certificate rotation off, every listener it can choose on 127.0.0.1, and
// mutual TLS between them from a lab CA; the adapter serves external.metrics.k8s.io through the
// aggregation layer (an ExternalName Service "localhost" behind the APIService). It returns once
// the APIService is Available. Safe to call when KEDA already runs.
func (l *Lab) StartKEDA(ctx context.Context, s *State) (*KEDA, error) {
	if k := s.KEDA; k != nil && alive(k.Operator.PID, k.Operator.Binary) && alive(k.Adapter.PID, k.Adapter.Binary) {
		return k, nil
	}
	if s.KEDA != nil {
		if err := l.StopKEDA(ctx, s); err != nil {
			return nil, err
		}
	}
	bins, err := l.BuildAddons(ctx, []string{"keda"})
	if err != nil {
		return nil, err
	}
	mod, err := l.builder.ModuleDir(ctx, "github.com/kedacore/keda/v2", l.versions.KEDA)
	if err != nil {
		return nil, err
	}
	c, err := s.clients()
	if err != nil {
		return nil, err
	}
	k := &KEDA{}
	s.KEDA = k
	if err := l.save(s); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = l.StopKEDA(context.WithoutCancel(ctx), s)
		}
	}()
	dir := filepath.Join(l.dir, "keda")
	certDir := filepath.Join(dir, "certs")
	caPEM, err := writeServingCerts(certDir, keda.MetricsServiceDNS, keda.MetricsServiceDNS+".cluster.local", keda.OperatorDNS, keda.OperatorDNS+".cluster.local")
	if err != nil {
		return nil, err
	}
	labels := map[string]string{kube.ManagedByKey: kube.ManagedByValue}
	crds, err := keda.CRDs(mod)
	if err != nil {
		return nil, err
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": keda.Namespace}}}
	if err := c.Apply(ctx, append([]*unstructured.Unstructured{ns}, crds...), labels); err != nil {
		return nil, fmt.Errorf("KEDA CRDs: %w", err)
	}
	names := make([]string, 0, len(crds))
	for _, crd := range crds {
		names = append(names, crd.GetName())
	}
	if err := agentsandbox.WaitCRDsEstablished(ctx, c, names, time.Minute); err != nil {
		return nil, fmt.Errorf("KEDA CRDs not established: %w", err)
	}
	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	env := []string{"WATCH_NAMESPACE=", "POD_NAMESPACE=" + keda.Namespace, "KEDA_CLUSTER_OBJECT_NAMESPACE=" + keda.Namespace, "KUBECONFIG=" + s.Kubeconfig}
	k.OperatorGRPC = fmt.Sprintf("127.0.0.1:%d", ports[0])
	p, _, err := startProc("keda-operator", bins["keda"].Path("keda-operator"), []string{
		"--kubeconfig=" + s.Kubeconfig,
		"--leader-elect=false",
		"--enable-cert-rotation=false",
		"--cert-dir=" + certDir,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[1]),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[2]),
		"--metrics-service-bind-address=" + k.OperatorGRPC,
		"--zap-log-level=info", "--zap-encoder=console",
	}, env, filepath.Join(l.dir, "logs", "keda-operator.log"))
	if err != nil {
		return nil, err
	}
	k.Operator = *p
	if err := l.save(s); err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[2]), 120*time.Second, func() bool { return alive(p.PID, p.Binary) }); err != nil {
		return nil, fmt.Errorf("KEDA operator did not become ready (log %s): %w\n%s", p.Log, err, tailFile(p.Log, 2000))
	}
	k.AdapterPort = ports[3]
	p, _, err = startProc("keda-adapter", bins["keda"].Path("keda-adapter"), []string{
		"--kubeconfig=" + s.Kubeconfig,
		"--lister-kubeconfig=" + s.Kubeconfig,
		"--authentication-kubeconfig=" + s.Kubeconfig,
		"--authorization-kubeconfig=" + s.Kubeconfig,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", k.AdapterPort),
		"--cert-dir=" + certDir,
		"--tls-cert-file=" + filepath.Join(certDir, "tls.crt"),
		"--tls-private-key-file=" + filepath.Join(certDir, "tls.key"),
		"--metrics-service-address=" + k.OperatorGRPC,
		// The adapter's own Prometheus endpoint has no host flag upstream: it listens on all
		// interfaces on this port (it serves only metrics).
		fmt.Sprintf("--port=%d", ports[4]),
		"--zap-log-level=info", "--zap-encoder=console",
	}, env, filepath.Join(l.dir, "logs", "keda-adapter.log"))
	if err != nil {
		return nil, err
	}
	k.Adapter = *p
	k.Registered = true // recorded before the objects exist: StopKEDA deletes whatever is there
	if err := l.save(s); err != nil {
		return nil, err
	}
	if err := c.Apply(ctx, keda.AggregationObjects(k.AdapterPort, caPEM), labels); err != nil {
		return nil, fmt.Errorf("KEDA APIService: %w", err)
	}
	if err := waitAPIServiceAvailable(ctx, c, 2*time.Minute, func() bool { return alive(p.PID, p.Binary) }); err != nil {
		return nil, fmt.Errorf("%w (adapter log %s)\n%s", err, p.Log, tailFile(p.Log, 2000))
	}
	ok = true
	return k, l.save(s)
}

func waitAPIServiceAvailable(ctx context.Context, c *kube.Clients, timeout time.Duration, stillAlive func() bool) error {
	last := ""
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if !stillAlive() {
			return false, errors.New("the KEDA metrics adapter exited")
		}
		u, err := c.Dynamic.Resource(keda.APIServiceGVR).Get(ctx, keda.APIServiceName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, cd := range conds {
			m, _ := cd.(map[string]any)
			if m["type"] == "Available" {
				last = fmt.Sprintf("%v: %v", m["reason"], m["message"])
				if m["status"] == "True" {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("APIService %s not Available after %s (last: %s): %w", keda.APIServiceName, timeout, last, err)
	}
	return nil
}

// StopKEDA deletes the APIService and its Service first (an APIService without a server breaks
// discovery for every client), then stops both processes. Safe to call when nothing runs.
func (l *Lab) StopKEDA(ctx context.Context, s *State) error {
	k := s.KEDA
	if k == nil {
		return nil
	}
	var errs []error
	if k.Registered {
		c, err := s.clients()
		if err != nil {
			errs = append(errs, err)
		} else {
			for _, o := range []struct {
				gvr      schema.GroupVersionResource
				ns, name string
			}{
				{keda.APIServiceGVR, "", keda.APIServiceName},
				{schema.GroupVersionResource{Version: "v1", Resource: "services"}, keda.Namespace, keda.MetricsService},
			} {
				if err := c.Dynamic.Resource(o.gvr).Namespace(o.ns).Delete(ctx, o.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					errs = append(errs, fmt.Errorf("delete %s %s: %w", o.gvr.Resource, o.name, err))
				}
			}
		}
	}
	for _, p := range []proc{k.Adapter, k.Operator} {
		if err := stopPID(p.PID, p.Binary, 15*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	s.KEDA = nil
	return l.save(s)
}

// HPASyncPeriod is kube-controller-manager's current --horizontal-pod-autoscaler-sync-period.
func (l *Lab) HPASyncPeriod() (time.Duration, error) {
	args, err := l.ComponentArgs("kube-controller-manager")
	if err != nil {
		return 0, err
	}
	for _, a := range args {
		if v, ok := cutFlag(a, "horizontal-pod-autoscaler-sync-period"); ok {
			return time.ParseDuration(v)
		}
	}
	return 15 * time.Second, nil // upstream default
}

func cutFlag(arg, name string) (string, bool) {
	for _, p := range []string{"--" + name + "=", "-" + name + "="} {
		if len(arg) > len(p) && arg[:len(p)] == p {
			return arg[len(p):], true
		}
	}
	return "", false
}
