//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/brakebench/brakebench/internal/images"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/lab"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
	"github.com/brakebench/brakebench/suites"
)

// TestRealNodeRunsAPod: the test lab's real node runs a bridge-networked pod of the lab-built
// workload image (containerd, runc, CNI, kubelet), serves its logs through the apiserver, and no
// simulated workload is ever placed on it.
func TestRealNodeRunsAPod(t *testing.T) {
	if labState.RealNode == nil {
		t.Fatal("the test lab has no real node (lab.realNode)")
	}
	c := clients(t)
	ctx := context.Background()
	ns := "bb-e2e-realnode"
	if _, err := c.Typed.CoreV1().Namespaces().Create(ctx, nsObject(ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Typed.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "workload", Namespace: ns, Labels: map[string]string{kube.ManagedByKey: kube.ManagedByValue}},
		Spec: corev1.PodSpec{
			NodeSelector: lab.RealNodeSelector(), Tolerations: lab.RealNodeTolerations(),
			Containers: []corev1.Container{{Name: "w", Image: lab.WorkloadImage, ImagePullPolicy: corev1.PullNever, Args: []string{"--listen=:8080"},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1}}},
		},
	}
	if _, err := c.Typed.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := kube.UntilObject(wctx, pod.Name,
		func(ctx context.Context) (runtime.Object, error) {
			return c.Typed.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.Typed.CoreV1().Pods(ns).Watch(ctx, o)
		},
		func(obj runtime.Object, exists bool) (bool, error) {
			p, ok := obj.(*corev1.Pod)
			if !ok {
				return false, nil
			}
			got = p
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
		t.Fatalf("the workload pod never became Ready on the real node: %v (status %+v)", err, got.Status)
	}
	if got.Spec.NodeName != lab.RealNodeName || !strings.HasPrefix(got.Status.PodIP, "10.250.") || got.Status.ContainerStatuses[0].ContainerID == "" {
		t.Fatalf("pod on %s with IP %s, container %q", got.Spec.NodeName, got.Status.PodIP, got.Status.ContainerStatuses[0].ContainerID)
	}
	// Logs go apiserver -> kubelet (by InternalIP, as the lab admin): the path `ControllerLogs`
	// uses on real clusters. The workload logs nothing; the request must succeed.
	if _, err := c.Typed.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx); err != nil {
		t.Errorf("logs through the apiserver: %v", err)
	}
	// Simulated pods never land on the real node (it is tainted).
	pods, err := c.Typed.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + lab.RealNodeName})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Namespace != ns {
			t.Errorf("pod %s/%s was placed on the real node", p.Namespace, p.Name)
		}
	}
}

// TestColdStartOnTheRealNode: a cell whose claims cannot be served warm (pool 0) with its
// sandboxes on the real node measures a real runtime's cold start, step by step, and says so.
func TestColdStartOnTheRealNode(t *testing.T) {
	r, _, stdout := runSuiteOut(t, "warmpool-burst", "lab.realNode=true", "workload.placement=real-node", "workload.pool=0",
		"workload.claims=3", "matrix.brakes=none", "matrix.repetitions=1")
	if len(r.Cells) != 1 || r.Cells[0].Error != "" {
		t.Fatalf("cells: %+v", r.Cells)
	}
	c := r.Cells[0]
	if c.Stats.Cold != 3 || c.Stats.Failed != 0 {
		t.Fatalf("claims: cold %d failed %d warm %d", c.Stats.Cold, c.Stats.Failed, c.Stats.Warm)
	}
	ps := c.Stats.PodStart
	if ps == nil || ps.Node != lab.RealNodeName || ps.CreateToReady.N != 3 || !(ps.Run.P50 > 0) || !(ps.CreateToReady.P50 >= ps.Run.P50) {
		t.Fatalf("pod start on the real node: %+v", ps)
	}
	if !strings.Contains(stdout, "cold start on this lab's runtime") {
		t.Errorf("the terminal output does not label the cold start:\n%s", stdout)
	}
}

