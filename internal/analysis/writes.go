package analysis

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/scrape"
)

// Write accounting: what a cell's burst and refill cost the API server, from the API server's own
// counters over the cell (the kube-apiserver scrape delta from just before the burst until the
// refill settled): requests per claim by resource and verb, 409 conflicts per claim, and the
// time requests waited in API Priority and Fairness per priority level. The write-shaping
// controller flags (agent-sandbox v0.5.5 and v1.0.1) are judged by these numbers.

// WriteResources are the resources whose requests are accounted, as apiserver_request_total
// names them: the claims, the sandboxes and their pods, the controller's Events and its leases.
var WriteResources = []string{"sandboxclaims", "sandboxes", "pods", "events", "leases"}

// WriteVerbs are the mutating verbs, as apiserver_request_total names them.
var WriteVerbs = []string{"POST", "PUT", "PATCH", "DELETE"}

// APFLevels are the priority levels whose wait is a metric of its own (Kubernetes' suggested
// levels, and the ones agent-sandbox's APF overlay adds); any other level a cell saw is in
// results.json (cells[].stats.writes.apfWait).
var APFLevels = []string{"workload-low", "workload-high", "global-default", "system", "leader-election", "node-high", "catch-all",
	"agent-sandbox-critical", "agent-sandbox-bulk"}

// WriteAccount computes a cell's write accounting; nil when the cell has no API server scrape
// (a failed scrape, a provider without one) or no claim. Dry-run requests (the dry_run label set)
// write nothing and are not counted: the load generator's APF check is a dry-run claim POST,
// sent once per run, in the first cell's scrape window when the run has no warm-up cell.
func WriteAccount(c *results.Cell) *results.Writes {
	api, ok := c.Metrics["kube-apiserver"]
	claims := len(c.Claims)
	if !ok || api.Error != "" || claims == 0 {
		return nil
	}
	w := &results.Writes{Claims: claims, PerClaim: map[string]float64{}}
	n := float64(claims)
	for _, res := range WriteResources {
		for _, sub := range []string{"", "status"} {
			for _, verb := range WriteVerbs {
				v := scrape.Sum(api.Series, "apiserver_request_total", map[string]string{"resource": res, "subresource": sub, "verb": verb, "dry_run": ""})
				w.PerClaim[writeKey(res, sub, verb)] = v / n
			}
		}
	}
	total, conflicts := 0.0, 0.0
	for _, s := range api.Series {
		if s.Name != "apiserver_request_total" || s.Labels["dry_run"] != "" {
			continue
		}
		if slices.Contains(WriteVerbs, s.Labels["verb"]) {
			total += s.Value
		}
		if s.Labels["code"] == "409" {
			conflicts += s.Value
		}
	}
	w.TotalPerClaim = total / n
	w.ConflictsPerClaim = conflicts / n
	levels := map[string]bool{}
	for _, s := range api.Series {
		if s.Name == "apiserver_flowcontrol_request_wait_duration_seconds" && s.Type == "histogram" {
			levels[s.Labels["priority_level"]] = true
		}
	}
	names := make([]string, 0, len(levels))
	for l := range levels {
		names = append(names, l)
	}
	sort.Strings(names)
	for _, l := range names {
		h := scrape.Merge(api.Series, "apiserver_flowcontrol_request_wait_duration_seconds", map[string]string{"priority_level": l})
		if h.Count <= 0 {
			continue
		}
		if w.APFWait == nil {
			w.APFWait = map[string]results.APFWait{}
		}
		w.APFWait[l] = results.APFWait{Requests: h.Count, MeanMS: h.Sum / h.Count * 1000, P99MS: scrape.HistogramQuantile(h, 0.99) * 1000}
	}
	w.AllReadySeconds = allReady(c.Claims)
	return w
}

// writeKey names a resource's (or its subresource's) verb in Writes.PerClaim:
// "sandboxclaims.patch", "sandboxes/status.put".
func writeKey(res, sub, verb string) string {
	if sub != "" {
		res += "/" + sub
	}
	return res + "." + strings.ToLower(verb)
}

// allReady is when the last claim of the burst became Ready (seconds from T0); nil when one
// never did (a failed claim: the burst never was all Ready).
func allReady(claims []results.Claim) *float64 {
	last := math.Inf(-1)
	for _, c := range claims {
		if c.Failed || c.Ready == nil {
			return nil
		}
		last = math.Max(last, *c.Ready)
	}
	if math.IsInf(last, -1) {
		return nil
	}
	return &last
}

// writes is the cell's accounting: the recorded one, or computed from the cell's scrape (a
// results file written before it was recorded).
func writes(c *results.Cell) *results.Writes {
	if c.Stats.Writes != nil {
		return c.Stats.Writes
	}
	return WriteAccount(c)
}

// writeMetrics are the write accounting's summary rows (gate operands): the total, the
// conflicts, every resource and verb, the APF wait per level, and the all-Ready time.
func writeMetrics() []metricDef {
	out := []metricDef{
		{key: "writes.per_claim", unit: "requests", rep: func(c *results.Cell) float64 {
			if w := writes(c); w != nil {
				return w.TotalPerClaim
			}
			return math.NaN()
		}},
		{key: "writes.conflicts_per_claim", unit: "requests", rep: func(c *results.Cell) float64 {
			if w := writes(c); w != nil {
				return w.ConflictsPerClaim
			}
			return math.NaN()
		}},
		{key: "claims.all_ready_s", unit: "s", rep: func(c *results.Cell) float64 {
			if v := allReady(c.Claims); v != nil {
				return *v
			}
			return math.NaN()
		}},
	}
	for _, res := range WriteResources {
		for _, sub := range []string{"", "status"} {
			for _, verb := range WriteVerbs {
				key := writeKey(res, sub, verb)
				out = append(out, metricDef{key: "writes." + strings.ReplaceAll(key, "/", "_") + "_per_claim", unit: "requests", rep: func(c *results.Cell) float64 {
					if w := writes(c); w != nil {
						return w.PerClaim[key]
					}
					return math.NaN()
				}})
			}
		}
	}
	for _, l := range APFLevels {
		out = append(out, metricDef{key: "apf.wait_p99_ms." + l, unit: "ms", rep: func(c *results.Cell) float64 {
			if w := writes(c); w != nil {
				if a, ok := w.APFWait[l]; ok {
					return a.P99MS
				}
			}
			return math.NaN()
		}})
	}
	return out
}
