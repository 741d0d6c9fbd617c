package suites

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/progress"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
	"github.com/brakebench/brakebench/internal/sut/kueuelws"
	"github.com/brakebench/brakebench/internal/undo"
)

func runnerEnv(t *testing.T) *Env {
	t.Helper()
	lists := map[schema.GroupVersionResource]string{
		agentsandbox.ClaimGVR: "SandboxClaimList", agentsandbox.PoolGVR: "SandboxWarmPoolList", agentsandbox.SandboxGVR: "SandboxList",
		kueuelws.LWSGVR: "LeaderWorkerSetList", {Version: "v1", Resource: "pods"}: "PodList", {Version: "v1", Resource: "namespaces"}: "NamespaceList",
	}
	return &Env{
		Clients:  &kube.Clients{Typed: fake.NewClientset(), Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists)},
		Progress: progress.Discard(), Reverts: &undo.Stack{}, RunID: "t1",
	}
}

// The runner gives each cell a labelled namespace and tears it down; a teardown that fails keeps
// the cell's numbers (its teardown error and a run error say what failed); a not-applicable cell
// is recorded without running; an interrupt stops the run before the next cell.
func TestRunCells(t *testing.T) {
	env := runnerEnv(t)
	plan := &Plan{Cells: []PlannedCell{
		{ID: "b#1", Name: "b", Rep: 1, NotApplicable: "no flag"},
		{ID: "a#1", Name: "a", Rep: 1},
		{ID: "c#1", Name: "c", Rep: 1},
	}}
	res := &results.Results{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen []string
	runCells(ctx, env, plan, res, func(PlannedCell) string { return "" },
		func(ctx context.Context, sc *Scope, pc PlannedCell, idx int) results.Cell {
			seen = append(seen, pc.ID)
			ns, err := env.Clients.Typed.CoreV1().Namespaces().Get(ctx, sc.Namespace, metav1.GetOptions{})
			if err != nil || ns.Labels[kube.RunIDKey] != "t1" || ns.Labels[kube.ManagedByKey] != kube.ManagedByValue {
				t.Errorf("cell %s: namespace %v, %v", pc.ID, ns, err)
			}
			sc.Reverts.Push("something of the cell", func(context.Context) error { return errors.New("finalizer stuck") })
			sc.T0 = time.Now()
			sc.Timeline.Add("f", "armed", "x")
			cancel() // the operator presses Ctrl-C during the first cell
			return results.Cell{Stats: results.CellStats{Total: 42}}
		}, nil)
	if strings.Join(seen, ",") != "a#1" {
		t.Fatalf("ran %v, want only a#1 (b is not applicable, the interrupt stops c)", seen)
	}
	if len(res.Cells) != 2 || res.Cells[0].NotApplicable != "no flag" || res.Cells[0].ID != "b#1" {
		t.Fatalf("cells %+v", res.Cells)
	}
	a := res.Cells[1]
	if a.ID != "a#1" || a.Namespace != "bb-t1-01" || a.Stats.Total != 42 || !strings.Contains(a.TeardownError, "finalizer stuck") ||
		a.Phases["teardown"] < 0 || a.Phases["total"] <= 0 || len(a.FaultLog) != 1 {
		t.Errorf("cell a: %+v", a)
	}
	if a.Error != "interrupted" {
		t.Errorf("cell a error %q, want interrupted (the measurements stay)", a.Error)
	}
	joined := strings.Join(res.Errors, "; ")
	if !strings.Contains(joined, "a#1: teardown: ") || !strings.Contains(joined, "interrupted before cell c#1") {
		t.Errorf("run errors %q", joined)
	}
	if _, err := env.Clients.Typed.CoreV1().Namespaces().Get(context.Background(), "bb-t1-01", metav1.GetOptions{}); err == nil {
		t.Error("the cell's namespace was not deleted")
	}
	if env.Reverts.Len() != 1 {
		t.Errorf("run stack holds %d entries, want the cell's (already run, now empty)", env.Reverts.Len())
	}
}

// housekeptLab is a cluster brakebench owns: it counts housekeeping and reports growing health.
type housekeptLab struct {
	provider.Cluster
	log      []string
	revision int64
	downFrom int64 // from this revision on, the scheduler no longer runs (0: never)
}

func (h *housekeptLab) Health(context.Context) (results.LabHealth, error) {
	h.log = append(h.log, "health")
	h.revision += 100
	hl := results.LabHealth{EtcdRevision: h.revision}
	if h.downFrom > 0 && h.revision >= h.downFrom {
		hl.Down = []string{"kube-scheduler"}
	}
	return hl, nil
}

// A lab that lost a process is broken: the cells after that are recorded as not run, with the
// process named, instead of measuring timeouts on it.
func TestRunCellsOnABrokenLab(t *testing.T) {
	env := runnerEnv(t)
	env.Config = &config.Resolved{Config: config.Default()}
	lab := &housekeptLab{downFrom: 200}
	env.Cluster = lab
	plan := &Plan{Cells: []PlannedCell{{ID: "a#1", Name: "a", Rep: 1}, {ID: "a#2", Name: "a", Rep: 2}}}
	res := &results.Results{}
	var ran []string
	runCells(context.Background(), env, plan, res, func(PlannedCell) string { return "" },
		func(ctx context.Context, sc *Scope, pc PlannedCell, idx int) results.Cell {
			ran = append(ran, pc.ID)
			return results.Cell{}
		}, nil)
	if strings.Join(ran, ",") != "a#1" {
		t.Errorf("ran %v, want only a#1", ran)
	}
	if len(res.Cells) != 2 || res.Cells[1].Error != "not run: the lab is broken, these of its processes no longer run: kube-scheduler" || res.Cells[1].Name != "a" {
		t.Errorf("cells %+v", res.Cells)
	}
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "a#2: not run") {
		t.Errorf("run errors %v", res.Errors)
	}
}

