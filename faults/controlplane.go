package faults

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/brakebench/brakebench/internal/flagset"
	"github.com/brakebench/brakebench/internal/undo"
)

// Restarter restarts a control-plane component with other flags (the lab can; a managed control
// plane cannot).
type Restarter interface {
	ComponentArgs(name string) ([]string, error)
	RestartComponent(ctx context.Context, name string, args []string) error
}

// ControlPlaneFlags restarts one component (kube-apiserver, kube-scheduler) with flags added, e.g.
// --kube-api-qps=200 or --max-requests-inflight=100, and restarts it with its original flags on
// revert.
type ControlPlaneFlags struct {
	Restarter Restarter
	Journal   *undo.Journal
	Component string
	Flags     []string
}

// Name implements Fault.
func (f *ControlPlaneFlags) Name() string { return f.Component + "-flags" }

// Arm journals the component's original arguments and registers their restoration first.
func (f *ControlPlaneFlags) Arm(ctx context.Context) (undo.Revert, error) {
	orig, err := f.Restarter.ComponentArgs(f.Component)
	if err != nil {
		return nil, err
	}
	ref := "component/" + f.Component
	if err := f.Journal.Record(undo.Entry{Op: undo.OpChanged, Ref: ref, Kind: "LabComponent", Name: f.Component, Original: marshal(orig)}); err != nil {
		return nil, err
	}
	revert := func(ctx context.Context) error {
		if err := f.Restarter.RestartComponent(ctx, f.Component, orig); err != nil {
			return fmt.Errorf("restore %s flags: %w", f.Component, err)
		}
		return f.Journal.Record(undo.Entry{Op: undo.OpReverted, Ref: ref})
	}
	return revert, f.Restarter.RestartComponent(ctx, f.Component, flagset.Merge(orig, f.Flags))
}

// RestoreComponentFromJournal restarts a component with the arguments a journal entry recorded.
func RestoreComponentFromJournal(ctx context.Context, cluster any, e undo.Entry) error {
	r, ok := cluster.(Restarter)
	if !ok {
		return fmt.Errorf("restore %s: this cluster's control plane is not brakebench's to restart", e.Name)
	}
	var args []string
	if err := json.Unmarshal(e.Original, &args); err != nil {
		return err
	}
	return r.RestartComponent(ctx, e.Name, args)
}
