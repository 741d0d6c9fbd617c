package loadgen

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/brakebench/brakebench/internal/stats"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
)

// The generator alone, against a loopback stand-in for the API server (issue 24, point 5): it
// must sustain 5,000 creates/s from one process with send lag p99 under 10 ms.
const (
	rateBoundCreates = 5000.0                // creates/s the generator must sustain from one process
	rateBoundShare   = 0.95                  // achieved/offered at or above which a rate is sustained
	rateBoundLagP99  = 10 * time.Millisecond // send lag p99 below which a rate is sustained
	rateBoundTries   = 3                     // tries at the bound's rate before it fails
)

// The stand-in serves the names the generator uses.
const (
	stubNamespace = "bb-0a1b2c3d-01" // a cell's namespace: bb-<run id>-<cell index>
	stubPool      = "bench-pool"
	stubPrefix    = "claim-"
)

// apiStub answers the generator the way kube-apiserver answers a SandboxClaim create: HTTPS with
// HTTP/2 and the server's HTTP/2 settings, status 201 with the created object (the request's
// object plus the metadata the server adds, managedFields among them) as JSON with the headers the
// API server sends; and the list Warm sends. Anything else is counted as unexpected (and answered
// 404). The handler does the least it can (it reads the request body and writes a prepared
// response) because it shares the machine's cores with the generator it measures.
type apiStub struct {
	srv        *httptest.Server
	created    []byte // the response to every create
	creates    atomic.Int64
	unexpected atomic.Int64
	notHTTP2   atomic.Int64
	conns      atomic.Int64 // connections accepted (each a TLS handshake)
	audit      atomic.Uint64
}

// newAPIStub starts the stand-in; created is its answer to every create.
func newAPIStub(created []byte) *apiStub {
	s := &apiStub{created: created}
	createPath := "/apis/" + agentsandbox.ClaimGVR.Group + "/" + agentsandbox.ClaimGVR.Version + "/namespaces/" + stubNamespace + "/" + agentsandbox.ClaimGVR.Resource
	list := []byte(`{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","items":[],"kind":"SandboxClaimList","metadata":{"resourceVersion":"4711"}}`)
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			s.notHTTP2.Add(1)
		}
		_, _ = io.Copy(io.Discard, r.Body)
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		h["Cache-Control"] = []string{"no-cache, private"}
		h["X-Kubernetes-Pf-Flowschema-Uid"] = []string{"5c3f5bd4-9a4e-4bd4-a7a2-33c0b7cdbbcc"}
		h["X-Kubernetes-Pf-Prioritylevel-Uid"] = []string{"0a7dde6e-6c28-4c6f-b2cb-4e1b1b0bd5a1"}
		h["Audit-Id"] = []string{fmt.Sprintf("6d1c2a9e-3f4b-4c5d-8e7f-%012x", s.audit.Add(1))}
		switch {
		case r.Method == http.MethodPost && r.URL.Path == createPath:
			s.creates.Add(1)
			h["Content-Length"] = []string{strconv.Itoa(len(s.created))}
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(s.created)
		case r.Method == http.MethodGet && r.URL.Path == createPath:
			_, _ = w.Write(list)
		default:
			s.unexpected.Add(1)
			http.NotFound(w, r)
		}
	}))
	s.srv.EnableHTTP2 = true
	// kube-apiserver's HTTP/2 settings (k8s.io/apiserver v0.37.2, pkg/server/secure_serving.go,
	// with --http2-max-streams-per-connection unset): 100 concurrent streams per connection,
	// 256 KiB per-stream receive buffer and read frame size, a connection buffer of 100 streams'.
	s.srv.Config.HTTP2 = &http.HTTP2Config{
		MaxConcurrentStreams:          100,
		MaxReceiveBufferPerStream:     256 << 10,
		MaxReadFrameSize:              256 << 10,
		MaxReceiveBufferPerConnection: 100 * 256 << 10,
	}
	s.srv.Config.IdleTimeout = 90 * time.Second
	// Handshakes a client abandons are logged by the server; the conns column counts them.
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.srv.StartTLS()
	return s
}

