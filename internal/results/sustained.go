package results

import "github.com/brakebench/brakebench/internal/stats"

// Sustained is one repetition's ceiling search (workload.mode ceiling): the probes it offered,
// in order, and the bracket they left: Pass is the highest rate that met every criterion (0:
// none did), Fail the lowest that broke one (+Inf: none did).
type Sustained struct {
	Criteria []string         `json:"criteria"`
	SLOMS    float64          `json:"sloMs,omitempty"` // the p99 criterion's bound
	Probes   []SustainedProbe `json:"probes"`
	Pass     stats.Num        `json:"pass"`
	Fail     stats.Num        `json:"fail"`
	Stop     string           `json:"stop"` // why the search ended, one sentence
}

// SustainedProbe is one rate offered for workload.ceiling.probe: what was offered, what
// completed, the judged (steady) part's latency and send lag, and the verdict.
type SustainedProbe struct {
	Rate float64 `json:"rate"` // offered, claims/s
	// Offset: seconds from the cell's T0 to this probe's start.
	Offset float64 `json:"offset"`
	Sent   int     `json:"sent"`
	// Completed is claims Ready per second over the probe's judged part (sent after the warm-up,
	// Ready within the settle time), per second of that part.
	Completed float64   `json:"completed"`
	Judged    int       `json:"judged"` // claims sent after the warm-up
	Failed    int       `json:"failed"`
	Cold      int       `json:"cold"`
	P50MS     stats.Num `json:"p50Ms"`
	P99MS     stats.Num `json:"p99Ms"`
	// WindowP99MS: claim p99 per window of the judged part (the steady-state rule compares the
	// last two).
	WindowP99MS []stats.Num `json:"windowP99Ms,omitempty"`
	LagP99MS    stats.Num   `json:"lagP99Ms"`
	// PoolMinReady is the fewest Ready members the warm pool reported during the probe.
	PoolMinReady int64 `json:"poolMinReady"`
	// PoolRefilled: the pool was back at full size before this probe started (false: it started
	// short after workload.refillTimeout).
	PoolRefilled bool   `json:"poolRefilled"`
	OK           bool   `json:"ok"`
	Reason       string `json:"reason"` // what broke, or what held
}

// SustainedEstimate is a cell's ceiling over its repetitions (internal/ceiling.Aggregate): the
// estimate, its interval, and a sentence ("insufficient repetitions", one-sided answers).
type SustainedEstimate struct {
	Ceiling      stats.Num `json:"ceiling"`
	Lo           stats.Num `json:"lo"`
	Hi           stats.Num `json:"hi"`
	N            int       `json:"n"`
	Insufficient bool      `json:"insufficient,omitempty"`
	Text         string    `json:"text"`
}
