// Package teardown deletes what brakebench created and waits, on watches, until it is gone: a cell's
// namespace with everything in it, or one object by exact name. Suites, the cell runner and
// `brakebench cleanup` share it.
package teardown

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
	"github.com/brakebench/brakebench/internal/sut/keda"
	"github.com/brakebench/brakebench/internal/sut/kueuelws"
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// DeleteNamespace deletes ns by exact name and waits, on a watch, until it is gone. The claims,
// sandboxes, LeaderWorkerSets and pods inside are deleted first with one DeleteCollection each:
// the namespace controller would otherwise delete them one by one at kube-controller-manager's
// client QPS, which on the lab took about a minute per cell. If a controller's finalizer still
// holds pods, Kueue Workloads or KEDA ScaledObjects after half the timeout (at most a minute: the
// controller died), the finalizers are removed: everything in a run's namespace is brakebench's.
func DeleteNamespace(ctx context.Context, c *kube.Clients, ns string, timeout time.Duration) error {
	now := int64(0)
	for _, gvr := range []schema.GroupVersionResource{agentsandbox.ClaimGVR, agentsandbox.PoolGVR, agentsandbox.SandboxGVR, kueuelws.LWSGVR, podsGVR} {
		err := c.Dynamic.Resource(gvr).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &now}, metav1.ListOptions{})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) && !meta.IsNoMatchError(err) {
			return fmt.Errorf("delete %s in %s: %w", gvr.Resource, ns, err)
		}
	}
	err := c.Typed.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete namespace %s: %w", ns, err)
	}
	nsRes := c.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	grace := min(timeout/2, time.Minute)
	if waitGone(ctx, nsRes, ns, grace) == nil {
		return nil
	}
	for _, gvr := range []schema.GroupVersionResource{podsGVR, kueuelws.WorkloadGVR, kueuelws.LWSGVR, keda.ScaledObjectGVR, keda.HPAGVR} {
		list, err := c.Dynamic.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, o := range list.Items {
			if len(o.GetFinalizers()) > 0 {
				_ = dropFinalizers(ctx, c.Dynamic.Resource(gvr).Namespace(ns), o.GetName())
			}
		}
	}
	if err := waitGone(ctx, nsRes, ns, timeout-grace); err != nil {
		return fmt.Errorf("namespace %s not gone after %s: %w", ns, timeout, err)
	}
	return nil
}

// DeleteAndWait deletes one object brakebench created (foreground) and waits on a watch until it
// is gone. When a controller's finalizer still holds it after half the timeout (Kueue stopped or
// crashed before releasing its ClusterQueue), the finalizers are removed: the object is ours and
// must not outlive the run.
func DeleteAndWait(ctx context.Context, c *kube.Clients, gvr schema.GroupVersionResource, ns, name string, timeout time.Duration) error {
	ri := c.Dynamic.Resource(gvr).Namespace(ns)
	fg := metav1.DeletePropagationForeground
	if err := ri.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil
		}
		return fmt.Errorf("delete %s %s: %w", gvr.Resource, name, err)
	}
	if waitGone(ctx, ri, name, timeout/2) == nil {
		return nil
	}
	if err := dropFinalizers(ctx, ri, name); err != nil {
		return fmt.Errorf("%s %s not gone after %s and its finalizers could not be removed: %w", gvr.Resource, name, timeout/2, err)
	}
	if err := waitGone(ctx, ri, name, timeout/2); err != nil {
		return fmt.Errorf("%s %s not gone after %s: %w", gvr.Resource, name, timeout, err)
	}
	return nil
}

func dropFinalizers(ctx context.Context, ri dynamic.ResourceInterface, name string) error {
	_, err := ri.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{FieldManager: kube.FieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// waitGone waits, on a watch (kube.UntilObject), until the named object no longer exists.
func waitGone(ctx context.Context, ri dynamic.ResourceInterface, name string, d time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return kube.UntilObject(wctx, name,
		func(ctx context.Context) (runtime.Object, error) { return ri.Get(ctx, name, metav1.GetOptions{}) },
		ri.Watch,
		func(_ runtime.Object, exists bool) (bool, error) { return !exists, nil })
}
