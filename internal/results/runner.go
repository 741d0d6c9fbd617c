package results

import (
	"time"

	"github.com/brakebench/brakebench/internal/stats"
)

// Runner is the in-cluster runner's own record of a cell (loadgen.runner in-cluster; nil for the
// local runner and in results written before it was recorded): how many pods fired the burst,
// each one's send lag and clock, and how far apart the shards' clocks were. Additive to
// brakebench.results/v1: no existing field changes meaning.
type Runner struct {
	Shards int `json:"shards"`
	// MaxClockSkewMS is the bound the shards' clocks were held to (loadgen.maxClockSkew).
	MaxClockSkewMS float64 `json:"maxClockSkewMs"`
	// ClockSpreadMS is the largest disagreement between two shards' clocks, estimated against the
	// API server's Date header, ± ClockSpreadErrorMS (a hard bound, not a confidence interval);
	// nil when a shard has no estimate, 0 with one shard.
	ClockSpreadMS      *float64 `json:"clockSpreadMs,omitempty"`
	ClockSpreadErrorMS *float64 `json:"clockSpreadErrorMs,omitempty"`
	// ClockWarning says, in one sentence, why the shards' clocks are not known to agree within
	// the bound (a wide estimate, a shard without one, a shard far from the harness's clock).
	ClockWarning string        `json:"clockWarning,omitempty"`
	PerShard     []RunnerShard `json:"perShard"`
}

// RunnerShard is one pod of the in-cluster runner's Indexed Job.
type RunnerShard struct {
	Index  int    `json:"index"` // the pod's completion index
	Pod    string `json:"pod,omitempty"`
	Node   string `json:"node,omitempty"`
	Claims int    `json:"claims"` // claims in its share of the schedule
	// SendLagMS: intent - planned of the shard's sent claims, on its own clock (N counts them).
	SendLagMS stats.Quantiles `json:"sendLagMs"`
	// StartedAt is the shard's own clock when its agent started.
	StartedAt time.Time `json:"startedAt,omitempty"`
	// ClockOffsetMS is the shard's clock minus the harness's, ± ClockErrorMS (a hard bound from
	// both sides' round trips to the API server); nil when either side has no estimate.
	ClockOffsetMS *float64 `json:"clockOffsetMs,omitempty"`
	ClockErrorMS  *float64 `json:"clockErrorMs,omitempty"`
	// ServerOffsetMS is the shard's clock minus the API server's, ± ServerErrorMS.
	ServerOffsetMS *float64 `json:"serverOffsetMs,omitempty"`
	ServerErrorMS  *float64 `json:"serverErrorMs,omitempty"`
}
