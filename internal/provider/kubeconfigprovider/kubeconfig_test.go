package kubeconfigprovider

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/brakebench/brakebench/internal/sut/kueuelws"
)

// A cluster brakebench did not create is never changed unless the user named its context in
// cluster.allowContext.
func TestControllerChangesNeedAllowContext(t *testing.T) {
	for _, tc := range []struct {
		allow   string
		refused bool
	}{{"", true}, {"staging", true}, {"prod", false}} {
		p := &Provider{Context: "prod", AllowContext: tc.allow, Namespace: "agent-sandbox-system", Deployment: "agent-sandbox-controller", Name_: "kubeconfig"}
		c, err := NewCluster(p, &rest.Config{Host: "https://127.0.0.1:1"}, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctrl := c.Controller()
		crev, cerr := ctrl.Configure(context.Background(), "", []string{"--x=1"})
		srev, serr := ctrl.Stop(context.Background())
		// A failed Configure or Stop still returns a revert the revert stack can call (it used
		// to return nil, and the stack's call panicked at the end of the run).
		for _, rev := range []func(context.Context) error{crev, srev} {
			if rev == nil {
				t.Fatalf("allowContext %q: a nil revert", tc.allow)
			}
			_ = rev(context.Background())
		}
		rerr := ctrl.Restore(context.Background(), "", nil)
		for _, err := range []error{cerr, serr, rerr} {
			refused := err != nil && strings.Contains(err.Error(), "needs --set cluster.allowContext=prod")
			if refused != tc.refused {
				t.Errorf("allowContext %q: %v (refused=%v, want %v)", tc.allow, err, refused, tc.refused)
			}
		}
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("closing a cluster brakebench did not create must do nothing: %v", err)
		}
	}
}

// The installed Kueue's gates are merged into its manager's args per arm and the journaled
// original comes back on restore, only with cluster.allowContext.
func TestKueueGatesPatchAndRestore(t *testing.T) {
	one := int32(1)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "kueue-controller-manager", Namespace: "kueue-system"},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "manager", Image: "registry.k8s.io/kueue/kueue:v0.19.1", Args: []string{"--config=/cfg", "--feature-gates=A=true"}},
		}}}},
		Status: appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1},
	}
	cs := fake.NewSimpleClientset(dep)
	ctx := context.Background()
	args := func() []string {
		d, _ := cs.AppsV1().Deployments("kueue-system").Get(ctx, "kueue-controller-manager", metav1.GetOptions{})
		return d.Spec.Template.Spec.Containers[0].Args
	}
	for _, allow := range []string{"", "prod"} {
		c := &Cluster{p: &Provider{Context: "prod", AllowContext: allow, Name_: "kubeconfig"}, rc: &rest.Config{},
			kueue: &kueuelws.Deployment{Client: cs, Namespace: "kueue-system", Name: "kueue-controller-manager"}}
		var journaled []byte
		k, restore, err := c.Kueue(ctx, func(b []byte) error { journaled = b; return nil })
		if err != nil {
			t.Fatal(err)
		}
		if k.Version() != "v0.19.1" || !strings.Contains(string(journaled), "--feature-gates=A=true") {
			t.Errorf("version %q journal %s", k.Version(), journaled)
		}
		err = k.SetGates(ctx, []string{"LWSImmutableGroupSize=false"})
		if allow == "" {
			if err == nil || !strings.Contains(err.Error(), "cluster.allowContext") {
				t.Errorf("patching without allowContext: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(args(), " "); got != "--config=/cfg --feature-gates=A=true,LWSImmutableGroupSize=false" {
			t.Errorf("patched args %q", got)
		}
		if err := restore(ctx); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(args(), " "); got != "--config=/cfg --feature-gates=A=true" {
			t.Errorf("restored args %q", got)
		}
	}
}
