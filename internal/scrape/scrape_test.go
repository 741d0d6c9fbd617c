package scrape

import (
	"math"
	"strings"
	"testing"
)

const before = `# TYPE apiserver_request_total counter
apiserver_request_total{verb="POST",resource="pods",code="201"} 10
apiserver_request_total{verb="GET",resource="pods",code="200"} 5
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 100.5
# TYPE agent_sandbox_client_claim_startup_latency_ms histogram
agent_sandbox_client_claim_startup_latency_ms_bucket{launch_type="warm",le="100"} 1
agent_sandbox_client_claim_startup_latency_ms_bucket{launch_type="warm",le="250"} 1
agent_sandbox_client_claim_startup_latency_ms_bucket{launch_type="warm",le="500"} 1
agent_sandbox_client_claim_startup_latency_ms_bucket{launch_type="warm",le="+Inf"} 1
agent_sandbox_client_claim_startup_latency_ms_sum{launch_type="warm"} 50
agent_sandbox_client_claim_startup_latency_ms_count{launch_type="warm"} 1
# TYPE go_goroutines gauge
go_goroutines 12
`

const after = `# TYPE apiserver_request_total counter
apiserver_request_total{verb="POST",resource="pods",code="201"} 310
apiserver_request_total{verb="GET",resource="pods",code="200"} 5
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 112.75
# TYPE agent_sandbox_client_claim_startup_latency_ms histogram
agent_sandbox_client_claim_startup_latency_ms_bucket{launch_type="warm",le="100"} 1
agent_sandbox_client_claim_startup_latency_ms_bucket{launch_type="warm",le="250"} 51
agent_sandbox_client_claim_startup_latency_ms_bucket{launch_type="warm",le="500"} 91
agent_sandbox_client_claim_startup_latency_ms_bucket{launch_type="warm",le="+Inf"} 101
agent_sandbox_client_claim_startup_latency_ms_sum{launch_type="warm"} 30000
agent_sandbox_client_claim_startup_latency_ms_count{launch_type="warm"} 101
# TYPE go_goroutines gauge
go_goroutines 40
`

func TestParseDeltaQuantile(t *testing.T) {
	b, err := Parse(strings.NewReader(before))
	if err != nil {
		t.Fatal(err)
	}
	a, err := Parse(strings.NewReader(after))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range a {
		if s.Name == "go_goroutines" {
			t.Error("families outside Kept must be dropped")
		}
	}
	d := Delta(b, a)
	if got := Sum(d, "apiserver_request_total", map[string]string{"verb": "POST"}); got != 300 {
		t.Errorf("POST delta = %v, want 300", got)
	}
	if got := Sum(d, "apiserver_request_total", map[string]string{"verb": "GET"}); got != 0 {
		t.Errorf("unchanged counters are dropped, got %v", got)
	}
	if got := Sum(d, "process_cpu_seconds_total", nil); got != 12.25 {
		t.Errorf("cpu delta = %v", got)
	}
	h := Merge(d, "agent_sandbox_client_claim_startup_latency_ms", nil)
	if h.Count != 100 {
		t.Fatalf("histogram delta count %v, want 100", h.Count)
	}
	// 50 of the 100 new observations are in (100,250], 40 in (250,500], 10 above 500.
	cases := []struct{ q, want float64 }{{0.5, 250}, {0.25, 175}, {0.7, 375}, {0.9, 500}, {0.99, 500}}
	for _, c := range cases {
		if got := HistogramQuantile(h, c.q); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("q%.2f = %v, want %v", c.q, got, c.want)
		}
	}
	if !math.IsNaN(HistogramQuantile(Series{}, 0.5)) {
		t.Error("empty histogram must give NaN")
	}
}

func TestCounterResetKeepsAfter(t *testing.T) {
	b := []Series{{Name: "x_total", Type: "counter", Value: 50}}
	a := []Series{{Name: "x_total", Type: "counter", Value: 7}}
	if d := Delta(b, a); len(d) != 1 || d[0].Value != 7 {
		t.Errorf("after a restart the new count is the delta: %+v", d)
	}
}
