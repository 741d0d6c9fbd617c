// Package demand serves the pool-autoscaling suite's demand signal: the number of SandboxClaims
// in a namespace, as JSON for KEDA's metrics-api scaler. The count comes from an informer, so it
// costs the API server one watch, and a failed list or watch leaves the last state in place: an
// API blip never reads as demand falling to zero.
package demand

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
	"github.com/brakebench/brakebench/internal/sut/keda"
)

// Path is where the count is served.
const Path = "/demand"

// Hit is one request served: when, and the value returned.
type Hit struct {
	At    time.Time `json:"at"`
	Value int       `json:"value"`
}

// Exporter counts a namespace's SandboxClaims and serves the count.
type Exporter struct {
	informer cache.SharedIndexInformer
	stopCh   chan struct{}
	srv      *http.Server
	ln       net.Listener

	mu   sync.Mutex
	hits []Hit
}

// ErrCannotList says the claims could not be listed: the API server refused or failed the list,
// or did not answer before the context ended.
var ErrCannotList = errors.New("cannot list SandboxClaims")

// Start runs the informer on ns (claims matching selector; "" = all) and serves on addr
// ("127.0.0.1:0" picks a port). It returns once the informer has synced, or with ErrCannotList
// and the API server's error when a list fails or ctx ends first (at the latest after a minute).
func Start(ctx context.Context, dc dynamic.Interface, ns, selector, addr string) (*Exporter, error) {
	where := "every namespace"
	if ns != "" {
		where = "namespace " + ns
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// One plain list first: it fails at once and says why (refused, forbidden, no such resource),
	// where the informer's watch-list retries a refused connection for as long as it is let.
	if _, err := dc.Resource(agentsandbox.ClaimGVR).Namespace(ns).List(sctx, metav1.ListOptions{LabelSelector: selector, Limit: 1}); err != nil {
		return nil, fmt.Errorf("demand exporter: %w in %s: %v", ErrCannotList, where, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("demand exporter: listen on %s: %w", addr, err)
	}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, ns, func(o *metav1.ListOptions) { o.LabelSelector = selector })
	e := &Exporter{informer: f.ForResource(agentsandbox.ClaimGVR).Informer(), stopCh: make(chan struct{}), ln: ln}
	// The reflector retries a failed list or watch for ever; remember the last failure to say why
	// the informer never synced.
	var mu sync.Mutex
	var last error
	_ = e.informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		mu.Lock()
		last = err
		mu.Unlock()
	})
	f.Start(e.stopCh)
	if !cache.WaitForCacheSync(sctx.Done(), e.informer.HasSynced) {
		close(e.stopCh)
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		cause := "the informer did not sync in time"
		if last != nil {
			cause = last.Error()
		}
		return nil, fmt.Errorf("demand exporter: %w in %s: %s", ErrCannotList, where, cause)
	}
	mux := http.NewServeMux()
	mux.HandleFunc(Path, e.serve)
	e.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = e.srv.Serve(ln) }()
	return e, nil
}

// Count is the number of claims in the informer's cache that are not being deleted.
func (e *Exporter) Count() int {
	n := 0
	for _, o := range e.informer.GetStore().List() {
		if u, ok := o.(*unstructured.Unstructured); ok && u.GetDeletionTimestamp() == nil {
			n++
		}
	}
	return n
}

func (e *Exporter) serve(w http.ResponseWriter, _ *http.Request) {
	n := e.Count()
	e.mu.Lock()
	e.hits = append(e.hits, Hit{At: time.Now(), Value: n})
	e.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]int{keda.ValueLocation: n})
}

// URL is the exporter's address for a client on this host.
func (e *Exporter) URL() string { return "http://" + e.ln.Addr().String() + Path }

// Addr is the listener's address.
func (e *Exporter) Addr() net.Addr { return e.ln.Addr() }

// Hits returns every request served so far.
func (e *Exporter) Hits() []Hit {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Hit(nil), e.hits...)
}

// Stop closes the listener and the informer.
func (e *Exporter) Stop(ctx context.Context) error {
	select {
	case <-e.stopCh:
		return nil
	default:
		close(e.stopCh)
	}
	if err := e.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
