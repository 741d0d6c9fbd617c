package kube

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// RolledOut reports whether a Deployment's controller has seen its latest spec and every replica
// runs it and is available (and no old one is left).
func RolledOut(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	return st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == want && st.AvailableReplicas == want && st.Replicas == want
}

// WaitRollout waits, on a watch of the one Deployment (UntilObject), until it has rolled out.
func WaitRollout(ctx context.Context, c kubernetes.Interface, ns, name string, timeout time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	deps := c.AppsV1().Deployments(ns)
	err := UntilObject(wctx, name,
		func(ctx context.Context) (runtime.Object, error) { return deps.Get(ctx, name, metav1.GetOptions{}) },
		deps.Watch,
		func(obj runtime.Object, exists bool) (bool, error) {
			if !exists {
				return false, fmt.Errorf("deleted during the rollout")
			}
			d, ok := obj.(*appsv1.Deployment)
			return ok && RolledOut(d), nil
		})
	if err != nil {
		return fmt.Errorf("rollout of deployment %s/%s: %w", ns, name, err)
	}
	return nil
}
