// Package teardown deletes what brakebench created and waits, on watches, until it is gone: a cell's
// namespace with everything in it, or one object by exact name. Suites, the cell runner and
// `brakebench cleanup` share it.
package teardown

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// sweepKinds are what DeleteNamespace deletes before the namespace, in this order: the claims,
// then the pool (so that it does not replace the sandboxes deleted next), the sandboxes,
// LeaderWorkerSets and pods.
var sweepKinds = []schema.GroupVersionResource{agentsandbox.ClaimGVR, agentsandbox.PoolGVR, agentsandbox.SandboxGVR, kueuelws.LWSGVR, podsGVR}

// Method is how the sweep deletes a kind's objects.
type Method string

const (
	// Paged lists the kind in pages (Options.PageSize) and deletes each object with its own
	// request, Options.InFlight at a time. The default: see DeleteNamespaceTimed.
	Paged Method = "paged"
	// Collection sends one DeleteCollection per kind and, when the API server answers with a
	// timeout, sends it again until a list shows the kind empty (or the sweep's time is up).
	Collection Method = "collection"
	// CollectionOnce is the sweep before paging (kept to measure against): one DeleteCollection
	// per kind, a timeout left to the namespace controller; as then, the sweep is not bounded and
	// the namespace has the whole timeout after it.
	CollectionOnce Method = "collection-once"
)

// Options are how DeleteNamespaceWith sweeps.
type Options struct {
	Method Method
	// PageSize is the list page of the Paged method (500 when 0).
	PageSize int64
	// InFlight is how many deletes the Paged method keeps in flight (16 when 0).
	InFlight int
	// Defer: when the sweep left none of its kinds (every Left 0), leave the namespace there,
	// emptied, and return without deleting it (Timings.Deferred); the caller deletes it later,
	// when nothing is measured. An emptied namespace still takes about 5 s to go once deleted:
	// kube-controller-manager's namespace controller waits a fixed grace period
	// (namespaceDeletionGracePeriod) after every namespace event, then makes its own pass
	// (discovery and a delete or list of every namespaced kind), load on the API server that a
	// measurement must not share. An empty namespace costs nothing while it waits.
	Defer bool
}

// DefaultOptions are DeleteNamespaceTimed's: paged, 500 a page, 16 deletes in flight.
var DefaultOptions = Options{Method: Paged, PageSize: 500, InFlight: 16}

func (o Options) withDefaults() Options {
	if o.Method == "" {
		o.Method = Paged
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultOptions.PageSize
	}
	if o.InFlight <= 0 {
		o.InFlight = DefaultOptions.InFlight
	}
	return o
}

// Timings are where DeleteNamespaceTimed spent its time.
type Timings struct {
	// Sweep: deleting the kinds in the namespace before the namespace (0 when there was no
	// sweep: the namespace was already gone or is not brakebench's).
	Sweep time.Duration
	// Namespace: deleting the namespace and waiting, on a watch, until it is gone (finalizers
	// removed on the way included).
	Namespace time.Duration
	// Refused are the kinds whose deletion the API server refused (RBAC on a real cluster): the
	// namespace controller deletes those, as it did before the sweep.
	Refused []string
	// Method is the sweep's method ("" when there was no sweep).
	Method Method
	// Kinds are the sweep's kinds in order, each with its time and counts.
	Kinds []KindSweep
	// AlreadyGone: the namespace did not exist (nothing was done).
	AlreadyGone bool
	// Deferred: the sweep emptied the namespace and Options.Defer was set: the namespace was
	// not deleted; the caller deletes it later.
	Deferred bool
}

// KindSweep is one kind's part of a sweep.
type KindSweep struct {
	Resource string
	Duration time.Duration
	// Found is how many objects of the kind the namespace held when its sweep began (Paged: the
	// objects its pages listed; the collection methods: one list of limit 1 and its remaining
	// count; -1 when the server did not say).
	Found int
	// Deleted is how many deletes the API server accepted (Paged), or Found less Left (the
	// collection methods).
	Deleted int
	// Left is how many objects of the kind a list of limit 1 still showed after the sweep
	// (terminating ones included; -1 when the server did not say).
	Left int
	// Requests is the requests the sweep of the kind sent (lists and deletes); Timeouts how many
	// of them the API server answered with a timeout.
	Requests, Timeouts int
	// Refused: the API server refused the kind's deletion (left to the namespace controller).
	Refused bool
	// NotServed: the cluster does not serve the kind (or its deletion); nothing was done.
	NotServed bool
	// Err is the kind's other error, if any (the namespace's deletion goes on).
	Err error
}

