package brakes

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/scrape"
)

// kubeAPIQPS is agent-sandbox's client-side rate limit on every controller request:
// --kube-api-qps=Q --kube-api-burst=B (v0.5.3 and later; the controller's default is no limit).
type kubeAPIQPS struct{}

func init() { register(kubeAPIQPS{}) }

func (kubeAPIQPS) Name() string { return "kube-api-qps" }

type kubeAPIQPSSettings struct {
	QPS   float64 `mapstructure:"kubeAPIQPS"`
	Burst int     `mapstructure:"kubeAPIBurst"`
}

func (kubeAPIQPS) Settings() any { return &kubeAPIQPSSettings{} }

// Setting is "Q/B" (requests per second, burst).
func (kubeAPIQPS) Setting(s config.Section) (string, string, error) {
	var st kubeAPIQPSSettings
	if err := s.Decode(&st); err != nil {
		return "", "brakes.kubeAPIQPS", err
	}
	if !(st.QPS > 0) || st.QPS > 100000 {
		return "", "brakes.kubeAPIQPS", fmt.Errorf("expected a positive request rate per second, at most 100000")
	}
	if st.Burst < 1 || st.Burst > 100000 {
		return "", "brakes.kubeAPIBurst", fmt.Errorf("expected a burst of 1 to 100000 requests")
	}
	return strconv.FormatFloat(st.QPS, 'f', -1, 64) + "/" + strconv.Itoa(st.Burst), "brakes.kubeAPIQPS", nil
}

// Space: the request rate from 5 to 500/s on the log scale; the burst stays brakes.kubeAPIBurst.
func (kubeAPIQPS) Space() Dimension {
	return Dimension{Key: "brakes.kubeAPIQPS", Kind: KindFloat, Lo: 5, Hi: 500, Log: true, Default: "no limit"}
}

func (kubeAPIQPS) Flags(v string) []string {
	q, b := splitQPS(v)
	return []string{"--kube-api-qps=" + q, "--kube-api-burst=" + b}
}

func splitQPS(v string) (qps, burst string) {
	qps, burst, _ = strings.Cut(v, "/")
	return qps, burst
}

// Evidence: none a cell can give alone. The limiter's own wait is client-go's
// rest_client_rate_limiter_duration_seconds, which the controller (controller-runtime v0.24)
// does not export; what the cell shows is the controller's requests per claim (its
// rest_client_requests_total), quoted, and the claim latency against the baseline.
func (kubeAPIQPS) Evidence(c *results.Cell, v string) (bool, string, bool) {
	req := "-"
	if m, ok := c.Metrics["agent-sandbox-controller"]; ok && m.Error == "" && c.Stats.Total > 0 {
		if n, k := scrape.SumN(m.Series, "rest_client_requests_total", nil); k > 0 {
			req = fmt.Sprintf("%.2f", n/float64(c.Stats.Total))
		}
	}
	q, b := splitQPS(v)
	return false, fmt.Sprintf("not judged in one cell: the controller exports no client-side limiter wait (limit %s/s, burst %s; controller requests per claim here %s)", q, b, req), false
}

func (kubeAPIQPS) OperandKey() (string, string) { return "kube_api_qps", "" }

func (kubeAPIQPS) OperandValue(v string) float64 {
	q, _ := splitQPS(v)
	f, err := strconv.ParseFloat(q, 64)
	if err != nil {
		return math.NaN()
	}
	return f
}