func (h *housekeptLab) Housekeep(_ context.Context, steps []string) (results.Housekeeping, error) {
	h.log = append(h.log, "housekeep "+strings.Join(steps, "+"))
	if len(h.log) > 3 { // the second cell's
		return results.Housekeeping{Steps: steps[:1]}, errors.New("etcd down")
	}
	return results.Housekeeping{Steps: steps, DBBytesBefore: 10, DBBytesAfter: 5}, nil
}

// Every cell of a lab run records the lab's health when it starts; with lab.housekeeping the lab
// is tidied before every cell (a failure is recorded, and the cell still runs); without, never.
// A cluster brakebench did not create is neither read nor touched.
func TestRunCellsLabHealthAndHousekeeping(t *testing.T) {
	for _, tc := range []struct {
		name, housekeeping string
		notLab             bool
		wantLog            string
	}{
		{name: "etcd-defrag", housekeeping: "etcd-defrag", wantLog: "housekeep etcd-defrag,health,cell,housekeep etcd-defrag,health,cell"},
		{name: "both steps", housekeeping: "etcd-defrag+apiserver-restart", wantLog: "housekeep etcd-defrag+apiserver-restart,health,cell,housekeep etcd-defrag+apiserver-restart,health,cell"},
		{name: "none", housekeeping: "none", wantLog: "health,cell,health,cell"},
		{name: "not a lab", housekeeping: "etcd-defrag", notLab: true, wantLog: "cell,cell"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := runnerEnv(t)
			cfg := &config.Resolved{Config: config.Default()}
			cfg.Lab.Housekeeping = tc.housekeeping
			env.Config = cfg
			lab := &housekeptLab{}
			env.Cluster = lab
			if tc.notLab {
				env.Cluster = struct{ provider.Cluster }{}
			}
			plan := &Plan{Cells: []PlannedCell{{ID: "a#1", Name: "a", Rep: 1}, {ID: "a#2", Name: "a", Rep: 2}}}
			res := &results.Results{}
			runCells(context.Background(), env, plan, res, func(PlannedCell) string { return "" },
				func(ctx context.Context, sc *Scope, pc PlannedCell, idx int) results.Cell {
					lab.log = append(lab.log, "cell") // health comes before the cell, never during it
					return results.Cell{}
				}, nil)
			got := strings.Join(lab.log, ",")
			if got != tc.wantLog {
				t.Errorf("calls %q, want %q", got, tc.wantLog)
			}
			if tc.notLab {
				for _, c := range res.Cells {
					if c.Lab != nil || c.Housekeeping != nil {
						t.Errorf("cell %s of a cluster brakebench did not create: lab %+v, housekeeping %+v", c.ID, c.Lab, c.Housekeeping)
					}
				}
				return
			}
			if len(res.Cells) != 2 || res.Cells[0].Lab == nil || res.Cells[1].Lab.EtcdRevision != 200 || res.Cells[1].Lab.HarnessGoroutines <= 0 {
				t.Fatalf("cells %+v", res.Cells)
			}
			if tc.housekeeping == "none" {
				if res.Cells[0].Housekeeping != nil {
					t.Errorf("housekeeping recorded without lab.housekeeping: %+v", res.Cells[0].Housekeeping)
				}
				return
			}
			if h := res.Cells[0].Housekeeping; h == nil || h.DBBytesAfter != 5 || h.Error != "" {
				t.Errorf("first cell's housekeeping %+v", h)
			}
			if h := res.Cells[1].Housekeeping; h == nil || h.Error != "etcd down" || res.Cells[1].Error != "" {
				t.Errorf("second cell: housekeeping %+v, error %q (a failed housekeeping is recorded, the cell runs)", h, res.Cells[1].Error)
			}
		})
	}
}

