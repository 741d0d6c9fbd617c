package agentsandbox

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// controllerDeployment is an installed controller whose rollout is complete (fake clients never
// roll anything out, so the status already reports the desired state).
func controllerDeployment() *appsv1.Deployment {
	one := int32(1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-sandbox-controller", Namespace: "agent-sandbox-system"},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "agent-sandbox-controller", Image: ControllerImage("v0.5.5"), Args: []string{"--leader-elect=true", "--extensions"},
		}}}}},
		Status: appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1},
	}
}

func TestDeploymentConfigureAndRevert(t *testing.T) {
	ctx := context.Background()
	c := fake.NewSimpleClientset(controllerDeployment())
	d := &Deployment{Client: c, Namespace: "agent-sandbox-system", Name: "agent-sandbox-controller"}
	current := func() (string, []string) {
		v, a, err := d.Current(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v, a
	}
	revert, err := d.Configure(ctx, "v0.5.6", []string{"--sandbox-warm-pool-max-refill-rate=10"})
	if err != nil {
		t.Fatal(err)
	}
	if v, a := current(); v != "v0.5.6" || !reflect.DeepEqual(a, []string{"--leader-elect=true", "--extensions", "--sandbox-warm-pool-max-refill-rate=10"}) {
		t.Errorf("configured: %s %v", v, a)
	}
	if err := revert(ctx); err != nil {
		t.Fatal(err)
	}
	if v, a := current(); v != "v0.5.5" || !reflect.DeepEqual(a, []string{"--leader-elect=true", "--extensions"}) {
		t.Errorf("reverted: %s %v", v, a)
	}
	// Restore (what cleanup replays from the journal) sets exactly the recorded flags.
	if err := d.Restore(ctx, "v0.5.5", []string{"--leader-elect=true"}); err != nil {
		t.Fatal(err)
	}
	if _, a := current(); !reflect.DeepEqual(a, []string{"--leader-elect=true"}) {
		t.Errorf("restored: %v", a)
	}
}

// Cells run one after another without a revert between them (the run restores the original once,
// at the end): each cell's flags and version are added to the original Deployment, never to the
// previous cell's. Found on the lab's real node: a "none" cell after a replenish-delay cell ran
// with the delay still set.
func TestConfigureCellsInSequenceStartFromTheOriginal(t *testing.T) {
	ctx := context.Background()
	c := fake.NewSimpleClientset(controllerDeployment())
	d := &Deployment{Client: c, Namespace: "agent-sandbox-system", Name: "agent-sandbox-controller"}
	orig := []string{"--leader-elect=true", "--extensions"}
	for i, step := range []struct {
		version   string
		extra     []string
		wantImage string
		wantArgs  []string
	}{
		{"", []string{"--sandbox-warm-pool-replenish-delay=15s"}, "v0.5.5", append(append([]string{}, orig...), "--sandbox-warm-pool-replenish-delay=15s")},
		{"", nil, "v0.5.5", orig},
		{"v0.5.3", []string{"--sandbox-warm-pool-max-refill-rate=10"}, "v0.5.3", append(append([]string{}, orig...), "--sandbox-warm-pool-max-refill-rate=10")},
		{"", nil, "v0.5.5", orig},
	} {
		if _, err := d.Configure(ctx, step.version, step.extra); err != nil {
			t.Fatal(err)
		}
		v, a, err := d.Current(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v != step.wantImage || !reflect.DeepEqual(a, step.wantArgs) {
			t.Errorf("cell %d (version %q, flags %v): running %s %v, want %s %v", i, step.version, step.extra, v, a, step.wantImage, step.wantArgs)
		}
	}
}

// Configure fails at each step in turn; it must still return a revert that runs without panicking
// and puts back what was changed.
func TestConfigureFailsAtEachStepAndReverts(t *testing.T) {
	orig := []string{"--leader-elect=true", "--extensions"}
	cases := []struct {
		name    string
		setup   func(c *fake.Clientset)
		missing bool
	}{
		{"deployment missing", func(c *fake.Clientset) {
			_ = c.AppsV1().Deployments("agent-sandbox-system").Delete(context.Background(), "agent-sandbox-controller", metav1.DeleteOptions{})
		}, true},
		{"patch refused", func(c *fake.Clientset) {
			c.PrependReactor("patch", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, errors.New("admission webhook denied the patch")
			})
		}, false},
		{"rollout never completes", func(c *fake.Clientset) {
			d := controllerDeployment()
			d.Status.Replicas = 2 // an old pod never goes away
			_, _ = c.AppsV1().Deployments(d.Namespace).UpdateStatus(context.Background(), d, metav1.UpdateOptions{})
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewSimpleClientset(controllerDeployment())
			tc.setup(c)
			d := &Deployment{Client: c, Namespace: "agent-sandbox-system", Name: "agent-sandbox-controller"}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			revert, err := d.Configure(ctx, "v0.5.6", []string{"--sandbox-warm-pool-max-refill-rate=10"})
			if err == nil {
				t.Fatal("Configure should fail")
			}
			if revert == nil {
				t.Fatal("a failed Configure returned a nil revert")
			}
			rctx, rcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer rcancel()
			_ = revert(rctx) // may fail again (the same refusal); must not panic
			if tc.missing {
				return
			}
			c.ReactionChain = c.ReactionChain[len(c.ReactionChain)-len(fake.NewSimpleClientset().ReactionChain):]
			if v, a, err := d.Current(context.Background()); err != nil || v != "v0.5.5" || !reflect.DeepEqual(a, orig) {
				t.Errorf("after the revert: %s %v %v, want v0.5.5 %v", v, a, err, orig)
			}
		})
	}
}

// Logs reads the log of every live pod the Deployment selects, and of no other pod.
func TestDeploymentLogs(t *testing.T) {
	dep := controllerDeployment()
	dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent-sandbox-controller"}}
	pod := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "agent-sandbox-system", Labels: labels}}
	}
	c := fake.NewSimpleClientset(dep, pod("ctrl-1", map[string]string{"app": "agent-sandbox-controller"}), pod("other", map[string]string{"app": "x"}))
	d := &Deployment{Client: c, Namespace: "agent-sandbox-system", Name: "agent-sandbox-controller"}
	rc, err := d.Logs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(rc)
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	// The fake clientset answers every log request with "fake logs".
	if got := strings.Count(string(raw), "fake logs"); got != 1 {
		t.Fatalf("read %q: want the log of exactly the one selected pod", raw)
	}
}

