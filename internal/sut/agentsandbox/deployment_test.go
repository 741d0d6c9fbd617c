package agentsandbox

import (
	"context"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
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