// DeleteNamespace deletes ns by exact name and waits, on a watch, until it is gone
// (DeleteNamespaceTimed without the timings).
func DeleteNamespace(ctx context.Context, c *kube.Clients, ns string, timeout time.Duration) error {
	_, err := DeleteNamespaceTimed(ctx, c, ns, timeout)
	return err
}

// DeleteNamespaceTimed deletes ns by exact name and waits, on a watch, until it is gone, within
// timeout in all. In a namespace labelled as brakebench's (kube.ManagedByKey) the claims, pool,
// sandboxes, LeaderWorkerSets and pods are deleted first (the sweep, at most half the timeout):
// the namespace controller would otherwise delete them at kube-controller-manager's client QPS,
// which on the lab took about a minute per cell, and with one DeleteCollection per kind.
//
// The sweep lists each kind in pages and deletes every object with a request of its own, 16 in
// flight (DefaultOptions), not with one DeleteCollection: the API server serves a
// DeleteCollection inside one request, listing the whole kind and deleting the objects one by
// one with --delete-collection-workers goroutines (1 by default), so a kind of a few thousand
// objects runs past the request timeout (60 s) and is answered "the server was unable to return
// a response in the time allotted" while its deletes stop with the request's context; the
// namespace controller's own DeleteCollection of that kind then does the same. Separate deletes
// each do the same storage work as one of DeleteCollection's, end in milliseconds, run side by
// side (etcd commits concurrent deletes together), and a failed one fails alone.
//
// No label selector: the namespace is the selection (a cell's namespace holds only what its
// cell made), and the sandboxes and pods the controllers create carry their labels, not the
// cell's. A kind whose deletion is refused (RBAC) or that is not served is left to the
// namespace controller; any other sweep error is reported only if the namespace then does not
// go. If a controller's finalizer still holds pods, Kueue Workloads or KEDA ScaledObjects after
// half the time left (at most a minute: the controller died), the finalizers are removed:
// everything in a run's namespace is brakebench's.
func DeleteNamespaceTimed(ctx context.Context, c *kube.Clients, ns string, timeout time.Duration) (Timings, error) {
	return DeleteNamespaceWith(ctx, c, ns, timeout, DefaultOptions)
}

// DeleteNamespaceWith is DeleteNamespaceTimed with the sweep's method and sizes given. A trace
// on ctx (WithTrace) is told the outcome.
func DeleteNamespaceWith(ctx context.Context, c *kube.Clients, ns string, timeout time.Duration, opts Options) (tm Timings, err error) {
	defer func() {
		if tr, ok := ctx.Value(traceKey{}).(Trace); ok {
			tr(ns, tm, err)
		}
	}()
	start := time.Now()
	got, err := c.Typed.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		tm.AlreadyGone = true
		return tm, nil
	}
	var sweepErrs []error
	// CollectionOnce is measured as it ran before paging: its sweep unbounded (each
	// DeleteCollection ends at the server's request timeout), the namespace its own timeout.
	legacy := opts.Method == CollectionOnce
	if err == nil && got.Labels[kube.ManagedByKey] == kube.ManagedByValue {
		opts = opts.withDefaults()
		var sctx context.Context
		var cancel context.CancelFunc
		if legacy {
			sctx, cancel = context.WithCancel(ctx)
		} else {
			sctx, cancel = context.WithTimeout(ctx, timeout/2)
		}
		tm.Method = opts.Method
		tm.Kinds = sweep(sctx, c.Dynamic, ns, opts)
		cancel()
		tm.Sweep = time.Since(start)
		for _, k := range tm.Kinds {
			if k.Refused {
				tm.Refused = append(tm.Refused, k.Resource)
			}
			if k.Err != nil {
				sweepErrs = append(sweepErrs, fmt.Errorf("delete %s in %s: %w", k.Resource, ns, k.Err))
			}
		}
	}
	nsStart := time.Now()
	if legacy {
		start = nsStart
	}
	done := func(err error) (Timings, error) {
		tm.Namespace = time.Since(nsStart)
		return tm, err
	}
	if opts.Defer && len(sweepErrs) == 0 && emptied(tm.Kinds) {
		tm.Deferred = true
		return done(nil)
	}
	err = c.Typed.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return done(nil)
	}
	if err != nil {
		return done(fmt.Errorf("delete namespace %s: %w", ns, errors.Join(append([]error{err}, sweepErrs...)...)))
	}
	nsRes := c.Dynamic.Resource(namespacesGVR)
	left := timeout - time.Since(start)
	grace := min(left/2, time.Minute)
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
	if err := waitGone(ctx, nsRes, ns, max(timeout-time.Since(start), time.Second)); err != nil {
		return done(fmt.Errorf("namespace %s not gone after %s: %w", ns, time.Since(start).Round(time.Second), errors.Join(append([]error{err}, sweepErrs...)...)))
	}
	return done(nil)
}

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// emptied reports whether a sweep left its namespace without any of its kinds: every kind swept
// (or not served) and counted empty afterwards. A refused kind, an uncounted one (-1) or a
// terminating object left (a finalizer) is not empty: the namespace is then waited for.
func emptied(kinds []KindSweep) bool {
	if len(kinds) == 0 {
		return false
	}
	for _, k := range kinds {
		if k.NotServed {
			continue
		}
		if k.Refused || k.Err != nil || k.Left != 0 {
			return false
		}
	}
	return true
}

