// Package scrape reads Prometheus /metrics endpoints (parsed with prometheus/common/expfmt), keeps
// the families brakebench reports, and turns before/after scrapes into deltas.
package scrape

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/brakebench/brakebench/internal/stats"
)

// Kept are the metric-name prefixes recorded.
var Kept = []string{
	"apiserver_request_total", "apiserver_flowcontrol_", "process_cpu_seconds_total", "process_resident_memory_bytes",
	"scheduler_schedule_attempts_total", "scheduler_pod_scheduling_attempts", "agent_sandbox_", "workqueue_adds_total",
	"rest_client_requests_total", "kueue_cluster_queue_", "kueue_admitted_active_workloads", "kueue_pending_workloads",
	"keda_", "horizontal_pod_autoscaler_controller_",
}

// Bucket is one cumulative histogram bucket.
type Bucket struct {
	LE    float64 `json:"le"`
	Count float64 `json:"count"`
}

// MarshalJSON writes the +Inf bucket bound as "+Inf".
func (b Bucket) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		LE    stats.Num `json:"le"`
		Count float64   `json:"count"`
	}{stats.Num(b.LE), b.Count})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (b *Bucket) UnmarshalJSON(raw []byte) error {
	var v struct {
		LE    stats.Num `json:"le"`
		Count float64   `json:"count"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	b.LE, b.Count = float64(v.LE), v.Count
	return nil
}

// Series is one metric series; Buckets/Sum/Count are set for histograms.
type Series struct {
	Name    string            `json:"name"`
	Type    string            `json:"type"`
	Labels  map[string]string `json:"labels,omitempty"`
	Value   float64           `json:"value"`
	Buckets []Bucket          `json:"buckets,omitempty"`
	Sum     float64           `json:"sum,omitempty"`
	Count   float64           `json:"count,omitempty"`
}

func (s Series) key() string {
	ks := make([]string, 0, len(s.Labels))
	for k, v := range s.Labels {
		ks = append(ks, k+"="+v)
	}
	sort.Strings(ks)
	return s.Name + "{" + strings.Join(ks, ",") + "}"
}

// Parse reads the text exposition format and keeps the families in Kept.
func Parse(r io.Reader) ([]Series, error) { return parse(r, kept) }

// ParseAll reads every family (tests and tools that inspect foreign exporters); errors give nil.
func ParseAll(r io.Reader) []Series {
	s, _ := ParseEvery(r)
	return s
}

// ParseEvery reads every family, not only those in Kept.
func ParseEvery(r io.Reader) ([]Series, error) { return parse(r, func(string) bool { return true }) }

func parse(r io.Reader, keep func(string) bool) ([]Series, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	var out []Series
	for name, f := range fams {
		if !keep(name) {
			continue
		}
		for _, m := range f.GetMetric() {
			s := Series{Name: name, Type: strings.ToLower(f.GetType().String()), Labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				s.Labels[l.GetName()] = l.GetValue()
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				s.Value = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s.Value = m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				s.Value = m.GetUntyped().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				s.Sum, s.Count = h.GetSampleSum(), float64(h.GetSampleCount())
				for _, b := range h.GetBucket() {
					s.Buckets = append(s.Buckets, Bucket{LE: b.GetUpperBound(), Count: float64(b.GetCumulativeCount())})
				}
			default:
				continue
			}
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out, nil
}

func kept(name string) bool {
	for _, p := range Kept {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// Delta subtracts before from after for counters and histograms (series that did not change are
// dropped); gauges keep their after value. A counter that went backwards (a restart) keeps after.
func Delta(before, after []Series) []Series {
	prev := map[string]Series{}
	for _, s := range before {
		prev[s.key()] = s
	}
	var out []Series
	for _, a := range after {
		b, ok := prev[a.key()]
		d := a
		switch a.Type {
		case "counter":
			if ok && a.Value >= b.Value {
				d.Value = a.Value - b.Value
			}
			if d.Value == 0 {
				continue
			}
		case "histogram":
			if ok && a.Count >= b.Count && len(a.Buckets) == len(b.Buckets) {
				d.Sum, d.Count = a.Sum-b.Sum, a.Count-b.Count
				d.Buckets = make([]Bucket, len(a.Buckets))
				for i := range a.Buckets {
					d.Buckets[i] = Bucket{LE: a.Buckets[i].LE, Count: a.Buckets[i].Count - b.Buckets[i].Count}
				}
			}
			if d.Count == 0 {
				continue
			}
		}
		out = append(out, d)
	}
	return out
}

// HistogramQuantile estimates quantile q (0..1) of a histogram the way Prometheus'
// histogram_quantile does: linear interpolation inside the bucket holding the rank.
func HistogramQuantile(s Series, q float64) float64 {
	if s.Count == 0 || len(s.Buckets) == 0 {
		return math.NaN()
	}
	rank := q * s.Count
	prevLE, prevCount := 0.0, 0.0
	for _, b := range s.Buckets {
		if b.Count >= rank {
			if math.IsInf(b.LE, 1) {
				return prevLE
			}
			if b.Count == prevCount {
				return b.LE
			}
			return prevLE + (b.LE-prevLE)*(rank-prevCount)/(b.Count-prevCount)
		}
		prevLE, prevCount = b.LE, b.Count
	}
	return prevLE
}

// Merge sums histogram series of one name over all label sets matching match.
func Merge(series []Series, name string, match map[string]string) Series {
	out := Series{Name: name, Type: "histogram"}
	for _, s := range series {
		if s.Name != name || s.Type != "histogram" || !matches(s.Labels, match) {
			continue
		}
		if out.Buckets == nil {
			out.Buckets = make([]Bucket, len(s.Buckets))
			for i, b := range s.Buckets {
				out.Buckets[i].LE = b.LE
			}
		}
		if len(s.Buckets) != len(out.Buckets) {
			continue
		}
		for i, b := range s.Buckets {
			out.Buckets[i].Count += b.Count
		}
		out.Sum += s.Sum
		out.Count += s.Count
	}
	return out
}

// Sum adds the values of counter/gauge series of name matching match.
func Sum(series []Series, name string, match map[string]string) float64 {
	t, _ := SumN(series, name, match)
	return t
}

// SumN is Sum and the number of series it added (0: the metric is absent, not zero).
func SumN(series []Series, name string, match map[string]string) (float64, int) {
	t, n := 0.0, 0
	for _, s := range series {
		if s.Name == name && matches(s.Labels, match) {
			t += s.Value
			n++
		}
	}
	return t, n
}

func matches(l, m map[string]string) bool {
	for k, v := range m {
		if l[k] != v {
			return false
		}
	}
	return true
}
