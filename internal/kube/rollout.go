package kube

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
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

// WaitRollout waits, on a watch of the one Deployment (from the resourceVersion it read, and
// again after a closed watch), until it has rolled out (RolledOut).
func WaitRollout(ctx context.Context, c kubernetes.Interface, ns, name string, timeout time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	deps := c.AppsV1().Deployments(ns)
	fail := func(err error) error { return fmt.Errorf("rollout of deployment %s/%s: %w", ns, name, err) }
	for {
		d, err := deps.Get(wctx, name, metav1.GetOptions{})
		if err != nil {
			return fail(err)
		}
		if RolledOut(d) {
			return nil
		}
		w, err := deps.Watch(wctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: d.ResourceVersion})
		if err != nil {
			return fail(err)
		}
		done, err := untilRolledOut(wctx, w, name)
		w.Stop()
		if done || err != nil {
			if err != nil {
				return fail(err)
			}
			return nil
		}
	}
}

// untilRolledOut reads w until the Deployment has rolled out (true), is deleted or the context
// ends (error), or the watch closes (false, nil: read it again).
func untilRolledOut(ctx context.Context, w watch.Interface, name string) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil
			}
			d, isDep := ev.Object.(*appsv1.Deployment)
			if !isDep || d.Name != name {
				continue
			}
			if ev.Type == watch.Deleted {
				return false, fmt.Errorf("deleted during the rollout")
			}
			if RolledOut(d) {
				return true, nil
			}
		}
	}
}