// Trace is told the outcome of every DeleteNamespaceWith called with a context that carries it.
type Trace func(ns string, tm Timings, err error)

type traceKey struct{}

// WithTrace returns ctx carrying tr: the cell runner learns how a suite's own teardown of the
// cell's namespace went (like net/http/httptrace, a context value that only observes).
func WithTrace(ctx context.Context, tr Trace) context.Context {
	return context.WithValue(ctx, traceKey{}, tr)
}

// sweep deletes each of sweepKinds in ns by opts.Method, in order, until ctx ends.
func sweep(ctx context.Context, dyn dynamic.Interface, ns string, opts Options) []KindSweep {
	kinds := make([]KindSweep, 0, len(sweepKinds))
	for _, gvr := range sweepKinds {
		if ctx.Err() != nil {
			kinds = append(kinds, KindSweep{Resource: gvr.Resource, Found: -1, Left: -1, Err: fmt.Errorf("not swept: %w", ctx.Err())})
			continue
		}
		ri := dyn.Resource(gvr).Namespace(ns)
		k := KindSweep{Resource: gvr.Resource, Found: -1, Left: -1}
		begin := time.Now()
		var err error
		if opts.Method == Paged {
			err = sweepPaged(ctx, ri, opts, &k)
		} else {
			err = sweepCollection(ctx, ri, opts.Method == Collection, &k)
		}
		switch {
		case err == nil:
		case notServed(err):
			k.NotServed, k.Found = true, 0
			k.Duration = time.Since(begin)
			kinds = append(kinds, k)
			continue
		case refused(err):
			k.Refused = true
		default:
			k.Err = err
		}
		if !k.Refused {
			// What is left (terminating objects included): the sweep's own account of the kind.
			if n, err := count(ctx, ri, &k); err == nil {
				k.Left = n
				if opts.Method != Paged && k.Found >= 0 {
					k.Deleted = max(k.Found-n, 0)
				}
			}
		}
		k.Duration = time.Since(begin)
		kinds = append(kinds, k)
	}
	return kinds
}

// notServed: the cluster does not serve the kind or its deletion (the kind is skipped).
func notServed(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) || meta.IsNoMatchError(err)
}

// refused: RBAC said no (the kind is left to the namespace controller).
func refused(err error) bool { return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) }

// timedOut: the API server did not answer in time ("the server was unable to return a response
// in the time allotted, but may still be processing the request", a 504), or asked to be
// retried (a server timeout, too many requests).
func timedOut(err error) bool {
	return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err) ||
		strings.Contains(err.Error(), "unable to return a response in the time allotted")
}

// count lists one object of the kind and returns how many the list says there are (-1 when the
// server did not say: a continue token without a remaining count).
func count(ctx context.Context, ri dynamic.ResourceInterface, k *KindSweep) (int, error) {
	k.Requests++
	l, err := ri.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return -1, err
	}
	n := len(l.Items)
	switch rem := l.GetRemainingItemCount(); {
	case rem != nil:
		n += int(*rem)
	case l.GetContinue() != "":
		return -1, nil
	}
	return n, nil
}

// sweepCollection deletes the kind with one DeleteCollection; with retry, a DeleteCollection the
// API server answered with a timeout is sent again until a list shows the kind empty (the
// server's deletes stop with the timed-out request's context, or go on: either way the next one
// lists what is left) or ctx ends.
func sweepCollection(ctx context.Context, ri dynamic.ResourceInterface, retry bool, k *KindSweep) error {
	n, err := count(ctx, ri, k)
	if err != nil {
		return err
	}
	k.Found = n
	now := int64(0)
	for {
		k.Requests++
		err := ri.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &now}, metav1.ListOptions{})
		if err == nil || !timedOut(err) {
			return err
		}
		k.Timeouts++
		if !retry {
			return err
		}
		if n, cerr := count(ctx, ri, k); cerr == nil && n == 0 {
			return nil
		}
		// A server that answers a timeout at once (overloaded) is not asked again at once.
		select {
		case <-ctx.Done():
			return err
		case <-time.After(retryPause):
		}
	}
}

