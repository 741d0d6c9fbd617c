package loadgen

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/brakebench/brakebench/internal/progress"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
)

func TestBodyAndClaimAgree(t *testing.T) {
	g := &Generator{Namespace: "ns", Pool: "p", Prefix: "c-", Labels: map[string]string{"run": "r1"}}
	intent := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	u := g.Claim(7, intent)
	if u.GetName() != "c-00007" || u.GetNamespace() != "ns" || u.GetKind() != "SandboxClaim" || u.GetAPIVersion() != "extensions.agents.x-k8s.io/v1beta1" {
		t.Errorf("identity: %s/%s %s %s", u.GetNamespace(), u.GetName(), u.GetAPIVersion(), u.GetKind())
	}
	if l := u.GetLabels(); l["run"] != "r1" || l["agents.x-k8s.io/created-by"] != "go-client" {
		t.Errorf("labels %v", l)
	}
	at, err := time.Parse(time.RFC3339Nano, u.GetAnnotations()[agentsandbox.ClientRequestedAtAnnot])
	if err != nil || !at.Equal(intent) {
		t.Errorf("intent annotation %q (%v), want %s", u.GetAnnotations()[agentsandbox.ClientRequestedAtAnnot], err, intent)
	}
	if ref, _, _ := unstructuredString(u.Object, "spec", "warmPoolRef", "name"); ref != "p" {
		t.Errorf("warmPoolRef %q", ref)
	}
}

func unstructuredString(o map[string]any, path ...string) (string, bool, error) {
	for _, p := range path[:len(path)-1] {
		o, _ = o[p].(map[string]any)
	}
	s, ok := o[path[len(path)-1]].(string)
	return s, ok, nil
}

// Fire against an HTTP endpoint standing in for the API server's create path: every claim is
// POSTed once as JSON to the claims collection, a refused create is recorded as the claim's
// error, and intent, ack and progress are filled in.
func TestFire(t *testing.T) {
	var mu sync.Mutex
	names := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/ns/sandboxclaims" || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"), http.StatusBadRequest)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var obj claimObject
		if err := json.Unmarshal(raw, &obj); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		names[obj.Metadata.Name]++
		mu.Unlock()
		if strings.HasSuffix(obj.Metadata.Name, "3") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"already exists","reason":"AlreadyExists","code":409}`))
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(raw)
	}))
	defer srv.Close()
	g, err := NewGenerator(&rest.Config{Host: srv.URL}, 2, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	g.Namespace, g.Pool, g.Prefix = "ns", "p", "c-"
	g.Progress = progress.Discard().Counter("sent", 20)
	start := time.Now().Add(10 * time.Millisecond)
	sent := g.Fire(context.Background(), start, Burst(20))
	if len(sent) != 20 || len(names) != 20 {
		t.Fatalf("%d sent, %d distinct names received", len(sent), len(names))
	}
	failed := 0
	for i, s := range sent {
		if names[s.Name] != 1 || s.Index != i {
			t.Errorf("claim %d (%s) received %d times", i, s.Name, names[s.Name])
		}
		if s.Intent.Before(start) || s.Acked.Before(s.Intent) {
			t.Errorf("claim %s: planned %s intent %s acked %s", s.Name, s.Planned, s.Intent, s.Acked)
		}
		if s.Err != "" {
			failed++
			if !strings.Contains(s.Err, "already exists") {
				t.Errorf("claim %s error %q", s.Name, s.Err)
			}
		}
	}
	if failed != 2 { // c-00003 and c-00013
		t.Errorf("%d failed creates, want 2", failed)
	}
}

// At most MaxInFlight creates are in flight at once; the rest wait (as send lag), and every
// claim is still sent once, none before its planned time.
func TestFireBoundsInFlight(t *testing.T) {
	var cur, peak atomic.Int32
	var mu sync.Mutex
	var order []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := cur.Add(1)
		defer cur.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		var obj claimObject
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &obj)
		mu.Lock()
		order = append(order, obj.Metadata.Name)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	g, err := NewGenerator(&rest.Config{Host: srv.URL}, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	g.Namespace, g.Pool, g.Prefix, g.MaxInFlight = "ns", "p", "c-", 3
	// Scheduled out of index order: claim 0 last.
	sched := Schedule{40 * time.Millisecond, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	sent := g.Fire(context.Background(), time.Now(), sched)
	for _, s := range sent {
		if s.Err != "" {
			t.Fatalf("%s: %s", s.Name, s.Err)
		}
	}
	if p := peak.Load(); p > 3 || p < 2 {
		t.Errorf("peak in-flight creates %d, want at most 3 (and concurrency at all)", p)
	}
	// Claim 0 is planned last: it is never sent before its time (arrival order between workers
	// is a race, so it is not asserted).
	if len(order) != 12 || sent[0].Intent.Sub(sent[0].Planned) < 0 {
		t.Errorf("creates %v; claim 0 planned %s sent %s", order, sent[0].Planned, sent[0].Intent)
	}
	// The last claims waited for a free worker: their send lag shows it.
	if lag := sent[11].Intent.Sub(sent[11].Planned); lag < 40*time.Millisecond {
		t.Errorf("claim 11 send lag %s, want >= 40ms (three rounds of 20 ms ahead of it)", lag)
	}
}

// A context that ends before the schedule does leaves the remaining claims marked not sent.
func TestFireCancelled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	defer srv.Close()
	g, err := NewGenerator(&rest.Config{Host: srv.URL}, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	g.Namespace, g.Pool, g.Prefix = "ns", "p", "c-"
	// Long enough for the two claims due now to be sent on a loaded machine (the race detector,
	// a busy CI host); the others are an hour out.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	sent := g.Fire(ctx, time.Now(), Schedule{0, 0, time.Hour, time.Hour})
	if sent[0].Err != "" || sent[1].Err != "" {
		t.Errorf("claims due now: %q %q", sent[0].Err, sent[1].Err)
	}
	for _, s := range sent[2:] {
		if !strings.HasPrefix(s.Err, "not sent") || !s.Intent.IsZero() {
			t.Errorf("claim %s planned an hour out: err %q intent %s", s.Name, s.Err, s.Intent)
		}
	}
}
