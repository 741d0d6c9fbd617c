package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
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
	clients   []rest.Interface
	limiter   flowcontrol.RateLimiter
	Namespace string
	Pool      string
	Prefix    string            // claim name prefix
	Labels    map[string]string // added to every claim
	Progress  *progress.Counter // optional: counts acked claims
	// MaxInFlight bounds the creates in flight at once (0: DefaultMaxInFlight).
	MaxInFlight int
}

// NewGenerator shards creates over `connections` HTTP/2 connections of base (one connection
// caps concurrent streams at the server's per-connection limit); qps > 0 adds a client limiter.
// Creates are raw POSTs of a pre-encoded body whose response is checked for its status only:
// the generator needs no decoded object back, and on a 2-core machine every microsecond of
// client CPU is taken from the API server being measured (decoding the returned claim was the
// largest client-side cost in a profile of a 1000-claim burst).
func NewGenerator(base *rest.Config, connections int, qps float64, burst int) (*Generator, error) {
	g := &Generator{}
	gv := schema.GroupVersion{Group: agentsandbox.ClaimGVR.Group, Version: agentsandbox.ClaimGVR.Version}
	for i := 0; i < connections; i++ {
		cfg := rest.CopyConfig(base)
		cfg.QPS, cfg.Burst = -1, 0
		cfg.APIPath, cfg.GroupVersion = "/apis", &gv
		cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
		cfg.ContentType = "application/json"
		// A custom dialer makes client-go build a separate transport (and connection) per shard.
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		cfg.Dial = d.DialContext
		c, err := rest.RESTClientFor(cfg)
		if err != nil {
			return nil, fmt.Errorf("load generator client %d: %w", i, err)
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
		if err := c.Get().Namespace(g.Namespace).Resource(agentsandbox.ClaimGVR.Resource).Param("limit", "1").Do(ctx).Error(); err != nil {
			return fmt.Errorf("warm connection %d: %w", i, err)
		}
	}
	return nil
}

// ClaimName is the name of claim i.
func (g *Generator) ClaimName(i int) string { return fmt.Sprintf("%s%05d", g.Prefix, i) }

// claimObject is the SandboxClaim the generator sends, as JSON.
type claimObject struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Metadata   claimMeta `json:"metadata"`
	Spec       struct {
		WarmPoolRef struct {
			Name string `json:"name"`
		} `json:"warmPoolRef"`
	} `json:"spec"`
}

type claimMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func (g *Generator) object(i int, intent time.Time) claimObject {
	labels := map[string]string{"agents.x-k8s.io/created-by": "go-client"}
	for k, v := range g.Labels {
		labels[k] = v
	}
	o := claimObject{APIVersion: "extensions.agents.x-k8s.io/v1beta1", Kind: "SandboxClaim", Metadata: claimMeta{
		Name: g.ClaimName(i), Namespace: g.Namespace, Labels: labels,
		Annotations: map[string]string{agentsandbox.ClientRequestedAtAnnot: intent.UTC().Format(time.RFC3339Nano)},
	}}
	o.Spec.WarmPoolRef.Name = g.Pool
	return o
}

// Body is claim i's JSON, stamped with intent.
func (g *Generator) Body(i int, intent time.Time) []byte {
	raw, err := json.Marshal(g.object(i, intent))
	if err != nil {
		panic(fmt.Sprintf("encode claim: %v", err)) // strings and maps of strings always encode
	}
	return raw
}

// Claim is claim i as an object (for clients that send objects), stamped with intent.
func (g *Generator) Claim(i int, intent time.Time) *unstructured.Unstructured {
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(g.Body(i, intent)); err != nil {
		panic(fmt.Sprintf("decode claim: %v", err))
	}
	return &u
}

// DefaultMaxInFlight bounds the creates in flight at once: above a few hundred concurrent
// requests an API server only queues them (APF's default seats are 600), while every in-flight
// request costs the harness a goroutine, HTTP/2 stream buffers and, past the server's per-
// connection stream limit, new TLS connections (a 3000-claim burst measured 237 MiB peak with one
// goroutine per claim, most of it requests in flight).
const DefaultMaxInFlight = 1000

// Fire sends one claim per schedule entry at start+offset and returns when every POST has
// returned (or ctx ended). A dispatcher releases the claims in schedule order at their planned
// times to at most MaxInFlight workers (DefaultMaxInFlight when 0); when all are busy the next
// claim waits, which shows as its send lag (intent - planned), never as a stretched schedule.
func (g *Generator) Fire(ctx context.Context, start time.Time, sched Schedule) []Sent {
	out := make([]Sent, len(sched))
	order := make([]int, len(sched))
	for i := range sched {
		order[i] = i
		out[i] = Sent{Index: i, Name: g.ClaimName(i), Planned: start.Add(sched[i])}
	}
	sort.SliceStable(order, func(a, b int) bool { return sched[order[a]] < sched[order[b]] })
	workers := g.MaxInFlight
	if workers <= 0 {
		workers = DefaultMaxInFlight
	}
	workers = min(workers, len(sched))
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				g.send(ctx, &out[i])
			}
		}()
	}
	timer := time.NewTimer(0)
	<-timer.C
dispatch:
	for k, i := range order {
		if d := time.Until(out[i].Planned); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				timer.Stop()
				for _, j := range order[k:] {
					out[j].Err = "not sent: " + ctx.Err().Error()
				}
				break dispatch
			case <-timer.C:
			}
		}
		select {
		case work <- i:
		case <-ctx.Done():
			for _, j := range order[k:] {
				out[j].Err = "not sent: " + ctx.Err().Error()
			}
			break dispatch
		}
	}
	close(work)
	wg.Wait()
	return out
}

// send creates one claim and records its intent, ack and error.
func (g *Generator) send(ctx context.Context, s *Sent) {
	if g.limiter != nil {
		if err := g.limiter.Wait(ctx); err != nil {
			s.Err = "not sent: " + err.Error()
			return
		}
	}
	if ctx.Err() != nil {
		s.Err = "not sent: " + ctx.Err().Error()
		return
	}
	s.Intent = time.Now()
	body := g.Body(s.Index, s.Intent)
	cl := g.clients[s.Index%len(g.clients)]
	err := cl.Post().Namespace(g.Namespace).Resource(agentsandbox.ClaimGVR.Resource).SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
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
}
