package brakes

import (
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/scrape"
)

func TestKubeAPIQPS(t *testing.T) {
	checkFlagBrake(t, "kube-api-qps", nil, []string{"--kube-api-qps=50", "--kube-api-burst=100"})
	checkFlagBrake(t, "kube-api-qps", []string{"brakes.kubeAPIQPS=2.5", "brakes.kubeAPIBurst=5"}, []string{"--kube-api-qps=2.5", "--kube-api-burst=5"})
	checkSettingError(t, "kube-api-qps", []string{"brakes.kubeAPIQPS=0"}, "brakes.kubeAPIQPS")
	checkSettingError(t, "kube-api-qps", []string{"brakes.kubeAPIBurst=0"}, "brakes.kubeAPIBurst")
	b, _ := Get("kube-api-qps")
	c := &results.Cell{Metrics: map[string]results.Scrape{"agent-sandbox-controller": {Series: []scrape.Series{
		{Name: "rest_client_requests_total", Type: "counter", Labels: map[string]string{"code": "200", "method": "PATCH"}, Value: 30}}}}}
	c.Stats.Total = 10
	if engaged, text, ok := b.(Evidencer).Evidence(c, "50/100"); engaged || ok || !strings.Contains(text, "controller requests per claim here 3.00") {
		t.Errorf("evidence %v %v %q", engaged, ok, text)
	}
	if v := b.(Operand).OperandValue("2.5/5"); v != 2.5 {
		t.Errorf("operand %v", v)
	}
}