// retryPause is the pause between a DeleteCollection that timed out and the next.
var retryPause = time.Second

// sweepPaged walks the kind's list in pages (a continue token: one consistent snapshot, which the
// deletes do not disturb) and deletes every object listed with a request of its own, opts.InFlight
// at a time, while the next page is read. A delete the API server answers with a timeout is tried
// up to three times; one it refuses (RBAC) stops the kind.
func sweepPaged(ctx context.Context, ri dynamic.ResourceInterface, opts Options, k *KindSweep) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	names := make(chan string, opts.PageSize)
	var (
		mu                  sync.Mutex
		deleted, requests   int
		timeouts            int
		firstErr, refuseErr error
		wg                  sync.WaitGroup
	)
	now := int64(0)
	for range opts.InFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				var err error
				for attempt := 1; ; attempt++ {
					mu.Lock()
					requests++
					mu.Unlock()
					err = ri.Delete(wctx, name, metav1.DeleteOptions{GracePeriodSeconds: &now})
					if err == nil || !timedOut(err) || attempt == 3 || wctx.Err() != nil {
						break
					}
					mu.Lock()
					timeouts++
					mu.Unlock()
				}
				mu.Lock()
				switch {
				case err == nil:
					deleted++
				case apierrors.IsNotFound(err): // gone already (the garbage collector, a controller)
				case wctx.Err() != nil: // the sweep's time is up, or a delete was refused
				case refused(err) || apierrors.IsMethodNotSupported(err):
					if refuseErr == nil {
						refuseErr = err
						cancel()
					}
				default:
					if timedOut(err) {
						timeouts++
					}
					if firstErr == nil {
						firstErr = fmt.Errorf("delete %s: %w", name, err)
					}
				}
				mu.Unlock()
			}
		}()
	}
	found, listErr := listPages(wctx, ri, opts.PageSize, names, k)
	close(names)
	wg.Wait()
	k.Found, k.Deleted, k.Requests, k.Timeouts = found, deleted, k.Requests+requests, k.Timeouts+timeouts
	switch {
	case refuseErr != nil:
		return refuseErr
	case ctx.Err() != nil:
		return fmt.Errorf("%d of %d listed deleted when the sweep's time was up: %w", deleted, found, ctx.Err())
	case listErr != nil:
		return listErr
	}
	return firstErr
}

// listPages sends the name of every object of the kind to names, page by page, and returns how
// many it listed. A continue token that expired (etcd compacted past it) starts the walk again
// from the first page, at most three times; names sent once are not sent again.
func listPages(ctx context.Context, ri dynamic.ResourceInterface, pageSize int64, names chan<- string, k *KindSweep) (int, error) {
	seen := map[string]bool{}
	cont, restarts := "", 0
	for {
		k.Requests++
		page, err := ri.List(ctx, metav1.ListOptions{Limit: pageSize, Continue: cont})
		if apierrors.IsResourceExpired(err) && cont != "" && restarts < 3 {
			cont, restarts = "", restarts+1
			continue
		}
		if err != nil {
			if len(seen) > 0 && notServed(err) {
				err = fmt.Errorf("list: %w", err) // served a moment ago: not a kind to skip
			}
			return len(seen), err
		}
		for _, o := range page.Items {
			name := o.GetName()
			if seen[name] {
				continue
			}
			seen[name] = true
			select {
			case names <- name:
			case <-ctx.Done():
				return len(seen), ctx.Err()
			}
		}
		if cont = page.GetContinue(); cont == "" {
			return len(seen), nil
		}
	}
}

// WaitNamespaceGone waits, on a watch, up to d until the namespace ns no longer exists.
func WaitNamespaceGone(ctx context.Context, c *kube.Clients, ns string, d time.Duration) error {
	return waitGone(ctx, c.Dynamic.Resource(namespacesGVR), ns, d)
}

// NamespaceRemaining says why ns still exists, from the namespace controller's conditions on it
// (content and finalizers remaining, a deletion failure), or "" when it has none to say; exists
// is false when ns is gone.
func NamespaceRemaining(ctx context.Context, c *kube.Clients, ns string) (exists bool, why string, err error) {
	got, err := c.Typed.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, "", nil
	}
	if err != nil {
		return true, "", err
	}
	var parts []string
	for _, cond := range got.Status.Conditions {
		if cond.Status == corev1.ConditionTrue && cond.Message != "" {
			parts = append(parts, string(cond.Type)+": "+cond.Message)
		}
	}
	if got.DeletionTimestamp == nil {
		parts = append([]string{"not being deleted"}, parts...)
	}
	return true, strings.Join(parts, "; "), nil
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
