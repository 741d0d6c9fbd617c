package suites

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/brakebench/brakebench/internal/progress"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
	"github.com/brakebench/brakebench/internal/sut/keda"
	"github.com/brakebench/brakebench/internal/sut/kueuelws"
)

// onLine calls f (once) when a progress line containing substr is written.
type onLine struct {
	mu     sync.Mutex
	substr string
	f      func()
	done   bool
	lines  strings.Builder
}

func (o *onLine) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lines.Write(p)
	if !o.done && o.f != nil && strings.Contains(string(p), o.substr) {
		o.done = true
		o.f()
	}
	return len(p), nil
}

// teardownEnv is runnerEnv with every kind a namespace's teardown lists (the finalizer fallback's
// too).
func teardownEnv(t *testing.T) *Env {
	env := runnerEnv(t)
	lists := map[schema.GroupVersionResource]string{
		agentsandbox.ClaimGVR: "SandboxClaimList", agentsandbox.PoolGVR: "SandboxWarmPoolList", agentsandbox.SandboxGVR: "SandboxList",
		kueuelws.LWSGVR: "LeaderWorkerSetList", kueuelws.WorkloadGVR: "WorkloadList", keda.ScaledObjectGVR: "ScaledObjectList",
		keda.HPAGVR: "HorizontalPodAutoscalerList", {Version: "v1", Resource: "pods"}: "PodList", {Version: "v1", Resource: "namespaces"}: "NamespaceList",
	}
	env.Clients.Dynamic = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists)
	return env
}

// The next cell starts only once the previous cell's namespace is gone. A teardown that leaves
// its namespace is followed by a wait for it on a watch (recorded in the cell); a namespace
// still there after that wait keeps every later cell from running, each recorded as not run
// with the namespace, its cell and why it is still there (a run error, like a broken lab's
// cells); one that goes during the wait lets the next cell run; a teardown that failed but
// took its namespace with it is not waited for.
func TestRunCellsWaitForThePreviousNamespace(t *testing.T) {
	defer func(d time.Duration) { cellTeardownTimeout = d }(cellTeardownTimeout)
	cellTeardownTimeout = 400 * time.Millisecond
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	cases := []struct {
		name    string
		stuck   bool // the first cell's namespace is not deleted by its teardown
		goesBy  bool // it goes during the runner's wait
		failing bool // a revert of the first cell fails (its namespace goes)
		ran     string
		waited  *bool // the first cell's recorded wait: nil none, else whether the namespace went
	}{
		{name: "the namespace stays: the later cells are not run", stuck: true, ran: "a#1", waited: new(false)},
		{name: "the namespace goes during the wait: the next cells run", stuck: true, goesBy: true, ran: "a#1,b#1,c#1", waited: new(true)},
		{name: "a teardown error without a namespace left: no wait", failing: true, ran: "a#1,b#1,c#1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := teardownEnv(t)
			typed := env.Clients.Typed.(*fake.Clientset)
			dyn := env.Clients.Dynamic.(*dynamicfake.FakeDynamicClient)
			out := &onLine{substr: "waiting up to"}
			env.Progress = progress.New(out)
			first := "bb-t1-00"
			if c.stuck {
				// The namespace exists for the watches too, and its deletion never completes.
				u := &unstructured.Unstructured{}
				u.SetAPIVersion("v1")
				u.SetKind("Namespace")
				u.SetName(first)
				if err := dyn.Tracker().Create(nsGVR, u, ""); err != nil {
					t.Fatal(err)
				}
				typed.PrependReactor("delete", "namespaces", func(a k8stesting.Action) (bool, runtime.Object, error) {
					return a.(k8stesting.DeleteAction).GetName() == first, nil, nil
				})
			}
			if c.goesBy {
				out.f = func() {
					go func() {
						time.Sleep(50 * time.Millisecond)
						_ = typed.Tracker().Delete(nsGVR, "", first)
						_ = dyn.Tracker().Delete(nsGVR, "", first)
					}()
				}
			}
			plan := &Plan{Cells: []PlannedCell{{ID: "a#1", Name: "a", Rep: 1}, {ID: "b#1", Name: "b", Rep: 1}, {ID: "c#1", Name: "c", Rep: 1}}}
			res := &results.Results{}
			var ran []string
			runCells(context.Background(), env, plan, res, func(PlannedCell) string { return "" },
				func(ctx context.Context, sc *Scope, pc PlannedCell, idx int) results.Cell {
					ran = append(ran, pc.ID)
					if c.failing && pc.ID == "a#1" {
						sc.Reverts.Push("something of the cell", func(context.Context) error { return errors.New("finalizer stuck") })
					}
					return results.Cell{Stats: results.CellStats{Total: 1}}
				}, nil)
			if got := strings.Join(ran, ","); got != c.ran {
				t.Fatalf("ran %s, want %s\n%s", got, c.ran, out.lines.String())
			}
			if len(res.Cells) != 3 {
				t.Fatalf("%d cells recorded, want all 3", len(res.Cells))
			}
			a := res.Cells[0]
			if a.TeardownError == "" || a.Stats.Total != 1 {
				t.Errorf("first cell: teardown error %q, total %d (its numbers stand)", a.TeardownError, a.Stats.Total)
			}
			switch {
			case c.waited == nil && a.Teardown != nil && a.Teardown.Wait != nil:
				t.Errorf("waited %+v for a namespace that was gone", a.Teardown.Wait)
			case c.waited != nil && (a.Teardown == nil || a.Teardown.Wait == nil || a.Teardown.Wait.Gone != *c.waited):
				t.Errorf("first cell's teardown %+v, want a wait with gone=%v", a.Teardown, *c.waited)
			case c.waited != nil && (len(a.Teardown.Deletions) != 1 || a.Teardown.Deletions[0].Error == "" || a.Teardown.Deletions[0].Method != "paged"):
				t.Errorf("first cell's deletions %+v, want the runner's one, failed", a.Teardown.Deletions)
			}
			if c.ran != "a#1" {
				for _, cell := range res.Cells[1:] {
					if cell.Error != "" {
						t.Errorf("%s: %s", cell.ID, cell.Error)
					}
				}
				return
			}
			if a.Teardown.Wait.Seconds < cellTeardownTimeout.Seconds()*0.9 {
				t.Errorf("waited %.2f s, want the teardown timeout", a.Teardown.Wait.Seconds)
			}
			for _, cell := range res.Cells[1:] {
				want := "not run: the previous cell's namespace bb-t1-00 (cell a#1) is still being deleted after "
				if !strings.HasPrefix(cell.Error, want) || !strings.HasSuffix(cell.Error, "; a cell sharing the API server with that deletion would measure it too") || cell.Name == "" {
					t.Errorf("%s: %q", cell.ID, cell.Error)
				}
			}
			joined := strings.Join(res.Errors, "\n")
			if !strings.Contains(joined, "a#1: teardown: ") || !strings.Contains(joined, "b#1: not run: ") || !strings.Contains(joined, "c#1: not run: ") {
				t.Errorf("run errors:\n%s", joined)
			}
		})
	}
}

