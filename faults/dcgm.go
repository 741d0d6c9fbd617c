package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DCGMExporter serves dcgm-exporter-compatible metrics for the simulated GPU nodes on a loopback
// port, so anything that scrapes dcgm-exporter sees the injected faults: DCGM_FI_DEV_XID_ERRORS
// (the value of the last XID, 0 when healthy), the ECC double-bit and NVLink CRC counters, with
// dcgm-exporter's gpu / UUID / device / modelName / Hostname labels.
type DCGMExporter struct {
	mu     sync.Mutex
	gpus   map[string]int // node -> GPU count
	xid    *prometheus.GaugeVec
	dbe    *prometheus.CounterVec
	nvlink *prometheus.CounterVec
	srv    *http.Server
	ln     net.Listener
}

var dcgmLabels = []string{"gpu", "UUID", "device", "modelName", "Hostname"}

// NewDCGMExporter exports healthy GPUs for nodes (node name -> GPU count).
func NewDCGMExporter(nodes map[string]int) *DCGMExporter {
	e := &DCGMExporter{
		gpus:   nodes,
		xid:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "DCGM_FI_DEV_XID_ERRORS", Help: "Value of the last XID error encountered."}, dcgmLabels),
		dbe:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", Help: "Total number of double-bit volatile ECC errors."}, dcgmLabels),
		nvlink: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", Help: "Total number of NVLink flow-control CRC errors."}, dcgmLabels),
	}
	for node, n := range nodes {
		for g := 0; g < n; g++ {
			l := e.labels(node, g)
			e.xid.With(l).Set(0)
			e.dbe.With(l).Add(0)
			e.nvlink.With(l).Add(0)
		}
	}
	return e
}

func (e *DCGMExporter) labels(node string, gpu int) prometheus.Labels {
	return prometheus.Labels{"gpu": fmt.Sprint(gpu), "UUID": fmt.Sprintf("GPU-%08x-%04d", hash(node), gpu), "device": fmt.Sprintf("nvidia%d", gpu),
		"modelName": "NVIDIA H100 80GB HBM3 (simulated)", "Hostname": node}
}

func hash(s string) uint32 {
	var h uint32 = 2166136261
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// Inject records a fault on GPU 0 of node.
func (e *DCGMExporter) Inject(node, kind string, xid int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l := e.labels(node, 0)
	switch kind {
	case "xid":
		e.xid.With(l).Set(float64(xid))
	case "ecc":
		e.xid.With(l).Set(48) // a DBE raises XID 48 alongside the counter
		e.dbe.With(l).Inc()
	case "nvlink":
		e.xid.With(l).Set(74)
		e.nvlink.With(l).Inc()
	case "device-count":
		e.xid.With(l).Set(79)
	}
}

// Clear returns node's GPUs to healthy (XID 0; counters keep their totals, as DCGM's do).
func (e *DCGMExporter) Clear(node string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for g := 0; g < e.gpus[node]; g++ {
		e.xid.With(e.labels(node, g)).Set(0)
	}
}

// Start serves /metrics on 127.0.0.1 (a free port); URL says where.
func (e *DCGMExporter) Start() error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(e.xid, e.dbe, e.nvlink)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	e.ln, e.srv = ln, &http.Server{Handler: mux}
	go func() { _ = e.srv.Serve(ln) }()
	return nil
}

// URL is the metrics endpoint.
func (e *DCGMExporter) URL() string { return "http://" + e.ln.Addr().String() + "/metrics" }

// Stop shuts the endpoint down.
func (e *DCGMExporter) Stop(ctx context.Context) error {
	if e.srv == nil {
		return nil
	}
	err := e.srv.Shutdown(ctx)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
