package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/brakebench/brakebench/internal/catalog"
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/recorder"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/scrape"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
)

// apfThrottleCell squeezes one identity (the controller's ServiceAccount, or the load
// generator's) into a priority level of a few seats for the cell, before the burst.
type apfThrottleCell struct{}

func init() { registerCell(apfThrottleCell{}) }

func (apfThrottleCell) Name() string { return "apf-throttle" }

// apfSettings are the keys faults.apf.*; their defaults are configs/faults/apf-throttle.yaml.
type apfSettings struct {
	APF struct {
		Target      string `mapstructure:"target"` // controller | loadgen
		Shares      int    `mapstructure:"shares"` // nominalConcurrencyShares
		Queues      int    `mapstructure:"queues"`
		QueueLength int    `mapstructure:"queueLength"`
	} `mapstructure:"apf"`
}

func (apfThrottleCell) Settings() (string, any) { return "apf-throttle", &apfSettings{} }

func (st apfSettings) checks() []check {
	a := st.APF
	return []check{
		{bad: !oneOf(a.Target, "controller", "loadgen"), key: "faults.apf.target", want: "controller or loadgen", got: a.Target},
		{bad: outside(a.Shares, 0, maxObjects), key: "faults.apf.shares", want: "0 to 10000", got: a.Shares},
		{bad: outside(a.Queues, 1, maxObjects), key: "faults.apf.queues", want: "1 to 10000", got: a.Queues},
		{bad: outside(a.QueueLength, 1, maxObjects), key: "faults.apf.queueLength", want: "1 to 10000", got: a.QueueLength},
	}
}

func (apfThrottleCell) Change(cfg *config.Resolved) string {
	st, err := settingsOf[apfSettings](cfg)
	if err != nil {
		return "apf-throttle cells: " + err.Error()
	}
	a := st.APF
	return fmt.Sprintf("apf-throttle cells: a PriorityLevelConfiguration (%d shares, %d queue(s) of %d) and a FlowSchema matching the %s's ServiceAccount, created before the burst and deleted after the cell",
		a.Shares, a.Queues, a.QueueLength, a.Target)
}

func (apfThrottleCell) NotApplicable(*config.Resolved) string { return "" }

// Precheck: the settings, and the admin identity is exempt from APF, so throttling the load
// generator needs its own ServiceAccount.
func (apfThrottleCell) Precheck(cfg *config.Resolved) error {
	st, err := settingsOf[apfSettings](cfg)
	if err != nil {
		return err
	}
	if st.APF.Target == "loadgen" && cfg.Loadgen.Identity != "serviceaccount" {
		return &config.Error{Source: cfg.Source("faults.apf.target"), Key: "faults.apf.target",
			Msg: "expected controller, or loadgen with loadgen.identity=serviceaccount (the admin identity is exempt from APF)"}
	}
	return nil
}

func (apfThrottleCell) Arm(ctx context.Context, c *Cell) (Armed, error) {
	st, err := settingsOf[apfSettings](c.Config)
	if err != nil {
		return nil, err
	}
	a := st.APF
	f := &APFThrottle{Client: c.Clients.Typed, Journal: c.Journal, Labels: c.Labels,
		ObjectName: fmt.Sprintf("brakebench-throttle-%s-%02d", c.RunID, c.Index), Shares: int32(a.Shares), Queues: int32(a.Queues),
		QueueLength: int32(a.QueueLength), Precedence: 500}
	switch a.Target {
	case "controller":
		f.Namespace, f.ServiceAccount = agentsandbox.ControllerNamespace, agentsandbox.ControllerServiceAcount
	case "loadgen":
		f.Namespace, f.ServiceAccount = c.Namespace, "brakebench-loadgen"
	}
	revert, err := f.Arm(ctx)
	c.Reverts.Push("apf throttle", func(ctx context.Context) error {
		err := revert(ctx)
		c.Timeline.Add("apf-throttle", "reverted", f.ObjectName)
		return err
	})
	if err != nil {
		c.Timeline.Add("apf-throttle", "error", err.Error())
		return nil, err
	}
	c.Timeline.Add("apf-throttle", "armed", fmt.Sprintf("priority level %s (%d shares, %d queue(s) of %d) for %s/%s", f.ObjectName, a.Shares, a.Queues, a.QueueLength, f.Namespace, f.ServiceAccount))
	return &apfArmed{level: f.ObjectName}, nil
}

type apfArmed struct{ level string }

func (*apfArmed) Fired(context.Context, time.Time)            {}
func (*apfArmed) Settle(context.Context, time.Duration) error { return nil }

// Stats reads the throttled level's wait and rejections from the API server's metric deltas.
func (a *apfArmed) Stats(c *results.Cell, _ recorder.Snapshot) *results.FaultStats {
	fs := &results.FaultStats{APFLevel: a.level}
	api, ok := c.Metrics["kube-apiserver"]
	if !ok || api.Error != "" {
		return fs
	}
	h := scrape.Merge(api.Series, "apiserver_flowcontrol_request_wait_duration_seconds", map[string]string{"priority_level": a.level})
	if h.Count > 0 {
		v := scrape.HistogramQuantile(h, 0.99)
		fs.APFWaitP99S = &v
	}
	fs.APFRejected = scrape.Sum(api.Series, "apiserver_flowcontrol_rejected_requests_total", map[string]string{"priority_level": a.level})
	return fs
}

func (apfThrottleCell) Describe(fs *results.FaultStats) [][2]string {
	return [][2]string{
		{"priority level", fs.APFLevel},
		{"APF wait p99 in that level", results.FormatSecs(fs.APFWaitP99S)},
		{"requests rejected by that level", fmt.Sprintf("%.0f", fs.APFRejected)},
	}
}

func (apfThrottleCell) Metrics() []catalog.Metric {
	return []catalog.Metric{
		{Key: "fault.apf_wait_p99_s", Unit: "s", Value: func(c *results.Cell) float64 {
			if c.Stats.Fault == nil {
				return results.OrNaN(nil)
			}
			return results.OrNaN(c.Stats.Fault.APFWaitP99S)
		}},
		{Key: "fault.apf_rejected", Unit: "requests", Value: func(c *results.Cell) float64 {
			if c.Stats.Fault == nil || c.Stats.Fault.APFLevel == "" {
				return results.OrNaN(nil)
			}
			return c.Stats.Fault.APFRejected
		}},
	}
}
