package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func dep(gen, observed int64, updated, available, replicas int32) *appsv1.Deployment {
	one := int32(1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "ctrl", Namespace: "sys", Generation: gen},
		Spec:       appsv1.DeploymentSpec{Replicas: &one},
		Status:     appsv1.DeploymentStatus{ObservedGeneration: observed, UpdatedReplicas: updated, AvailableReplicas: available, Replicas: replicas},
	}
}

func TestWaitRollout(t *testing.T) {
	ctx := context.Background()
	// Already rolled out: returns at once.
	c := fake.NewClientset(dep(2, 2, 1, 1, 1))
	if err := WaitRollout(ctx, c, "sys", "ctrl", time.Second); err != nil {
		t.Fatal(err)
	}
	// A new pod replaces the old one: two replicas until the old one goes.
	c = fake.NewClientset(dep(3, 3, 1, 1, 2))
	done := make(chan error, 1)
	go func() { done <- WaitRollout(ctx, c, "sys", "ctrl", 5*time.Second) }()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("returned before the old replica was gone: %v", err)
	default:
	}
	if _, err := c.AppsV1().Deployments("sys").UpdateStatus(ctx, dep(3, 3, 1, 1, 1), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("rolled out, got %v", err)
	}
	// Never rolls out: a timeout that names the deployment.
	c = fake.NewClientset(dep(4, 3, 0, 1, 1))
	if err := WaitRollout(ctx, c, "sys", "ctrl", 200*time.Millisecond); err == nil || !strings.Contains(err.Error(), "sys/ctrl") {
		t.Fatalf("want a timeout naming sys/ctrl, got %v", err)
	}
	// Deleted during the rollout.
	c = fake.NewClientset(dep(4, 3, 0, 1, 1))
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = c.AppsV1().Deployments("sys").Delete(ctx, "ctrl", metav1.DeleteOptions{})
	}()
	if err := WaitRollout(ctx, c, "sys", "ctrl", 5*time.Second); err == nil || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("want a deletion error, got %v", err)
	}
}
