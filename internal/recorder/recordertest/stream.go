// Package recordertest drives the recorder's real informers (reflector, queue, transform, store,
// handlers) from a synthetic event stream, without a cluster: unit tests replay short sequences
// (out of order, re-created pods) and the scale benchmark replays tens of thousands of claims.
package recordertest

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/brakebench/brakebench/internal/recorder"
)

// Stream is one synthetic watch per resource the recorder reads.
type Stream struct {
	Claims, Sandboxes, Pools, Pods *watch.FakeWatcher
	infs                           []cache.SharedIndexInformer
}

// lw lists nothing and then serves one fake watch; it opts out of WatchList semantics (a fake
// watch sends no initial-events bookmark).
type lw struct{ *cache.ListWatch }

func (lw) IsWatchListSemanticsUnSupported() bool { return true }

// New returns a stream whose watches buffer up to buffer events each, and the informers to hand
// to recorder.StartInformers.
func New(buffer int) (*Stream, recorder.Informers) {
	s := &Stream{
		Claims: watch.NewFakeWithChanSize(buffer, false), Sandboxes: watch.NewFakeWithChanSize(buffer, false),
		Pools: watch.NewFakeWithChanSize(buffer, false), Pods: watch.NewFakeWithChanSize(buffer, false),
	}
	mk := func(w *watch.FakeWatcher, list func() runtime.Object, example runtime.Object) cache.SharedIndexInformer {
		var once sync.Once
		src := lw{&cache.ListWatch{
			ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return list(), nil },
			WatchFuncWithContext: func(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
				served := false
				once.Do(func() { served = true })
				if served {
					return w, nil
				}
				// A second watch (the first one ended): an empty one that ends with ctx.
				nw := watch.NewFake()
				go func() { <-ctx.Done(); nw.Stop() }()
				return nw, nil
			},
		}}
		inf := cache.NewSharedIndexInformer(src, example, 0, cache.Indexers{})
		s.infs = append(s.infs, inf)
		return inf
	}
	ulist := func() runtime.Object {
		l := &unstructured.UnstructuredList{Object: map[string]any{}}
		l.SetResourceVersion("1")
		return l
	}
	infs := recorder.Informers{
		Claims:    mk(s.Claims, ulist, &unstructured.Unstructured{}),
		Sandboxes: mk(s.Sandboxes, ulist, &unstructured.Unstructured{}),
		Pools:     mk(s.Pools, ulist, &unstructured.Unstructured{}),
		Pods:      mk(s.Pods, func() runtime.Object { return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}} }, &corev1.Pod{}),
	}
	infs.Run = func(stop <-chan struct{}) {
		for _, inf := range s.infs {
			go inf.Run(stop)
		}
	}
	return s, infs
}
