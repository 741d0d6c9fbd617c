package suites

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/undo"
)

// Every change brakebench journals has a replayer that cleanup finds through the registry.
func TestEveryJournaledChangeHasAReplayer(t *testing.T) {
	cases := []struct {
		e     undo.Entry
		early bool
	}{
		{undo.Entry{Op: undo.OpChanged, Kind: "Node", Name: "n1"}, false},
		{undo.Entry{Op: undo.OpChanged, Kind: "LabComponent", Name: "kube-scheduler"}, false},
		{undo.Entry{Op: undo.OpController, Ref: "controller"}, false},
		{undo.Entry{Op: undo.OpChanged, Kind: "Kueue"}, true},
		{undo.Entry{Op: undo.OpChanged, Kind: "KEDA"}, false},
	}
	for _, tc := range cases {
		r, ok := undo.ReplayerFor(tc.e)
		if !ok || r.Early != tc.early || r.What(tc.e, "run1") == "" {
			t.Errorf("%s %s: replayer found %v, early %v", tc.e.Op, tc.e.Kind, ok, r.Early)
		}
	}
	if _, ok := undo.ReplayerFor(undo.Entry{Op: undo.OpChanged, Kind: "Volcano"}); ok {
		t.Error("an unknown kind must have no replayer (cleanup reports it as failed)")
	}
}

type restoreCluster struct {
	provider.Cluster
	ctrl *restoreController
}

func (c restoreCluster) Controller() provider.Controller { return c.ctrl }
func (c restoreCluster) Info() provider.Info             { return provider.Info{Provider: "test"} }
func (c restoreCluster) RESTConfig() *rest.Config        { return &rest.Config{} }

type restoreController struct {
	provider.Controller
	got string
}

func (c *restoreController) Restore(_ context.Context, v string, f []string) error {
	c.got = fmt.Sprint(v, " ", f)
	return nil
}

// The controller's journaled original is what cleanup restores; a cluster that cannot restore
// Kueue says so instead of panicking.
func TestControllerAndKueueReplay(t *testing.T) {
	orig, _ := json.Marshal(controllerOriginal{Version: "v0.5.3", Flags: []string{"--a=1"}})
	ctrl := &restoreController{}
	env := undo.ReplayEnv{Cluster: restoreCluster{ctrl: ctrl}}
	e := undo.Entry{Op: undo.OpController, Original: orig}
	r, _ := undo.ReplayerFor(e)
	if err := r.Replay(context.Background(), env, e); err != nil || ctrl.got != "v0.5.3 [--a=1]" {
		t.Fatalf("restored %q, %v", ctrl.got, err)
	}
	if err := r.Replay(context.Background(), env, undo.Entry{Op: undo.OpController, Original: []byte("{torn")}); err == nil {
		t.Error("a torn original must be an error")
	}
	k := undo.Entry{Op: undo.OpChanged, Kind: "Kueue"}
	r, _ = undo.ReplayerFor(k)
	if err := r.Replay(context.Background(), env, k); err == nil {
		t.Error("a cluster without Kueue support must fail the Kueue restore")
	}
}

type preparingCluster struct {
	restoreCluster
	built []string
	fail  error
}

func (p *preparingCluster) PrepareVersions(_ context.Context, versions []string) error {
	p.built = append(p.built, versions...)
	return p.fail
}

// Every version a runnable cell needs is prepared once, before the first cell; a failure stops
// the run there.
func TestPrepareVersionsBeforeTheFirstCell(t *testing.T) {
	plan := &Plan{Cells: []PlannedCell{{Version: "v0.5.5"}, {Version: "v0.5.3"}, {Version: "v0.5.5"}, {Version: "v0.4.6", NotApplicable: "no flag"}}}
	pc := &preparingCluster{}
	if err := prepareVersions(context.Background(), &Env{Cluster: pc}, plan); err != nil || fmt.Sprint(pc.built) != "[v0.5.5 v0.5.3]" {
		t.Fatalf("built %v, %v", pc.built, err)
	}
	pc = &preparingCluster{fail: fmt.Errorf("module refused")}
	if err := prepareVersions(context.Background(), &Env{Cluster: pc}, plan); err == nil {
		t.Fatal("a failed build must fail the run before its first cell")
	}
}
