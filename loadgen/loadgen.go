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
	newClient func() (rest.Interface, error) // a client on a connection of its own
	limiter   flowcontrol.RateLimiter
	Namespace string
	Pool      string
	Prefix    string            // claim name prefix
	Labels    map[string]string // added to every claim
	Progress  *progress.Counter // optional: counts acked claims
	// MaxInFlight bounds the creates in flight at once (0: DefaultMaxInFlight).
	MaxInFlight int
}

// NewGenerator shards creates over `connections` HTTP/2 connections of base, or more: Warm and
// Fire add connections until none carries more than CreatesPerConnection creates at once (see
// there); qps > 0 adds a client limiter.
// Creates are raw POSTs of a pre-encoded body whose response is checked for its status only:
// the generator needs no decoded object back, and on a 2-core machine every microsecond of
// client CPU is taken from the API server being measured (decoding the returned claim was the
// largest client-side cost in a profile of a 1000-claim burst).
func NewGenerator(base *rest.Config, connections int, qps float64, burst int) (*Generator, error) {
	g := &Generator{}
	gv := schema.GroupVersion{Group: agentsandbox.ClaimGVR.Group, Version: agentsandbox.ClaimGVR.Version}
	g.newClient = func() (rest.Interface, error) {
		cfg := rest.CopyConfig(base)
		cfg.QPS, cfg.Burst = -1, 0
		cfg.APIPath, cfg.GroupVersion = "/apis", &gv
		cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
		cfg.ContentType = "application/json"
		// A custom dialer makes client-go build a separate transport (and connection) per shard.
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		cfg.Dial = d.DialContext
		return rest.RESTClientFor(cfg)
	}
	if err := g.grow(connections); err != nil {
		return nil, err
	}
	if qps > 0 {
		if burst < 1 {
			burst = 1
		}
		g.limiter = flowcontrol.NewTokenBucketRateLimiter(float32(qps), burst)
	}
	return g, nil
}

// CreatesPerConnection is the most creates the generator has in flight on one connection: 90,
// below kube-apiserver's HTTP/2 stream limit per connection when --http2-max-streams-per-connection
// is not set (100, k8s.io/apiserver pkg/server/secure_serving.go). A request that finds its
// connection's streams all taken makes the HTTP/2 transport dial a new connection of its own: at
// 5,000 creates/s against a loopback API server, a short stall (a GC pause, a busy core) put more
// than 100 creates in flight and the requests waiting behind it dialled 855 TLS connections in two
// seconds (all but a few thrown away once the handshake was paid), which took the create rate down
// to 1,400/s and the send lag to seconds. The generator therefore opens one connection per 90
// creates it may have in flight, in Warm, and gives each at most 90 of its workers. Not 100: the
// client counts a finished stream until the goroutine that sent it has cleaned up, a moment after
// the response was read, so a create that follows a finished one at once on a connection carrying
// 100 finds it full and dials (a burst of 200 at 100 in flight on one connection opened a second
// in 2 of 3 runs; at 99, 95 and 90 in flight, in none of 3 each).
const CreatesPerConnection = 90

// shards is how many connections n creates in flight need: one per CreatesPerConnection, and
// never fewer than the generator has.
func (g *Generator) shards(n int) int {
	return max(len(g.clients), (n+CreatesPerConnection-1)/CreatesPerConnection)
}

// grow adds connections until there are n.
func (g *Generator) grow(n int) error {
	for len(g.clients) < n {
		c, err := g.newClient()
		if err != nil {
			return fmt.Errorf("load generator client %d: %w", len(g.clients), err)
		}
		g.clients = append(g.clients, c)
	}
	return nil
}

// maxInFlight is MaxInFlight, or DefaultMaxInFlight when it is not set.
func (g *Generator) maxInFlight() int {
	if g.MaxInFlight <= 0 {
		return DefaultMaxInFlight
	}
	return g.MaxInFlight
}