// config is a client config that trusts the stand-in's certificate.
func (s *apiStub) config() *rest.Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
	return &rest.Config{Host: s.srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

func (s *apiStub) Close() { s.srv.Close() }

// stubGenerator is the generator as a cell builds it with the configuration's defaults
// (loadgen.connections 1, loadgen.qps 0: no client-side limiter; MaxInFlight 0:
// DefaultMaxInFlight, 1000 creates in flight at most), and with a cell's labels.
func stubGenerator(cfg *rest.Config) (*Generator, error) {
	g, err := NewGenerator(cfg, 1, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("generator against the stand-in: %w", err)
	}
	g.Namespace, g.Pool, g.Prefix = stubNamespace, stubPool, stubPrefix
	g.Labels = map[string]string{"app.kubernetes.io/managed-by": "brakebench", "brakebench.io/run-id": "0a1b2c3d"}
	return g, nil
}

// createdClaim is what the API server returns for g's claim i created at: the object as sent plus
// the metadata the server adds (uid, resourceVersion, generation, creationTimestamp and the
// managedFields entry of the create). A custom resource is served as an unstructured map, so the
// keys are sorted as encoding/json sorts a map's.
func createdClaim(g *Generator, i int, at time.Time) ([]byte, error) {
	var obj map[string]any
	if err := json.Unmarshal(g.Body(i, at), &obj); err != nil {
		return nil, fmt.Errorf("decode claim %d: %w", i, err)
	}
	md := obj["metadata"].(map[string]any)
	fields := func(m any) map[string]any {
		f := map[string]any{".": map[string]any{}}
		for k := range m.(map[string]any) {
			f["f:"+k] = map[string]any{}
		}
		return f
	}
	md["uid"] = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
	md["resourceVersion"] = "1234567"
	md["generation"] = 1
	md["creationTimestamp"] = at.UTC().Truncate(time.Second).Format(time.RFC3339)
	md["managedFields"] = []any{map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "fieldsType": "FieldsV1", "manager": "brakebench", "operation": "Update",
		"time": at.UTC().Truncate(time.Second).Format(time.RFC3339),
		"fieldsV1": map[string]any{
			"f:metadata": map[string]any{"f:annotations": fields(md["annotations"]), "f:labels": fields(md["labels"])},
			"f:spec":     map[string]any{".": map[string]any{}, "f:warmPoolRef": map[string]any{".": map[string]any{}, "f:name": map[string]any{}}},
		},
	}}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode created claim %d: %w", i, err)
	}
	return raw, nil
}

// rateStep is what one offered rate achieved.
type rateStep struct {
	Offered  float64 // creates/s planned
	Claims   int
	Created  int     // POSTs answered 201
	Errors   int     // POSTs that failed or were not sent
	Achieved float64 // creates answered per second, from the first planned send to the last answer
	LagP50   time.Duration
	LagP99   time.Duration
	LagMax   time.Duration
	AckP99   time.Duration // intent -> answer
	Warmed   int64         // connections the stand-in accepted while the generator warmed
	Conns    int64         // connections the stand-in accepted during the step, after Warm
	CPU      time.Duration // the process's CPU time (user + system) per create: generator and stand-in
}

// Sustained reports whether the step met the bound: every create answered, at >= 95% of the
// offered rate, with send lag p99 under 10 ms.
func (s rateStep) Sustained() bool {
	return s.Errors == 0 && s.Achieved >= rateBoundShare*s.Offered && s.LagP99 < rateBoundLagP99
}

// summarizeStep reduces one Fire at offered creates/s from start to a rateStep. Achieved is the
// creates answered 201 over the time from start (the first planned send) to the last answer;
// send lag is intent - planned, over the claims that were sent.
func summarizeStep(offered float64, start time.Time, sent []Sent) rateStep {
	st := rateStep{Offered: offered, Claims: len(sent)}
	var lags, acks []float64
	last := start
	for _, s := range sent {
		if !s.Intent.IsZero() {
			lags = append(lags, float64(s.Intent.Sub(s.Planned)))
		}
		if s.Err != "" {
			st.Errors++
			continue
		}
		st.Created++
		acks = append(acks, float64(s.Acked.Sub(s.Intent)))
		if s.Acked.After(last) {
			last = s.Acked
		}
	}
	if span := last.Sub(start); span > 0 {
		st.Achieved = float64(st.Created) / span.Seconds()
	}
	lq, aq := stats.Summarize(lags), stats.Summarize(acks)
	dur := func(v float64) time.Duration {
		if math.IsNaN(v) {
			return 0
		}
		return time.Duration(v)
	}
	st.LagP50, st.LagP99, st.LagMax, st.AckP99 = dur(lq.P50), dur(lq.P99), dur(lq.Max), dur(aq.P99)
	return st
}

