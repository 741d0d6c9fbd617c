// Package teardown deletes what brakebench created and waits, on watches, until it is gone: a cell's
// namespace with everything in it, or one object by exact name. Suites, the cell runner and
// `brakebench cleanup` share it.
package teardown

import (
	"context"
	"errors"
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

// sweepKinds are what DeleteNamespace deletes with one DeleteCollection each before the namespace,
// in this order: the claims, then the pool (so that it does not replace the sandboxes deleted
// next), the sandboxes, LeaderWorkerSets and pods.
var sweepKinds = []schema.GroupVersionResource{agentsandbox.ClaimGVR, agentsandbox.PoolGVR, agentsandbox.SandboxGVR, kueuelws.LWSGVR, podsGVR}

// Timings are where DeleteNamespaceTimed spent its time.
type Timings struct {
	// Sweep: the DeleteCollection calls, one per kind (0 when there was no sweep: the namespace
	// was already gone or is not brakebench's).
	Sweep time.Duration
	// Namespace: deleting the namespace and waiting, on a watch, until it is gone (finalizers
	// removed on the way included).
	Namespace time.Duration
	// Refused are the kinds whose DeleteCollection the API server refused (RBAC on a real
	// cluster): the namespace controller deletes those one by one, as it did before the sweep.
	Refused []string
}

// DeleteNamespace deletes ns by exact name and waits, on a watch, until it is gone
// (DeleteNamespaceTimed without the timings).
func DeleteNamespace(ctx context.Context, c *kube.Clients, ns string, timeout time.Duration) error {
	_, err := DeleteNamespaceTimed(ctx, c, ns, timeout)
	return err
}

// DeleteNamespaceTimed deletes ns by exact name and waits, on a watch, until it is gone. In a
// namespace labelled as brakebench's (kube.ManagedByKey) the claims, pool, sandboxes,
// LeaderWorkerSets and pods are deleted first with one DeleteCollection per kind: the namespace
// controller would otherwise delete them one by one at kube-controller-manager's client QPS,
// which on the lab took about a minute per cell. The collections carry no label selector: the
// namespace is the selection (a cell's namespace holds only what its cell made), and the
// sandboxes and pods the controllers create carry their labels, not the cell's. A kind whose
// DeleteCollection is refused (RBAC) or not served is left to the namespace controller; any other
// sweep error is reported only if the namespace then does not go. If a controller's finalizer
// still holds pods, Kueue Workloads or KEDA ScaledObjects after half the timeout (at most a
// minute: the controller died), the finalizers are removed: everything in a run's namespace is
// brakebench's.
func DeleteNamespaceTimed(ctx context.Context, c *kube.Clients, ns string, timeout time.Duration) (Timings, error) {
	var tm Timings
	got, err := c.Typed.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return tm, nil
	}
	var sweepErrs []error
	if err == nil && got.Labels[kube.ManagedByKey] == kube.ManagedByValue {
		sweepStart := time.Now()
		tm.Refused, sweepErrs = sweep(ctx, c.Dynamic, ns)
		tm.Sweep = time.Since(sweepStart)
	}
	nsStart := time.Now()
	done := func(err error) (Timings, error) {
		tm.Namespace = time.Since(nsStart)
		return tm, err
	}
	err = c.Typed.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return done(nil)
	}
	if err != nil {
		return done(fmt.Errorf("delete namespace %s: %w", ns, errors.Join(append([]error{err}, sweepErrs...)...)))
	}
	nsRes := c.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	grace := min(timeout/2, time.Minute)
	if waitGone(ctx, nsRes, ns, grace) == nil {
		return done(nil)
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
		return done(fmt.Errorf("namespace %s not gone after %s: %w", ns, timeout, errors.Join(append([]error{err}, sweepErrs...)...)))
	}
	return done(nil)
}

// sweep deletes each of sweepKinds in ns with one DeleteCollection. It returns the kinds the API
// server refused (forbidden, unauthorized) and the other errors; a kind the cluster does not
// serve is skipped.
func sweep(ctx context.Context, dyn dynamic.Interface, ns string) (refused []string, errs []error) {
	now := int64(0)
	for _, gvr := range sweepKinds {
		err := dyn.Resource(gvr).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &now}, metav1.ListOptions{})
		switch {
		case err == nil, apierrors.IsNotFound(err), apierrors.IsMethodNotSupported(err), meta.IsNoMatchError(err):
		case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
			refused = append(refused, gvr.Resource)
		default:
			errs = append(errs, fmt.Errorf("delete %s in %s: %w", gvr.Resource, ns, err))
		}
	}
	return refused, errs
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