// TestInClusterRunner: the runner's RBAC is enough to fire and watch claims and no more, and the
// in-cluster runner (a Job on the real node) and the local runner measure the same cell alike.
func TestInClusterRunner(t *testing.T) {
	ctx := context.Background()
	c := clients(t)
	image := "brakebench.local/brakebench:e2e-runner"
	if _, err := runCLI(t, "lab", "import-image", "--ref", image, buildStaticCLI(t)); err != nil {
		t.Fatalf("lab import-image: %v", err)
	}
	// A dynamically linked binary cannot run in an empty-base image: refused (exit 2). The host's
	// own true(1) is one (`make test` builds brakebench with CGO_ENABLED=0, so its CLI is static).
	if dyn, err := exec.LookPath("true"); err != nil || images.CheckStatic(dyn) == nil {
		t.Errorf("no dynamically linked true(1) on this host to check the refusal with (%q, %v)", dyn, err)
	} else if _, err := runCLI(t, "lab", "import-image", "--ref", "x:1", dyn); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("a dynamic binary was not refused: %v", err)
	}

	t.Run("RBAC is enough and no more", func(t *testing.T) {
		ns := "bb-e2e-runner-rbac"
		if _, err := c.Typed.CoreV1().Namespaces().Create(ctx, nsObject(ns), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Typed.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
		if err := c.Apply(ctx, suites.RunnerRBAC(ns, nil), nil); err != nil {
			t.Fatal(err)
		}
		tok, err := c.Typed.CoreV1().ServiceAccounts(ns).CreateToken(ctx, suites.RunnerName, &authv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rc, err := kube.RESTConfig(labState.Kubeconfig, "")
		if err != nil {
			t.Fatal(err)
		}
		rc = rest.AnonymousClientConfig(rc)
		rc.BearerToken = tok.Status.Token
		as, err := kube.NewClients(rc)
		if err != nil {
			t.Fatal(err)
		}
		claim := func(ns string) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
				"metadata": map[string]any{"name": "probe", "namespace": ns}, "spec": map[string]any{"warmPoolRef": map[string]any{"name": "p"}}}}
		}
		dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
		if _, err := as.Dynamic.Resource(agentsandbox.ClaimGVR).Namespace(ns).Create(ctx, claim(ns), dry); err != nil {
			t.Errorf("create a claim in its namespace: %v", err)
		}
		if _, err := as.Dynamic.Resource(agentsandbox.ClaimGVR).Namespace(ns).List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("list claims in its namespace: %v", err)
		}
		for what, err := range map[string]error{
			"delete claims":             as.Dynamic.Resource(agentsandbox.ClaimGVR).Namespace(ns).Delete(ctx, "probe", metav1.DeleteOptions{}),
			"create a claim elsewhere":  errOf(as.Dynamic.Resource(agentsandbox.ClaimGVR).Namespace("default").Create(ctx, claim("default"), dry)),
			"list pods":                 errOf(as.Typed.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})),
			"read the warm pool":        errOf(as.Dynamic.Resource(agentsandbox.PoolGVR).Namespace(ns).List(ctx, metav1.ListOptions{})),
			"create a sandbox directly": errOf(as.Dynamic.Resource(agentsandbox.SandboxGVR).Namespace(ns).Create(ctx, claim(ns), dry)),
		} {
			if !apierrors.IsForbidden(err) {
				t.Errorf("%s: want Forbidden, got %v", what, err)
			}
		}
	})

	t.Run("in-cluster and local runners agree", func(t *testing.T) {
		common := []string{"lab.realNode=true", "loadgen.identity=serviceaccount", "workload.pool=10", "workload.claims=10",
			"matrix.brakes=none", "matrix.repetitions=2"}
		local, _, _ := runSuiteOut(t, "warmpool-burst", common...)
		remote, _, stdout := runSuiteOut(t, "warmpool-burst", append(common, "loadgen.runner=in-cluster", "loadgen.runnerImage="+image, "loadgen.runnerStartup=8s")...)
		if remote.Loadgen.Runner != "in-cluster" || !strings.Contains(stdout, "runner") {
			t.Errorf("runner recorded as %q", remote.Loadgen.Runner)
		}
		for _, r := range []*results.Results{local, remote} {
			for _, cell := range r.Cells {
				if cell.Error != "" || cell.Stats.Failed != 0 || len(cell.Claims) != 10 {
					t.Fatalf("%s runner, cell %s: error %q, %d failed of %d", r.Loadgen.Runner, cell.ID, cell.Error, cell.Stats.Failed, len(cell.Claims))
				}
			}
		}
		t.Logf("claim latency, same cell (none, 2 repetitions x 10 claims):")
		for _, key := range []string{"claim.p50_ms", "claim.p90_ms", "claim.p99_ms"} {
			l, lok := local.Find("none", key)
			r, rok := remote.Find("none", key)
			if !lok || !rok {
				t.Fatalf("%s missing (local %v, in-cluster %v)", key, lok, rok)
			}
			t.Logf("  %-14s local %7.1f ms   in-cluster %7.1f ms", key, float64(l.Value), float64(r.Value))
			// The same cell on the same lab: the two must be of one order. The runner's pod shares
			// this machine, so a wide band (3x) catches a broken measurement (a clock mix-up, a
			// missed Ready) without turning noise into failures.
			if key == "claim.p50_ms" && (float64(r.Value) > 3*float64(l.Value) || float64(l.Value) > 3*float64(r.Value)) {
				t.Errorf("%s: local %.1f ms vs in-cluster %.1f ms differ more than 3x", key, float64(l.Value), float64(r.Value))
			}
		}
	})
}

func errOf[T any](_ T, err error) error { return err }