// saturation is the first step (in the order run) that did not sustain its offered rate, and
// whether there was one.
func saturation(steps []rateStep) (rateStep, bool) {
	for _, s := range steps {
		if !s.Sustained() {
			return s, true
		}
	}
	return rateStep{}, false
}

// fireAt fires rate creates/s, evenly spaced, for d at a fresh generator (warmed as a cell warms
// it) against stub, and summarizes what it achieved.
func fireAt(ctx context.Context, stub *apiStub, rate float64, d time.Duration) (rateStep, error) {
	g, err := stubGenerator(stub.config())
	if err != nil {
		return rateStep{}, err
	}
	warm := stub.conns.Load()
	if err := g.Warm(ctx); err != nil {
		return rateStep{}, fmt.Errorf("warm the generator at %.0f/s: %w", rate, err)
	}
	sched := Steps([]float64{rate}, d)
	conns := stub.conns.Load()
	cpu0, err := processCPU()
	if err != nil {
		return rateStep{}, err
	}
	start := time.Now().Add(50 * time.Millisecond) // as a cell starts its burst after warming
	sent := g.Fire(ctx, start, sched)
	cpu1, err := processCPU()
	if err != nil {
		return rateStep{}, err
	}
	st := summarizeStep(rate, start, sent)
	st.Warmed, st.Conns = conns-warm, stub.conns.Load()-conns
	if st.Created > 0 {
		st.CPU = (cpu1 - cpu0) / time.Duration(st.Created)
	}
	return st, nil
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// BenchmarkGeneratorRate fires the real generator (NewGenerator, Warm, Fire: raw POSTs over
// HTTP/2, loadgen.connections 1, no client-side limiter, at most DefaultMaxInFlight creates in
// flight: a cell's defaults, so Warm opens 12 connections, one per CreatesPerConnection), a fresh
// one per rate, at a loopback HTTPS stand-in for the API server at
// increasing open-loop rates (evenly spaced, BRAKEBENCH_GENRATE_SECONDS each, default 2; rates
// from BRAKEBENCH_GENRATE_RATES, default 1000,2000,5000,10000,15000,20000), and prints per rate the
// achieved create rate and the send lag (planned -> just before the POST). It reports the first
// rate that is not sustained (achieved below 95% of offered, any error, or lag p99 at or above
// 10 ms) as the saturation point. It fails when 5,000 creates/s is not sustained in any of 3
// tries. The stand-in runs in the same process on the same cores: its own cost (TLS, HTTP/2,
// the handler) is counted against the generator, as is the per-create CPU it prints.
func BenchmarkGeneratorRate(b *testing.B) {
	rates := []float64{1000, 2000, rateBoundCreates, 10000, 15000, 20000}
	if v := os.Getenv("BRAKEBENCH_GENRATE_RATES"); v != "" {
		rates = nil
		for _, f := range strings.Split(v, ",") {
			r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || r <= 0 {
				b.Fatalf("BRAKEBENCH_GENRATE_RATES %q: %q is not a rate", v, f)
			}
			rates = append(rates, r)
		}
	}
	d := 2 * time.Second
	if v, err := strconv.ParseFloat(os.Getenv("BRAKEBENCH_GENRATE_SECONDS"), 64); err == nil && v > 0 {
		d = time.Duration(v * float64(time.Second))
	}
	g, err := stubGenerator(&rest.Config{Host: "https://127.0.0.1"})
	if err != nil {
		b.Fatal(err)
	}
	created, err := createdClaim(g, 12345, time.Date(2026, 12, 3, 12, 0, 0, 123456789, time.UTC))
	if err != nil {
		b.Fatal(err)
	}
	stub := newAPIStub(created)
	defer stub.Close()
	ctx := context.Background()
	fmt.Printf("generator alone: loopback HTTPS + HTTP/2 stand-in (100 streams/connection), 201 + created claim of %d bytes; "+
		"connections 1 (the default), no client limiter, MaxInFlight %d (%d per connection); %s per rate; "+
		"conns: opened by Warm + during the step\n", len(created), DefaultMaxInFlight, CreatesPerConnection, d)
	fmt.Printf("%10s %8s %10s %9s %9s %9s %9s %7s %6s %10s %s\n", "offered/s", "claims", "achieved/s", "lag p50", "lag p99", "lag max", "ack p99", "errors", "conns", "cpu/create", "")
	for i := 0; i < b.N; i++ {
		var steps []rateStep
		for _, rate := range rates {
			var st rateStep
			// The bound's rate is tried up to rateBoundTries times: one try a neighbour's burst of
			// CPU disturbed is not the generator's ceiling; a generator that cannot sustain the
			// rate misses it in every try.
			tries := 1
			if rate == rateBoundCreates {
				tries = rateBoundTries
			}
			for try := 1; try <= tries; try++ {
				st, err = fireAt(ctx, stub, rate, d)
				if err != nil {
					b.Fatal(err)
				}
				verdict := "sustained"
				if !st.Sustained() {
					verdict = "NOT sustained"
				}
				if tries > 1 {
					verdict += fmt.Sprintf(" (try %d of at most %d)", try, tries)
				}
				fmt.Printf("%10.0f %8d %10.0f %9s %9s %9s %9s %7d %6s %10s %s\n", st.Offered, st.Claims, st.Achieved,
					st.LagP50.Round(time.Microsecond), st.LagP99.Round(time.Microsecond), st.LagMax.Round(time.Microsecond), st.AckP99.Round(time.Microsecond),
					st.Errors, fmt.Sprintf("%d+%d", st.Warmed, st.Conns), st.CPU.Round(time.Microsecond), verdict)
				if st.Sustained() {
					break
				}
			}
			steps = append(steps, st)
			b.ReportMetric(st.Achieved, fmt.Sprintf("achieved@%.0f/s", rate))
		}
		if n := stub.unexpected.Load() + stub.notHTTP2.Load(); n > 0 {
			b.Fatalf("the stand-in saw %d unexpected requests and %d not over HTTP/2", stub.unexpected.Load(), stub.notHTTP2.Load())
		}
		if sat, ok := saturation(steps); ok {
			fmt.Printf("saturates at %.0f creates/s offered (achieved %.0f/s, %.1f%%; send lag p99 %s; %d errors)\n",
				sat.Offered, sat.Achieved, 100*sat.Achieved/sat.Offered, sat.LagP99.Round(time.Microsecond), sat.Errors)
		} else {
			fmt.Printf("not saturated up to %.0f creates/s offered\n", rates[len(rates)-1])
		}
		checked := false
		for _, st := range steps {
			if st.Offered != rateBoundCreates {
				continue
			}
			checked = true
			if !st.Sustained() {
				b.Fatalf("at %.0f creates/s offered the generator achieved %.0f/s (%.1f%%, bound %.0f%%), send lag p99 %s (bound < %s), %d errors, in each of %d tries",
					st.Offered, st.Achieved, 100*st.Achieved/st.Offered, 100*rateBoundShare, st.LagP99, rateBoundLagP99, st.Errors, rateBoundTries)
			}
		}
		if !checked {
			fmt.Printf("the %.0f creates/s bound was not run (BRAKEBENCH_GENRATE_RATES)\n", rateBoundCreates)
		}
	}
}

// summarizeStep and saturation on planted sends: achieved rate over first planned -> last answer,
// send lag quantiles, and the first step that misses a bound.
func TestSummarizeStep(t *testing.T) {
	start := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	// n sends at rate/s, each sent lag(k) after its plan and answered ack after that; errs fail.
	sends := func(n int, rate float64, lag func(k int) time.Duration, ack time.Duration, errs int) []Sent {
		out := make([]Sent, n)
		for k := range out {
			p := start.Add(time.Duration(float64(k) / rate * float64(time.Second)))
			out[k] = Sent{Index: k, Planned: p, Intent: p.Add(lag(k)), Acked: p.Add(lag(k) + ack)}
			if k < errs {
				out[k].Err = "boom"
			}
		}
		return out
	}
	flat := func(d time.Duration) func(int) time.Duration { return func(int) time.Duration { return d } }
	for _, tc := range []struct {
		name              string
		offered           float64
		sent              []Sent
		wantAchievedRange [2]float64
		wantP50, wantP99  time.Duration
		sustained         bool
	}{
		{"on time", 1000, sends(2000, 1000, flat(ms(0.5)), ms(1), 0), [2]float64{995, 1000}, ms(0.5), ms(0.5), true},
		// The last 2% of sends 20 ms late: p99 is the 99th percent's lag.
		{"late tail", 1000, sends(2000, 1000, func(k int) time.Duration {
			if k >= 1960 {
				return ms(20)
			}
			return ms(1)
		}, ms(1), 0), [2]float64{990, 1000}, ms(1), ms(20), false},
		// Every create answered 100 ms after its plan: a 2 s step ends at 2.1 s.
		{"slow answers", 1000, sends(2000, 1000, flat(0), ms(100), 0), [2]float64{950, 953}, 0, 0, true},
		{"achieved below 95%", 1000, sends(2000, 900, flat(0), ms(1), 0), [2]float64{899, 901}, 0, 0, false},
		{"an error", 1000, sends(2000, 1000, flat(0), ms(1), 1), [2]float64{999, 1000}, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := summarizeStep(tc.offered, start, tc.sent)
			if st.Achieved < tc.wantAchievedRange[0] || st.Achieved > tc.wantAchievedRange[1] {
				t.Errorf("achieved %.1f/s, want %v", st.Achieved, tc.wantAchievedRange)
			}
			if st.LagP50 != tc.wantP50 || st.LagP99 != tc.wantP99 {
				t.Errorf("lag p50 %s p99 %s, want %s %s", st.LagP50, st.LagP99, tc.wantP50, tc.wantP99)
			}
			if st.Sustained() != tc.sustained {
				t.Errorf("sustained %v, want %v (%+v)", st.Sustained(), tc.sustained, st)
			}
		})
	}
	ok := rateStep{Offered: 1000, Achieved: 1000}
	bad := rateStep{Offered: 5000, Achieved: 4000}
	if _, found := saturation([]rateStep{ok, ok}); found {
		t.Error("saturation found where every step was sustained")
	}
	if s, found := saturation([]rateStep{ok, bad, ok}); !found || s.Offered != 5000 {
		t.Errorf("saturation %+v %v, want the 5000/s step", s, found)
	}
}

