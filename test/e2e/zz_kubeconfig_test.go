//go:build e2e

package e2e

// TestKubeconfigPathOnTheRealNode sits in a zz_ file so that it runs after every other test but
// the Karpenter ones: its pool-autoscaling subtest starts KEDA, which TestMain builds in the
// background, and a test that needs a component still building blocks every test after it. In
// realnode_test.go it ran 5th of ~30; from empty caches on a slow-compiling day (2026-12-05) it
// waited 21 minutes there for KEDA's build lock, with the tests after it not running.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/brakebench/brakebench/internal/cli"
	"github.com/brakebench/brakebench/internal/demand"
	"github.com/brakebench/brakebench/internal/images"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/lab"
)

// TestKubeconfigPathOnTheRealNode runs the path EKS/GKE/kind users take, for real: the upstream
// agent-sandbox controller Deployment (lab-built images of v0.5.5 and v0.5.3, pod on the real node)
// driven by `--cluster kubeconfig`: brake cells patch its args and a real pod is replaced, the
// original comes back at the end and after a SIGKILL plus cleanup, and --preset upgrade switches
// its image between the two versions and back.
func TestKubeconfigPathOnTheRealNode(t *testing.T) {
	ctx := context.Background()
	s, err := theLab.DeployController(ctx, []string{"v0.5.3", "v1.0.1"})
	if s != nil {
		labState = s
	}
	if err != nil {
		t.Fatalf("deploy the controller on the real node: %v", err)
	}
	t.Cleanup(func() {
		s, err := theLab.UndeployController(context.Background())
		if s != nil {
			labState = s
		}
		if err != nil {
			t.Errorf("back to the controller process: %v", err)
		}
	})
	c := clients(t)
	d := labState.ControllerDeployment
	getDep := func() *appsv1.Deployment {
		dep, err := c.Typed.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return dep
	}
	controllerPod := func() corev1.Pod {
		pods, err := c.Typed.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=agent-sandbox-controller"})
		if err != nil || len(pods.Items) != 1 {
			t.Fatalf("controller pods: %v %d", err, len(pods.Items))
		}
		return pods.Items[0]
	}
	orig := getDep().Spec.Template.Spec.Containers[0]
	first := controllerPod()
	if first.Spec.NodeName != lab.RealNodeName || first.Status.Phase != corev1.PodRunning {
		t.Fatalf("controller pod %s on %q, phase %s", first.Name, first.Spec.NodeName, first.Status.Phase)
	}
	sameAsOrig := func(what string) {
		t.Helper()
		now := getDep().Spec.Template.Spec.Containers[0]
		if now.Image != orig.Image || !reflect.DeepEqual(now.Args, orig.Args) {
			t.Errorf("%s: the Deployment runs %s %v, want the original %s %v", what, now.Image, now.Args, orig.Image, orig.Args)
		}
	}
	kc := []string{"--cluster", "kubeconfig", "--kubeconfig", labState.Kubeconfig, "--context", labState.Context()}
	allow := "cluster.allowContext=" + labState.Context()

	t.Run("brake cells patch the Deployment", func(t *testing.T) {
		out := t.TempDir()
		args := append([]string{"run", "warmpool-burst", "--out", out}, kc...)
		for _, s := range []string{allow, "matrix.brakes=none,replenish-delay", "matrix.repetitions=1", "workload.pool=4", "workload.claims=4", "brakes.replenishDelay=5s"} {
			args = append(args, "--set", s)
		}
		if _, err := runCLI(t, args...); err != nil {
			t.Fatalf("run on the kubeconfig path: %v", err)
		}
		r, _ := readRun(t, out, "warmpool-burst")
		if r.Cluster.Provider != "kubeconfig" {
			t.Errorf("provider %q", r.Cluster.Provider)
		}
		for _, cell := range r.Cells {
			if cell.Error != "" {
				t.Fatalf("cell %s: %s", cell.Name, cell.Error)
			}
			hasDelay := slices.Contains(cell.Controller.Flags, "--sandbox-warm-pool-replenish-delay=5s")
			if hasDelay != (cell.Name == "replenish-delay") {
				t.Errorf("cell %s ran with flags %v", cell.Name, cell.Controller.Flags)
			}
			if len(cell.Claims) != 4 {
				t.Errorf("cell %s: %d claims", cell.Name, len(cell.Claims))
			}
		}
		// The controller's create passes come from its pod's log, read through the apiserver.
		if _, ok := r.Find("replenish-delay", "controller.create_passes"); !ok {
			t.Error("no controller.create_passes: the controller pod's log was not read")
		}
		sameAsOrig("after the run")
		if now := controllerPod(); now.UID == first.UID {
			t.Error("the controller pod was never replaced: the brake cell's rollout did not happen")
		}
	})

	// The Deployment keeps its args when its image changes: v0.5.5's --enable-webhook=false
	// made v1.0.1 exit at start. Each direction of the upgrade runs every cell; going to v1.0.1
	// drops the arg for its cells and says so, going back restores it, and the run ends with
	// the original Deployment.
	t.Run("upgrade to v1.0.1 and back on the Deployment", func(t *testing.T) {
		for _, dir := range [][2]string{{"v0.5.5", "v1.0.1"}, {"v1.0.1", "v0.5.5"}} {
			out := t.TempDir()
			args := append([]string{"run", "warmpool-burst", "--preset", "upgrade", "--from", dir[0], "--to", dir[1], "--out", out}, kc...)
			for _, s := range []string{allow, "matrix.brakes=none", "matrix.repetitions=1", "workload.pool=4", "workload.claims=4"} {
				args = append(args, "--set", s)
			}
			_, err := runCLI(t, args...)
			var exit *cli.ExitError
			if err != nil && !(errors.As(err, &exit) && exit.Code == cli.ExitGateFailed) {
				t.Fatalf("upgrade %s -> %s on the Deployment: %v", dir[0], dir[1], err)
			}
			r, _ := readRun(t, out, "warmpool-burst")
			for _, cell := range r.Cells {
				if cell.Error != "" {
					t.Errorf("%s: %s", cell.Name, cell.Error)
				}
				v := strings.SplitN(cell.Name, "@", 2)[1]
				if cell.Controller.Version != v {
					t.Errorf("%s ran %s", cell.Name, cell.Controller.Version)
				}
				if webhook := slices.Contains(cell.Controller.Flags, "--enable-webhook=false"); webhook != (v == "v0.5.5") {
					t.Errorf("%s ran with args %v", cell.Name, cell.Controller.Flags)
				}
			}
			if !strings.Contains(strings.Join(r.Notes, "\n"), "dropped --enable-webhook=false") {
				t.Errorf("notes %q do not say the arg was dropped for v1.0.1", r.Notes)
			}
			sameAsOrig("after the upgrade " + dir[0] + " -> " + dir[1])
		}
	})

	t.Run("SIGKILL then cleanup restores the Deployment", func(t *testing.T) {
		patched := func() bool {
			for _, a := range getDep().Spec.Template.Spec.Containers[0].Args {
				if strings.HasPrefix(a, "--sandbox-warm-pool-replenish-delay") {
					return true
				}
			}
			return false
		}
		left := func(t *testing.T) []string {
			if patched() {
				return []string{"controller Deployment args " + strings.Join(getDep().Spec.Template.Spec.Containers[0].Args, " ")}
			}
			return nil
		}
		args := append(append([]string{"warmpool-burst"}, kc...), "--set", allow, "--set", "matrix.brakes=replenish-delay",
			"--set", "matrix.repetitions=3", "--set", "workload.pool=4", "--set", "workload.claims=4")
		killRunWhenThenCleanup(t, args, patched, 3*time.Minute, left, append(append([]string{"cleanup", "--all"}, kc...), "--set", allow), "controller")
		sameAsOrig("after SIGKILL and cleanup")
	})

	t.Run("pool-autoscaling reads demand from the exporter Deployment", func(t *testing.T) {
		// KEDA "installed" (the lab's processes, APIService registered), the exporter as the
		// Deployment `brakebench exporter --print-manifests` prints, on the real node, running a
		// static brakebench built from this tree.
		began := time.Now()
		step := func(what string) {
			t.Logf("%s: %s since the subtest began", what, time.Since(began).Round(100*time.Millisecond))
		}
		st, err := theLab.Load() // the saved state: runs change it (a stale copy would be saved back)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := theLab.StartKEDA(ctx, st); err != nil {
			t.Fatalf("KEDA: %v", err)
		}
		step("KEDA started")
		t.Cleanup(func() {
			if st, err := theLab.Load(); err == nil {
				_ = theLab.StopKEDA(context.Background(), st)
			}
		})
		image := "brakebench.local/brakebench:e2e"
		static := buildStaticCLI(t)
		step("static brakebench built")
		if err := labState.RealNode.ImportImage(ctx, images.Spec{Ref: image, Files: map[string]string{"/brakebench": static}}); err != nil {
			t.Fatal(err)
		}
		step("image imported")
		port := freePort(t)
		installNS := "bb-e2e-exporter"
		if _, err := c.Typed.CoreV1().Namespaces().Create(ctx, nsObject(installNS), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = c.Typed.RbacV1().ClusterRoleBindings().Delete(context.Background(), "brakebench-demand", metav1.DeleteOptions{})
			_ = c.Typed.RbacV1().ClusterRoles().Delete(context.Background(), "brakebench-demand", metav1.DeleteOptions{})
			_ = c.Typed.CoreV1().Namespaces().Delete(context.Background(), installNS, metav1.DeleteOptions{})
		})
		objs := demand.Manifests(installNS, "", kube.ManagedByKey+"="+kube.ManagedByValue, image, port)
		for _, o := range objs {
			if o.GetKind() != "Deployment" {
				continue
			}
			spec, _, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
			if err := lab.OnRealNodeHostNetwork(spec, labState.Server); err != nil {
				t.Fatal(err)
			}
			_ = unstructured.SetNestedMap(o.Object, spec, "spec", "template", "spec")
		}
		if err := c.Apply(ctx, objs, nil); err != nil {
			t.Fatal(err)
		}
		if err := kube.WaitRollout(ctx, c.Typed, installNS, "brakebench-demand", 2*time.Minute); err != nil {
			t.Fatalf("exporter Deployment: %v", err)
		}
		step("exporter Deployment rolled out")
		out := t.TempDir()
		args := append([]string{"run", "pool-autoscaling", "--out", out}, kc...)
		for _, s := range []string{allow, fmt.Sprintf("poolAutoscaling.exporterURL=http://127.0.0.1:%d%s", port, demand.Path),
			"poolAutoscaling.arms=keda", "poolAutoscaling.profiles=3-0", "poolAutoscaling.stepDuration=30s"} {
			args = append(args, "--set", s)
		}
		if _, err := runCLI(t, args...); err != nil {
			t.Fatalf("pool-autoscaling on the kubeconfig path: %v", err)
		}
		r, _ := readRun(t, out, "pool-autoscaling")
		if len(r.Cells) != 1 || r.Cells[0].Error != "" || r.Cells[0].Autoscale == nil {
			t.Fatalf("cells: %+v", r.Cells)
		}
		// The pool (min 1) grows only if KEDA read the claims from the exporter Deployment.
		if a := r.Cells[0].Autoscale; a.MaxSpec < 2 {
			t.Errorf("KEDA never scaled the pool from the exporter Deployment's demand: spec %d..%d, steps %+v", a.MinSpec, a.MaxSpec, a.Steps)
		}
	})

	t.Run("upgrade preset switches the image", func(t *testing.T) {
		out := t.TempDir()
		args := append([]string{"run", "warmpool-burst", "--preset", "upgrade", "--from", "v0.5.3", "--to", "v0.5.5", "--out", out}, kc...)
		for _, s := range []string{allow, "matrix.brakes=none", "matrix.repetitions=1", "workload.pool=4", "workload.claims=4"} {
			args = append(args, "--set", s)
		}
		// v0.5.3 may over-fill even a pool of 4: its invariant violation then fails the run's
		// built-in gate (exit 3), which is what the gate is for; anything else is a failure.
		if _, err := runCLI(t, args...); err != nil {
			var exit *cli.ExitError
			if !errors.As(err, &exit) || exit.Code != cli.ExitGateFailed || !strings.Contains(err.Error(), "gate") {
				t.Fatalf("upgrade preset on the kubeconfig path: %v", err)
			}
		}
		r, _ := readRun(t, out, "warmpool-burst")
		for _, g := range r.Gates {
			if !g.Passed && !strings.Contains(g.Message, "@v0.5.3") {
				t.Errorf("gate failed on the version upgraded to: %s: %s", g.Name, g.Message)
			}
		}
		seen := map[string]bool{}
		for _, cell := range r.Cells {
			if cell.Error != "" {
				t.Fatalf("cell %s: %s", cell.Name, cell.Error)
			}
			seen[cell.Controller.Version] = true
			if want := strings.SplitN(cell.Name, "@", 2)[1]; cell.Controller.Version != want {
				t.Errorf("cell %s ran image tag %s", cell.Name, cell.Controller.Version)
			}
		}
		if !seen["v0.5.3"] || !seen["v0.5.5"] {
			t.Errorf("versions run: %v", seen)
		}
		sameAsOrig("after the upgrade preset")
	})
}