// A namespace that was left behind and has gone since lets the cells after it run again.
func TestNamespaceGateOpensWhenGone(t *testing.T) {
	env := runnerEnv(t)
	typed := env.Clients.Typed.(*fake.Clientset)
	if _, err := typed.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bb-t1-03"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g := &namespaceGate{ns: "bb-t1-03", cell: "a#4", since: time.Now().Add(-400 * time.Second)}
	why := g.blocks(context.Background(), env)
	if !strings.HasPrefix(why, "the previous cell's namespace bb-t1-03 (cell a#4) is still being deleted after 400 s (not being deleted)") {
		t.Errorf("blocks: %q", why)
	}
	if err := typed.CoreV1().Namespaces().Delete(context.Background(), "bb-t1-03", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if why := g.blocks(context.Background(), env); why != "" || g.ns != "" {
		t.Errorf("gone, yet blocks: %q", why)
	}
}

// A warm-pool cell's teardown that empties its namespace leaves it there, undeleted, and the
// next cell neither waits for it nor is blocked by it; the run deletes every such namespace
// once, after its cells, side by side, and records how many and how long. A namespace that
// does not go is a run error naming it and its cell; an interrupt, or a cell that panics,
// still deletes them all.
func TestRunCellsDeferredNamespaces(t *testing.T) {
	defer func(d time.Duration) { cellTeardownTimeout = d }(cellTeardownTimeout)
	cellTeardownTimeout = 300 * time.Millisecond
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	cases := []struct {
		name      string
		stuck     string // the namespace that never goes once deleted
		interrupt bool   // the run is interrupted during the second cell
		panics    bool   // the third cell panics after its teardown is registered
		ran       string
	}{
		{name: "each namespace deleted after the cells", ran: "a#1,b#1,c#1"},
		{name: "the first stays: a run error at the end, every cell ran", stuck: "bb-t1-00", ran: "a#1,b#1,c#1"},
		{name: "interrupted: the cells that ran have their namespaces deleted", interrupt: true, ran: "a#1,b#1"},
		{name: "a cell panics: every namespace is still deleted", panics: true, ran: "a#1,b#1,c#1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := teardownEnv(t)
			typed := env.Clients.Typed.(*fake.Clientset)
			dyn := env.Clients.Dynamic.(*dynamicfake.FakeDynamicClient)
			// The namespace controller, played by the reactor: a deleted namespace goes (for the
			// watches too) 50 ms later, unless it is the stuck one.
			typed.PrependReactor("delete", "namespaces", func(a k8stesting.Action) (bool, runtime.Object, error) {
				ns := a.(k8stesting.DeleteAction).GetName()
				if ns != c.stuck {
					time.AfterFunc(50*time.Millisecond, func() { _ = dyn.Tracker().Delete(nsGVR, "", ns) })
				}
				return ns == c.stuck, nil, nil
			})
			deletes := func() map[string]int {
				n := map[string]int{}
				for _, a := range typed.Actions() {
					if a.GetVerb() == "delete" && a.GetResource().Resource == "namespaces" {
						n[a.(k8stesting.DeleteAction).GetName()]++
					}
				}
				return n
			}
			plan := &Plan{Cells: []PlannedCell{{ID: "a#1", Name: "a", Rep: 1}, {ID: "b#1", Name: "b", Rep: 1}, {ID: "c#1", Name: "c", Rep: 1}}}
			res := &results.Results{}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var ran []string
			var recovered any
			func() {
				defer func() { recovered = recover() }()
				runCells(ctx, env, plan, res, func(PlannedCell) string { return "" },
					func(ctx context.Context, sc *Scope, pc PlannedCell, idx int) results.Cell {
						ran = append(ran, pc.ID)
						if d := deletes(); len(d) > 0 {
							t.Errorf("%s: namespaces deleted while cells run: %v", pc.ID, d)
						}
						u := &unstructured.Unstructured{}
						u.SetAPIVersion("v1")
						u.SetKind("Namespace")
						u.SetName(sc.Namespace)
						if err := dyn.Tracker().Create(nsGVR, u, ""); err != nil {
							t.Fatal(err)
						}
						pushNamespaceTeardown(env, sc)
						if c.interrupt && pc.ID == "b#1" {
							cancel()
						}
						if c.panics && pc.ID == "c#1" {
							panic("a bug in the cell")
						}
						return results.Cell{Stats: results.CellStats{Total: 1}}
					}, nil)
			}()
			if (recovered != nil) != c.panics {
				t.Fatalf("recovered %v, want a panic: %v", recovered, c.panics)
			}
			if got := strings.Join(ran, ","); got != c.ran {
				t.Fatalf("ran %s, want %s", got, c.ran)
			}
			d := deletes()
			for _, cell := range res.Cells {
				ns := cell.Namespace
				if d[ns] != 1 {
					t.Errorf("%s: namespace %s deleted %d times, want once, after the cells", cell.ID, ns, d[ns])
				}
				if cell.Teardown == nil || len(cell.Teardown.Deletions) != 1 || !cell.Teardown.Deletions[0].Deferred || cell.TeardownError != "" {
					t.Errorf("%s: teardown %+v (%s), want one deferred deletion", cell.ID, cell.Teardown, cell.TeardownError)
				}
				if _, ok := cell.Phases["previous_namespace"]; ok {
					t.Errorf("%s: waited for a previous namespace (phases %v)", cell.ID, cell.Phases)
				}
				if ns != c.stuck {
					if _, err := dyn.Tracker().Get(nsGVR, "", ns); err == nil {
						t.Errorf("%s: namespace %s still there after the run", cell.ID, ns)
					}
				}
			}
			if c.panics && d["bb-t1-02"] != 1 {
				t.Errorf("the panicking cell's namespace deleted %d times, want once", d["bb-t1-02"])
			}
			if dn := res.DeferredNamespaces; dn == nil || dn.Count != len(ran) || (dn.Error != "") != (c.stuck != "") {
				t.Errorf("deferred namespaces %+v, want %d", dn, len(ran))
			}
			joined := strings.Join(res.Errors, "\n")
			switch {
			case c.stuck != "":
				if !strings.Contains(joined, "cell a#1: namespace bb-t1-00 not gone") {
					t.Errorf("run errors:\n%s\nwant the first namespace not gone", joined)
				}
			case c.interrupt:
				if !strings.Contains(joined, "interrupted before cell c#1") {
					t.Errorf("run errors:\n%s\nwant the interrupt", joined)
				}
			case len(res.Errors) > 0:
				t.Errorf("run errors:\n%s", joined)
			}
		})
	}
}