// The stand-in answers the real generator as the API server would: over HTTPS and HTTP/2, 201
// with the created claim, on the connections Warm opened; its answer is a created claim of a
// realistic size.
func TestAPIStubAnswersTheGenerator(t *testing.T) {
	g, err := stubGenerator(&rest.Config{Host: "https://127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	created, err := createdClaim(g, 7, time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(created, &obj); err != nil {
		t.Fatal(err)
	}
	md, _ := obj["metadata"].(map[string]any)
	if md["name"] != "claim-00007" || md["uid"] == nil || md["resourceVersion"] == nil || md["managedFields"] == nil || len(created) < 800 || len(created) > 2048 {
		t.Errorf("created claim (%d bytes): %s", len(created), created)
	}
	stub := newAPIStub(created)
	defer stub.Close()
	st, err := fireAt(context.Background(), stub, 500, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if st.Claims != 50 || st.Created != 50 || st.Errors != 0 || stub.creates.Load() != 50 {
		t.Errorf("%+v; the stand-in counted %d creates", st, stub.creates.Load())
	}
	if stub.unexpected.Load() != 0 || stub.notHTTP2.Load() != 0 || st.Conns != 0 {
		t.Errorf("%d unexpected requests, %d not over HTTP/2, %d connections opened after Warm", stub.unexpected.Load(), stub.notHTTP2.Load(), st.Conns)
	}
}
