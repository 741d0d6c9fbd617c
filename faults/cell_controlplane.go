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
	flags           func(cp controlPlaneKeys) []string
}

func init() {
	registerCell(controlPlaneCell{name: "scheduler-qps", component: "kube-scheduler", flags: func(cp controlPlaneKeys) []string {
		return []string{fmt.Sprintf("--kube-api-qps=%d", cp.SchedulerQPS), fmt.Sprintf("--kube-api-burst=%d", cp.SchedulerBurst)}
	}})
	registerCell(controlPlaneCell{name: "apiserver-inflight", component: "kube-apiserver", flags: func(cp controlPlaneKeys) []string {
		return []string{fmt.Sprintf("--max-requests-inflight=%d", cp.MaxRequestsInflight), fmt.Sprintf("--max-mutating-requests-inflight=%d", cp.MaxMutatingRequestsInflight)}
	}})
}

func (f controlPlaneCell) Name() string { return f.name }

// controlPlaneSettings are the keys faults.controlPlane.*, shared by the control-plane fault
// types (one owner, control-plane); their defaults are configs/faults/control-plane.yaml.
type controlPlaneSettings struct {
	ControlPlane controlPlaneKeys `mapstructure:"controlPlane"`
}

type controlPlaneKeys struct {
	SchedulerQPS                int `mapstructure:"schedulerQPS"`
	SchedulerBurst              int `mapstructure:"schedulerBurst"`
	MaxRequestsInflight         int `mapstructure:"maxRequestsInflight"`
	MaxMutatingRequestsInflight int `mapstructure:"maxMutatingRequestsInflight"`
}

func (controlPlaneCell) Settings() (string, any) { return "control-plane", &controlPlaneSettings{} }

func (st controlPlaneSettings) checks() []check {
	cp := st.ControlPlane
	return []check{
		{bad: outside(cp.SchedulerQPS, 1, maxLimit), key: "faults.controlPlane.schedulerQPS", want: "1 to 100000", got: cp.SchedulerQPS},
		{bad: outside(cp.SchedulerBurst, 1, maxLimit), key: "faults.controlPlane.schedulerBurst", want: "1 to 100000", got: cp.SchedulerBurst},
		{bad: outside(cp.MaxRequestsInflight, 1, maxLimit), key: "faults.controlPlane.maxRequestsInflight", want: "1 to 100000", got: cp.MaxRequestsInflight},
		{bad: outside(cp.MaxMutatingRequestsInflight, 1, maxLimit), key: "faults.controlPlane.maxMutatingRequestsInflight", want: "1 to 100000", got: cp.MaxMutatingRequestsInflight},
	}
}

// Precheck: the settings (all of faults.controlPlane, whichever component the cell restarts).
func (controlPlaneCell) Precheck(cfg *config.Resolved) error {
	_, err := settingsOf[controlPlaneSettings](cfg)
	return err
}

func (f controlPlaneCell) Change(cfg *config.Resolved) string {
	st, err := settingsOf[controlPlaneSettings](cfg)
	if err != nil {
		return f.name + " cells: " + err.Error()
	}
	return fmt.Sprintf("%s cells (lab): %s restarted with %v before the burst, and with its original flags after the cell",
		f.name, f.component, f.flags(st.ControlPlane))
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
	st, err := settingsOf[controlPlaneSettings](c.Config)
	if err != nil {
		return nil, err
	}
	cp := &ControlPlaneFlags{Restarter: r, Journal: c.Journal, Component: f.component, Flags: f.flags(st.ControlPlane)}
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