// Configure returns only once the new controller pod leads: a Lease held before the rollout must
// change hands (the old pod, gone, kept it until it expired).
func TestConfigureWaitsForTheLeaseHandover(t *testing.T) {
	ctx := context.Background()
	old := "host_old-uuid"
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "a3317529.agent-sandbox.x-k8s.io", Namespace: "agent-sandbox-system"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &old}}
	c := fake.NewSimpleClientset(controllerDeployment(), lease)
	d := &Deployment{Client: c, Namespace: "agent-sandbox-system", Name: "agent-sandbox-controller"}
	done := make(chan error, 1)
	go func() {
		_, err := d.Configure(ctx, "", []string{"--sandbox-warm-pool-replenish-delay=5s"})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Configure returned (%v) while the old pod still held the lease", err)
	case <-time.After(300 * time.Millisecond):
	}
	nw := "host_new-uuid"
	lease.Spec.HolderIdentity = &nw
	if _, err := c.CoordinationV1().Leases("agent-sandbox-system").Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Configure did not return after the lease changed hands")
	}
}

// Setting what already runs changes nothing and waits for nothing: a held lease never changes
// hands without a rollout (the upgrade preset's last cell runs the original image, and the run's
// final revert then found the Deployment as it was and waited 2 minutes for a handover).
func TestApplyingTheRunningSettingIsANoOp(t *testing.T) {
	ctx := context.Background()
	holder := "host_uuid"
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "agent-sandbox-system"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
	c := fake.NewSimpleClientset(controllerDeployment(), lease)
	d := &Deployment{Client: c, Namespace: "agent-sandbox-system", Name: "agent-sandbox-controller"}
	start := time.Now()
	revert, err := d.Configure(ctx, "v0.5.5", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := revert(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Restore(ctx, "v0.5.5", []string{"--leader-elect=true", "--extensions"}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("unchanged settings took %s (waited for a handover that cannot come)", took)
	}
	for _, a := range c.Actions() {
		if a.GetVerb() == "patch" {
			t.Errorf("unchanged settings were patched: %v", a)
		}
	}
}

// Switching the image to a version that lacks an installed arg drops the arg for that version
// (v1.0.1 exits at start on v0.5.5's --enable-webhook) and says so; switching back restores it,
// and a cell flag the target lacks is refused before the Deployment changes.
func TestConfigureDropsArgsTheTargetVersionLacks(t *testing.T) {
	ctx := context.Background()
	dep := controllerDeployment()
	dep.Spec.Template.Spec.Containers[0].Args = []string{"--leader-elect=true", "--extensions", "--enable-webhook=false"}
	c := fake.NewSimpleClientset(dep)
	flags := map[string]Flags{"v0.5.5": parseFlags(mainV055 + `flag.BoolVar(&a, "leader-elect", true, "")
	flag.BoolVar(&b, "extensions", false, "")`), "v1.0.1": parseFlags(mainV101 + `flag.BoolVar(&a, "leader-elect", true, "")
	flag.BoolVar(&b, "extensions", false, "")`)}
	d := &Deployment{Client: c, Namespace: "agent-sandbox-system", Name: "agent-sandbox-controller",
		Flags: func(_ context.Context, v string) (Flags, error) { return flags[v], nil }}
	args := func() []string {
		_, a, err := d.Current(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	tests := []struct {
		version  string
		extra    []string
		wantArgs []string
		wantNote string
		wantErr  string
	}{
		{"v1.0.1", []string{"--kube-api-qps=5"}, []string{"--leader-elect=true", "--extensions", "--kube-api-qps=5"}, "dropped --enable-webhook=false", ""},
		{"v0.5.5", nil, []string{"--leader-elect=true", "--extensions", "--enable-webhook=false"}, "", ""},
		{"v1.0.1", []string{"--webhook-port=9443"}, []string{"--leader-elect=true", "--extensions", "--enable-webhook=false"}, "", "v1.0.1 does not define --webhook-port=9443"},
	}
	for i, tc := range tests {
		_, err := d.Configure(ctx, tc.version, tc.extra)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("step %d: err %v, want %q", i, err, tc.wantErr)
			}
		} else if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := args(); !reflect.DeepEqual(got, tc.wantArgs) {
			t.Errorf("step %d: args %v, want %v", i, got, tc.wantArgs)
		}
		notes := strings.Join(d.TakeNotes(), "\n")
		if (tc.wantNote == "") != (notes == "") || !strings.Contains(notes, tc.wantNote) {
			t.Errorf("step %d: notes %q, want %q", i, notes, tc.wantNote)
		}
	}
}
