package loadgen

import (
	"context"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// streamCounter is an HTTPS + HTTP/2 server with kube-apiserver's stream limit per connection
// (100) whose creates take hold; it counts the connections it accepted and the most requests it
// had in flight at once, on one connection and in all.
type streamCounter struct {
	srv         *httptest.Server
	mu          sync.Mutex
	conns       int
	cur         map[string]int // in flight per connection (client address)
	peakPerConn int
	total       int
	peakTotal   int
	creates     int
}

func newStreamCounter(hold time.Duration) *streamCounter {
	s := &streamCounter{cur: map[string]int{}}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte(`{"kind":"SandboxClaimList","apiVersion":"extensions.agents.x-k8s.io/v1beta1","metadata":{},"items":[]}`))
			return
		}
		s.mu.Lock()
		s.creates++
		s.cur[r.RemoteAddr]++
		s.total++
		s.peakPerConn, s.peakTotal = max(s.peakPerConn, s.cur[r.RemoteAddr]), max(s.peakTotal, s.total)
		s.mu.Unlock()
		time.Sleep(hold)
		s.mu.Lock()
		s.cur[r.RemoteAddr]--
		s.total--
		s.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	s.srv.EnableHTTP2 = true
	s.srv.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 100}
	s.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
		}
	}
	s.srv.StartTLS()
	return s
}

func (s *streamCounter) config() *rest.Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
	return &rest.Config{Host: s.srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

// Warm opens one connection per CreatesPerConnection creates MaxInFlight allows (and at least the
// connections asked for); a burst that fills every slot, twice, opens no other connection, and no
// connection carries more than CreatesPerConnection creates at once.
func TestFireShardsOverConnections(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		connections, maxInFlight int
		wantConns                int
	}{
		{"one slot", 1, 1, 1},
		{"a connection's share", 1, CreatesPerConnection, 1},
		{"one more than a connection's share", 1, CreatesPerConnection + 1, 2},
		{"250 in flight", 1, 250, 3},
		{"the default, 1000 in flight", 1, DefaultMaxInFlight, 12},
		{"more connections asked for than needed", 4, CreatesPerConnection, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStreamCounter(30 * time.Millisecond)
			defer s.srv.Close()
			g, err := NewGenerator(s.config(), tc.connections, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			g.Namespace, g.Pool, g.Prefix, g.MaxInFlight = "ns", "p", "c-", tc.maxInFlight
			if err := g.Warm(context.Background()); err != nil {
				t.Fatal(err)
			}
			n := 2 * tc.maxInFlight // every slot taken, twice
			sent := g.Fire(context.Background(), time.Now(), Burst(n))
			for _, x := range sent {
				if x.Err != "" {
					t.Fatalf("%s: %s", x.Name, x.Err)
				}
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.creates != n || s.conns != tc.wantConns {
				t.Errorf("%d creates on %d connections, want %d on %d", s.creates, s.conns, n, tc.wantConns)
			}
			if s.peakPerConn > CreatesPerConnection || s.peakTotal > tc.maxInFlight {
				t.Errorf("peak in flight %d on one connection (limit %d), %d in all (MaxInFlight %d)", s.peakPerConn, CreatesPerConnection, s.peakTotal, tc.maxInFlight)
			}
			if tc.maxInFlight > 1 && s.peakTotal < 2 {
				t.Errorf("peak in flight %d: no concurrency at all", s.peakTotal)
			}
		})
	}
}
