package kube

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// UntilObject waits until cond holds for the object called name: it reads the object with get
// and, while cond is false, watches it (field selector on the name) from the resourceVersion it
// read, reading it again when a watch closes. cond gets the object, or nil and exists=false when
// it is gone. A plain get and watch rather than a reflector: it needs no watch-list support from
// the server or from a fake client. It returns when cond is done or errs, or ctx ends.
func UntilObject(ctx context.Context, name string,
	get func(ctx context.Context) (runtime.Object, error),
	watchFn func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error),
	cond func(obj runtime.Object, exists bool) (bool, error)) error {
	for {
		obj, err := get(ctx)
		if apierrors.IsNotFound(err) {
			if done, err := cond(nil, false); done || err != nil {
				return err
			}
			return fmt.Errorf("%s does not exist", name)
		}
		if err != nil {
			return err
		}
		if done, err := cond(obj, true); done || err != nil {
			return err
		}
		m, ok := obj.(metav1.Object)
		if !ok {
			return fmt.Errorf("%s: %T has no metadata", name, obj)
		}
		w, err := watchFn(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: m.GetResourceVersion()})
		if err != nil {
			return err
		}
		done, err := untilEvent(ctx, w, name, cond)
		w.Stop()
		if done || err != nil {
			return err
		}
	}
}

// untilEvent feeds w's events about name to cond until it is done (true), errs, the context
// ends (error) or the watch closes (false, nil: read the object again).
func untilEvent(ctx context.Context, w watch.Interface, name string, cond func(runtime.Object, bool) (bool, error)) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil
			}
			m, isObj := ev.Object.(metav1.Object)
			if !isObj || m.GetName() != name {
				continue
			}
			if done, err := cond(ev.Object, ev.Type != watch.Deleted); done || err != nil {
				return done, err
			}
		}
	}
}

// UntilList waits until cond holds for a list: it lists, and while cond is false, watches from the
// list's resourceVersion and lists again after each event (for small sets: a Deployment's pods, a
// namespace's Leases). A plain list and watch: it works against fake clients too.
func UntilList(ctx context.Context,
	list func(ctx context.Context) (runtime.Object, error),
	watchFn func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error),
	cond func(list runtime.Object) bool) error {
	for {
		l, err := list(ctx)
		if err != nil {
			return err
		}
		if cond(l) {
			return nil
		}
		rv := ""
		if m, ok := l.(metav1.ListInterface); ok {
			rv = m.GetResourceVersion()
		}
		w, err := watchFn(ctx, metav1.ListOptions{ResourceVersion: rv})
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			w.Stop()
			return ctx.Err()
		case <-w.ResultChan(): // any change (or a closed watch): list again
		}
		w.Stop()
	}
}
