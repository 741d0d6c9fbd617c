package lab

import (
	"testing"

	"github.com/brakebench/brakebench/internal/config"
)

// Saving Karpenter from a stale copy of the state must not put back what other runs changed
// since (the controller restarted with a new pid): a dead pid makes the next run recreate the lab.
func TestSaveKarpenterKeepsTheRestOfTheState(t *testing.T) {
	l := &Lab{cfg: config.Lab{Name: "t"}, dir: t.TempDir()}
	stale := &State{Name: "t", Controller: &Controller{Version: "v0.5.5"}}
	stale.Controller.PID = 100
	if err := l.save(stale); err != nil {
		t.Fatal(err)
	}
	fresh, err := l.Load()
	if err != nil {
		t.Fatal(err)
	}
	fresh.Controller.PID = 200 // another run restarted the controller
	if err := l.save(fresh); err != nil {
		t.Fatal(err)
	}
	stale.Karpenter = &Karpenter{Version: "v1.14.1"}
	if err := l.saveKarpenter(stale); err != nil {
		t.Fatal(err)
	}
	got, err := l.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got.Controller.PID != 200 || got.Karpenter == nil || got.Karpenter.Version != "v1.14.1" {
		t.Errorf("saved controller pid %d, karpenter %+v; want 200 and v1.14.1", got.Controller.PID, got.Karpenter)
	}
	if stale.Controller.PID != 200 {
		t.Errorf("the caller's copy was not refreshed: pid %d", stale.Controller.PID)
	}
	stale.Karpenter = nil
	if err := l.saveKarpenter(stale); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.Load(); got.Karpenter != nil || got.Controller.PID != 200 {
		t.Errorf("after stop: %+v", got)
	}
}
