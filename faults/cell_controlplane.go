package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/recorder"
	"github.com/brakebench/brakebench/internal/results"
)

// controlPlaneCell restarts a control-plane component with tighter limits for the cell (the
// lab runs them, so only the lab can): kube-scheduler's client QPS, or kube-apiserver's
// in-flight limits.
type controlPlaneCell struct {
	name, component string
	flags           func(cp config.ControlPlaneFault) []string
}

func init() {
	registerCell(controlPlaneCell{name: "scheduler-qps", component: "kube-scheduler", flags: func(cp config.ControlPlaneFault) []string {
		return []string{fmt.Sprintf("--kube-api-qps=%d", cp.SchedulerQPS), fmt.Sprintf("--kube-api-burst=%d", cp.SchedulerBurst)}
	}})
	registerCell(controlPlaneCell{name: "apiserver-inflight", component: "kube-apiserver", flags: func(cp config.ControlPlaneFault) []string {
		return []string{fmt.Sprintf("--max-requests-inflight=%d", cp.MaxRequestsInflight), fmt.Sprintf("--max-mutating-requests-inflight=%d", cp.MaxMutatingRequestsInflight)}
	}})
}

func (f controlPlaneCell) Name() string { return f.name }

func (f controlPlaneCell) Change(cfg *config.Resolved) string {
	return fmt.Sprintf("%s cells (lab): %s restarted with %v before the burst, and with its original flags after the cell",
		f.name, f.component, f.flags(cfg.Faults.ControlPlane))
}

func (f controlPlaneCell) NotApplicable(cfg *config.Resolved) string {
	if cfg.Cluster.Provider != "lab" {
		return f.name + " restarts a control-plane component with other flags, which only the lab can do"
	}
	return ""
}

func (f controlPlaneCell) Arm(ctx context.Context, c *Cell) (Armed, error) {
	r, ok := c.Cluster.(Restarter)
	if !ok {
		return nil, fmt.Errorf("%s needs a cluster whose control plane brakebench runs (the lab)", f.name)
	}
	cp := &ControlPlaneFlags{Restarter: r, Journal: c.Journal, Component: f.component, Flags: f.flags(c.Config.Faults.ControlPlane)}
	revert, err := cp.Arm(ctx)
	c.Reverts.Push(f.name, func(ctx context.Context) error {
		if revert == nil {
			return nil
		}
		err := revert(ctx)
		c.Timeline.Add(f.name, "reverted", f.component+" restarted with its original flags")
		return err
	})
	if err != nil {
		c.Timeline.Add(f.name, "error", err.Error())
		return nil, err
	}
	c.Timeline.Add(f.name, "armed", fmt.Sprintf("%s restarted with %v", f.component, cp.Flags))
	return controlPlaneArmed{}, nil
}

type controlPlaneArmed struct{}

func (controlPlaneArmed) Fired(context.Context, time.Time)                           {}
func (controlPlaneArmed) Settle(context.Context, time.Duration) error                { return nil }
func (controlPlaneArmed) Stats(*results.Cell, recorder.Snapshot) *results.FaultStats { return nil }
