package analysis

import (
	"math"
	"testing"

	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/scrape"
)

func counter(verb, resource, code string, v float64) scrape.Series {
	return scrape.Series{Name: "apiserver_request_total", Type: "counter", Labels: map[string]string{"verb": verb, "resource": resource, "code": code}, Value: v}
}

func subCounter(verb, resource, sub, code string, v float64) scrape.Series {
	s := counter(verb, resource, code, v)
	s.Labels["subresource"] = sub
	return s
}

func dryRun(s scrape.Series) scrape.Series {
	s.Labels["dry_run"] = "All"
	return s
}

func waitHist(level string, counts []float64, sum float64) scrape.Series {
	les := []float64{0.001, 0.01, 0.1, 1, math.Inf(1)}
	s := scrape.Series{Name: "apiserver_flowcontrol_request_wait_duration_seconds", Type: "histogram", Labels: map[string]string{"priority_level": level, "execute": "true"}, Sum: sum}
	for i, le := range les {
		s.Buckets = append(s.Buckets, scrape.Bucket{LE: le, Count: counts[i]})
	}
	s.Count = counts[len(counts)-1]
	return s
}

func readyClaims(n int, last float64) []results.Claim {
	out := make([]results.Claim, n)
	for i := range out {
		r := last * float64(i+1) / float64(n)
		out[i] = results.Claim{Ready: &r}
	}
	return out
}

// A cell of 10 claims: the generator's 10 claim POSTs, 10 observability PATCHes of which 2 were
// refused 409, 10 sandbox PATCHes, 20 Event POSTs, 5 lease PUTs, and reads that are not writes.
func TestWriteAccount(t *testing.T) {
	c := &results.Cell{Claims: readyClaims(10, 4.5), Metrics: map[string]results.Scrape{"kube-apiserver": {Series: []scrape.Series{
		counter("POST", "sandboxclaims", "201", 10),
		dryRun(counter("POST", "sandboxclaims", "201", 1)), // the APF check: writes nothing
		dryRun(counter("PATCH", "sandboxclaims", "409", 1)),
		counter("PATCH", "sandboxclaims", "200", 8),
		counter("PATCH", "sandboxclaims", "409", 2),
		counter("PATCH", "sandboxes", "200", 10),
		subCounter("PUT", "sandboxclaims", "status", "200", 30),
		counter("POST", "events", "201", 20),
		counter("PUT", "leases", "200", 5),
		counter("GET", "sandboxes", "200", 100),
		counter("WATCH", "pods", "200", 3),
		counter("LIST", "pods", "409", 1), // a refused read still counts as a conflict
		waitHist("workload-low", []float64{90, 95, 99, 100, 100}, 0.5),
		waitHist("exempt", []float64{0, 0, 0, 0, 0}, 0),
	}}}}
	w := WriteAccount(c)
	if w == nil {
		t.Fatal("no accounting")
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"claim POSTs/claim", w.PerClaim["sandboxclaims.post"], 1},
		{"claim PATCHes/claim", w.PerClaim["sandboxclaims.patch"], 1},
		{"sandbox PATCHes/claim", w.PerClaim["sandboxes.patch"], 1},
		{"event POSTs/claim", w.PerClaim["events.post"], 2},
		{"lease PUTs/claim", w.PerClaim["leases.put"], 0.5},
		{"pod DELETEs/claim", w.PerClaim["pods.delete"], 0},
		{"claim status PUTs/claim", w.PerClaim["sandboxclaims/status.put"], 3},
		{"claim PUTs/claim (the object, not its status)", w.PerClaim["sandboxclaims.put"], 0},
		{"writes/claim", w.TotalPerClaim, (10 + 10 + 10 + 30 + 20 + 5) / 10.0},
		{"409/claim", w.ConflictsPerClaim, 0.3},
		{"workload-low mean wait ms", w.APFWait["workload-low"].MeanMS, 5},
		{"workload-low p99 wait ms", w.APFWait["workload-low"].P99MS, 100},
		{"all Ready s", *w.AllReadySeconds, 4.5},
	}
	for _, ch := range checks {
		if math.Abs(ch.got-ch.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	if _, ok := w.APFWait["exempt"]; ok {
		t.Error("a level with no request has no wait")
	}
	// The gate operands read the same numbers.
	vals := map[string]float64{}
	for _, d := range writeMetrics() {
		vals[d.key] = d.rep(c)
	}
	if vals["writes.sandboxclaims.patch_per_claim"] != 1 || vals["writes.per_claim"] != 8.5 || vals["writes.sandboxclaims_status.put_per_claim"] != 3 || vals["apf.wait_p99_ms.workload-low"] != 100 || !math.IsNaN(vals["apf.wait_p99_ms.catch-all"]) || vals["claims.all_ready_s"] != 4.5 {
		t.Errorf("operands %v", vals)
	}
}

func TestWriteAccountWithoutScrapeOrClaims(t *testing.T) {
	failed := readyClaims(3, 2)
	failed[1] = results.Claim{Failed: true}
	tests := []struct {
		name string
		cell results.Cell
	}{
		{"no scrape", results.Cell{Claims: readyClaims(3, 2)}},
		{"scrape failed", results.Cell{Claims: readyClaims(3, 2), Metrics: map[string]results.Scrape{"kube-apiserver": {Error: "refused"}}}},
		{"no claims", results.Cell{Metrics: map[string]results.Scrape{"kube-apiserver": {}}}},
	}
	for _, tc := range tests {
		if w := WriteAccount(&tc.cell); w != nil {
			t.Errorf("%s: %+v, want none", tc.name, w)
		}
	}
	if v := allReady(failed); v != nil {
		t.Errorf("a failed claim: all Ready at %v, want never", *v)
	}
}
