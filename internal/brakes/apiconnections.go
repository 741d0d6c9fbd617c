package brakes

import (
	"fmt"
	"math"
	"strconv"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/results"
)

// apiConnections is agent-sandbox's --api-connections=N (v0.5.5, v1.0.1): the controller's
// writes are sharded over N HTTP/2 connections instead of one (whose concurrent-stream cap
// queues a burst's writes).
type apiConnections struct{}

func init() { register(apiConnections{}) }

func (apiConnections) Name() string { return "api-connections" }

type apiConnectionsSettings struct {
	N int `mapstructure:"apiConnections"`
}

func (apiConnections) Settings() any { return &apiConnectionsSettings{} }

func (apiConnections) Setting(s config.Section) (string, string, error) {
	return setting(s, "brakes.apiConnections", func(st apiConnectionsSettings) (string, error) {
		if st.N < 2 || st.N > 64 {
			return "", fmt.Errorf("expected 2 to 64 connections (1 is the controller's default, no brake)")
		}
		return strconv.Itoa(st.N), nil
	})
}

// Space: 2 to 16 connections (1 is the controller's default, no brake) on the log scale.
func (apiConnections) Space() Dimension {
	return Dimension{Key: "brakes.apiConnections", Kind: KindInt, Lo: 2, Hi: 16, Log: true, Default: "1"}
}

func (apiConnections) Flags(v string) []string { return []string{"--api-connections=" + v} }

// Evidence: none a cell can give: the API server's in-flight gauges are not per client.
func (apiConnections) Evidence(_ *results.Cell, v string) (bool, string, bool) {
	return false, fmt.Sprintf("not judged in one cell: the API server counts requests in flight per priority level, not per client connection (%s connections); compare claim latency and APF wait with the baseline", v), false
}

func (apiConnections) OperandKey() (string, string) { return "api_connections", "" }

func (apiConnections) OperandValue(v string) float64 {
	n, err := strconv.Atoi(v)
	if err != nil {
		return math.NaN()
	}
	return float64(n)
}
