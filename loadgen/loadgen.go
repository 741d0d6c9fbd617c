package loadgen

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/brakebench/brakebench/internal/progress"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
)

// Sent is what the generator knows about one claim.
type Sent struct {
	Index   int
	Name    string
	Planned time.Time // start + schedule offset
	Intent  time.Time // just before the POST (also stamped as client-first-requested-at)
	Acked   time.Time // the POST returned
	Err     string
}

// Generator creates claims against one warm pool.
type Generator struct {
	clients   []dynamic.Interface
	limiter   flowcontrol.RateLimiter
	Namespace string
	Pool      string
	Prefix    string            // claim name prefix
	Labels    map[string]string // added to every claim
	Progress  *progress.Counter // optional: counts acked claims
	// OnSend is called with each claim's name just before its POST (the recorder registers it).
	OnSend func(name string, intent time.Time)
}

// NewGenerator shards creates over `connections` HTTP/2 connections of base (one connection
// caps concurrent streams at the server's per-connection limit); qps > 0 adds a client limiter.
func NewGenerator(base *rest.Config, connections int, qps float64, burst int) (*Generator, error) {
	g := &Generator{}
	for i := 0; i < connections; i++ {
		cfg := rest.CopyConfig(base)
		cfg.QPS, cfg.Burst = -1, 0
		// A custom dialer makes client-go build a separate transport (and connection) per shard.
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		cfg.Dial = d.DialContext
		c, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		g.clients = append(g.clients, c)
	}
	if qps > 0 {
		if burst < 1 {
			burst = 1
		}
		g.limiter = flowcontrol.NewTokenBucketRateLimiter(float32(qps), burst)
	}
	return g, nil
}

// Warm opens every shard's connection (TLS and HTTP/2 set-up) with a cheap list, so the burst
// does not pay for handshakes and its first claims' latency is not inflated by them.
func (g *Generator) Warm(ctx context.Context) error {
	for i, c := range g.clients {
		if _, err := c.Resource(agentsandbox.ClaimGVR).Namespace(g.Namespace).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return fmt.Errorf("warm connection %d: %w", i, err)
		}
	}
	return nil
}

// ClaimName is the name of claim i.
func (g *Generator) ClaimName(i int) string { return fmt.Sprintf("%s%05d", g.Prefix, i) }

// Claim builds claim i's object, stamped with intent.
func (g *Generator) Claim(i int, intent time.Time) *unstructured.Unstructured {
	labels := map[string]any{"agents.x-k8s.io/created-by": "go-client"}
	for k, v := range g.Labels {
		labels[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1",
		"kind":       "SandboxClaim",
		"metadata": map[string]any{
			"name":        g.ClaimName(i),
			"namespace":   g.Namespace,
			"labels":      labels,
			"annotations": map[string]any{agentsandbox.ClientRequestedAtAnnot: intent.UTC().Format(time.RFC3339Nano)},
		},
		"spec": map[string]any{"warmPoolRef": map[string]any{"name": g.Pool}},
	}}
}

// Fire sends one claim per schedule entry at start+offset and returns when every POST has
// returned (or ctx ended). Each claim has its own goroutine, released by its own timer.
func (g *Generator) Fire(ctx context.Context, start time.Time, sched Schedule) []Sent {
	out := make([]Sent, len(sched))
	var wg sync.WaitGroup
	for i, off := range sched {
		wg.Add(1)
		go func(i int, planned time.Time) {
			defer wg.Done()
			s := &out[i]
			s.Index, s.Name, s.Planned = i, g.ClaimName(i), planned
			if d := time.Until(planned); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-ctx.Done():
					t.Stop()
					s.Err = "not sent: " + ctx.Err().Error()
					return
				case <-t.C:
				}
			}
			if g.limiter != nil {
				if err := g.limiter.Wait(ctx); err != nil {
					s.Err = "not sent: " + err.Error()
					return
				}
			}
			s.Intent = time.Now()
			if g.OnSend != nil {
				g.OnSend(s.Name, s.Intent)
			}
			cl := g.clients[i%len(g.clients)]
			_, err := cl.Resource(agentsandbox.ClaimGVR).Namespace(g.Namespace).Create(ctx, g.Claim(i, s.Intent), metav1.CreateOptions{})
			s.Acked = time.Now()
			if err != nil {
				s.Err = err.Error()
			}
			if g.Progress != nil {
				if err != nil {
					g.Progress.Fail()
				} else {
					g.Progress.Inc()
				}
			}
		}(i, start.Add(off))
	}
	wg.Wait()
	return out
}