// Warm opens every shard's connection (TLS and HTTP/2 set-up) with a cheap list, so the burst
// does not pay for handshakes and its first claims' latency is not inflated by them: as many
// connections as MaxInFlight creates need (CreatesPerConnection).
func (g *Generator) Warm(ctx context.Context) error {
	if err := g.grow(g.shards(g.maxInFlight())); err != nil {
		return err
	}
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
	return g.template().body(nil, i, intent)
}

// bodyTemplate is the generator's claim JSON cut around the two values that differ from claim to
// claim, the name's index and the intent stamp, so that a create encodes no map and no struct: the
// bytes are json.Marshal's of object (TestBodyTemplateIsMarshal). Encoding was 15% of the CPU the
// generator's send took in a profile at 3,000 creates/s; BenchmarkClaimBody: json.Marshal 10.0 us
// and 20 allocations (1,560 B) a claim, the template 0.3 us and none but the body's own buffer.
type bodyTemplate struct {
	head []byte // up to the name's index: {"apiVersion":...,"metadata":{"name":"<prefix>
	mid  []byte // from the name's end to the intent stamp
	tail []byte // from the intent stamp's end
}

// template cuts the claim JSON for the generator's current namespace, pool, prefix and labels.
func (g *Generator) template() bodyTemplate {
	str := func(v string) []byte {
		raw, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("encode %q: %v", v, err)) // a string always encodes
		}
		return raw
	}
	labels, err := json.Marshal(g.object(0, time.Time{}).Metadata.Labels)
	if err != nil {
		panic(fmt.Sprintf("encode labels: %v", err)) // a map of strings always encodes
	}
	prefix := str(g.Prefix)
	var t bodyTemplate
	t.head = append([]byte(`{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxClaim","metadata":{"name":`), prefix[:len(prefix)-1]...)
	t.mid = append([]byte(`","namespace":`), str(g.Namespace)...)
	t.mid = append(append(t.mid, `,"labels":`...), labels...)
	t.mid = append(append(append(t.mid, `,"annotations":{`...), str(agentsandbox.ClientRequestedAtAnnot)...), `:"`...)
	t.tail = append(append([]byte(`"}},"spec":{"warmPoolRef":{"name":`), str(g.Pool)...), `}}}`...)
	return t
}

// body appends claim i's JSON, stamped with intent, to b.
func (t bodyTemplate) body(b []byte, i int, intent time.Time) []byte {
	b = append(b, t.head...)
	if i >= 0 && i < 100000 { // ClaimName's %05d
		var digits [5]byte
		for k := 4; k >= 0; k-- {
			digits[k] = byte('0' + i%10)
			i /= 10
		}
		b = append(b, digits[:]...)
	} else {
		b = fmt.Appendf(b, "%05d", i)
	}
	b = append(b, t.mid...)
	b = intent.UTC().AppendFormat(b, time.RFC3339Nano) // digits, '-', ':', '.', 'T', 'Z': nothing to escape
	return append(b, t.tail...)
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
// Worker w sends on connection w mod connections, so no connection carries more than
// CreatesPerConnection creates at once (Fire adds connections Warm did not open). Fire is not
// safe for concurrent use.
func (g *Generator) Fire(ctx context.Context, start time.Time, sched Schedule) []Sent {
	out := make([]Sent, len(sched))
	order := make([]int, len(sched))
	for i := range sched {
		order[i] = i
		out[i] = Sent{Index: i, Name: g.ClaimName(i), Planned: start.Add(sched[i])}
	}
	sort.SliceStable(order, func(a, b int) bool { return sched[order[a]] < sched[order[b]] })
	workers := min(g.maxInFlight(), len(sched))
	if err := g.grow(g.shards(workers)); err != nil {
		for i := range out {
			out[i].Err = "not sent: " + err.Error()
		}
		return out
	}
	tpl := g.template()
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		cl := g.clients[w%len(g.clients)]
		go func() {
			defer wg.Done()
			for i := range work {
				g.send(ctx, cl, tpl, &out[i])
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

// send creates one claim on cl, its body from tpl, and records its intent, ack and error.
func (g *Generator) send(ctx context.Context, cl rest.Interface, tpl bodyTemplate, s *Sent) {
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
	body := tpl.body(make([]byte, 0, 512), s.Index, s.Intent)
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