// matrix.warmup runs that many unmeasured copies of the baseline cell first, with the same
// housekeeping and health as a measured cell, in their own namespaces; they land in
// res.Warmup only (never in the cells, the cell order or a summary), and not-applicable cells
// are never chosen as the warm-up.
func TestRunCellsWarmup(t *testing.T) {
	for _, tc := range []struct {
		name      string
		warmup    int
		baseline  string
		cells     []PlannedCell
		wantCalls string
		wantName  string
	}{
		{name: "none", warmup: 0, baseline: "none", cells: []PlannedCell{{ID: "x#1", Name: "x", Rep: 1}, {ID: "none#1", Name: "none", Rep: 1}},
			wantCalls: "x#1,none#1"},
		{name: "two of the baseline", warmup: 2, baseline: "none", cells: []PlannedCell{{ID: "x#1", Name: "x", Rep: 1}, {ID: "none#1", Name: "none", Rep: 1}},
			wantCalls: "warmup-1,warmup-2,x#1,none#1", wantName: "none"},
		{name: "baseline not applicable", warmup: 1, baseline: "none", cells: []PlannedCell{{ID: "none#1", Name: "none", Rep: 1, NotApplicable: "no"}, {ID: "x#1", Name: "x", Rep: 1}},
			wantCalls: "warmup-1,x#1", wantName: "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := runnerEnv(t)
			cfg := &config.Resolved{Config: config.Default()}
			cfg.Matrix.Warmup = tc.warmup
			cfg.Lab.Housekeeping = "etcd-defrag"
			env.Config = cfg
			env.Cluster = &housekeptLab{}
			plan := &Plan{Baseline: tc.baseline, Cells: tc.cells}
			res := &results.Results{}
			var calls []string
			namespaces := map[string]bool{}
			runCells(context.Background(), env, plan, res, func(PlannedCell) string { return "" },
				func(ctx context.Context, sc *Scope, pc PlannedCell, idx int) results.Cell {
					calls = append(calls, pc.ID)
					if namespaces[sc.Namespace] {
						t.Errorf("namespace %s used twice", sc.Namespace)
					}
					namespaces[sc.Namespace] = true
					return results.Cell{}
				}, nil)
			if got := strings.Join(calls, ","); got != tc.wantCalls {
				t.Errorf("ran %s, want %s", got, tc.wantCalls)
			}
			if len(res.Warmup) != tc.warmup {
				t.Fatalf("%d warm-up cells recorded, want %d", len(res.Warmup), tc.warmup)
			}
			for _, w := range res.Warmup {
				if w.Name != tc.wantName || !strings.HasPrefix(w.ID, "warmup-") || w.Lab == nil || w.Housekeeping == nil {
					t.Errorf("warm-up cell %+v", w)
				}
			}
			for _, c := range res.Cells {
				if strings.HasPrefix(c.ID, "warmup-") {
					t.Errorf("warm-up cell %s among the measured cells", c.ID)
				}
			}
			if strings.Contains(strings.Join(res.CellOrder, ","), "warmup") {
				t.Errorf("cell order %v names a warm-up", res.CellOrder)
			}
		})
	}
}

// A warm-up that fails is a run error (the lab is not what the measured cells expect), and the
// measured cells still run.
func TestRunCellsWarmupFailureIsARunError(t *testing.T) {
	env := runnerEnv(t)
	cfg := &config.Resolved{Config: config.Default()}
	cfg.Matrix.Warmup = 1
	env.Config = cfg
	plan := &Plan{Baseline: "none", Cells: []PlannedCell{{ID: "none#1", Name: "none", Rep: 1}}}
	res := &results.Results{}
	runCells(context.Background(), env, plan, res, func(PlannedCell) string { return "" },
		func(ctx context.Context, sc *Scope, pc PlannedCell, idx int) results.Cell {
			if pc.ID == "warmup-1" {
				return results.Cell{Error: "pool did not fill"}
			}
			return results.Cell{}
		}, nil)
	if len(res.Warmup) != 1 || res.Warmup[0].Error != "pool did not fill" || len(res.Cells) != 1 || res.Cells[0].Error != "" {
		t.Fatalf("warm-up %+v, cells %+v", res.Warmup, res.Cells)
	}
	if strings.Join(res.Errors, "|") != "warmup-1: pool did not fill" {
		t.Errorf("run errors %v", res.Errors)
	}
}
