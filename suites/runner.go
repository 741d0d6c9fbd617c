package suites

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/brakebench/brakebench/faults"
	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/progress"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/recorder"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/stats"
	"github.com/brakebench/brakebench/internal/teardown"
	"github.com/brakebench/brakebench/internal/undo"
)

// Scope is one cell's footing, the same for every suite: a labelled namespace of its own, a
// revert stack that is on the run's stack before anything is created (so an interrupt tears the
// cell down too), the cell's timeline, its phase timings and its teardown.
type Scope struct {
	Namespace string
	Labels    map[string]string
	// Reverts are the cell's: they run, newest first, at the end of the cell or on interrupt.
	Reverts  *undo.Stack
	Timeline *faults.Timeline
	// T0 is when the cell's load starts (the fault timeline is relative to it); zero: none.
	T0 time.Time

	clients *kube.Clients
	start   time.Time
	phases  map[string]float64
	// gate is the runner's (nil outside one); deferred: this cell's teardown emptied its
	// namespace and left it for the runner to delete after the run's cells (namespaceGate.drain).
	gate     *namespaceGate
	deferred bool
}

// Phase records the seconds since since as phase name.
func (s *Scope) Phase(name string, since time.Time) {
	s.phases[name] = time.Since(since).Seconds()
}

// Recorder starts the recorder's informers on the cell's namespace; they stop with the cell.
func (s *Scope) Recorder(ctx context.Context) (*recorder.Recorder, error) {
	rec, err := recorder.Start(ctx, s.clients, s.Namespace)
	if err != nil {
		return nil, err
	}
	s.Reverts.Push("recorder", func(context.Context) error { rec.Stop(); return nil })
	return rec, nil
}

// cellFunc is a suite's experiment for one planned cell, inside its scope. The runner fills in
// the cell's identity, namespace, phases and fault timeline.
type cellFunc func(ctx context.Context, sc *Scope, pc PlannedCell, idx int) results.Cell

// runCells runs the plan's cells in order, the one loop every suite shares: a cell the plan
// marked not applicable is recorded as such, an interrupt stops the run before the next cell,
// every cell gets its scope, and errors reach the run's error list. describe adds to a cell's
// progress line, outcome is printed after it. Under a sequential design (plan.Design) the cells
// come in rounds; after each round from the design's minimum the cells whose verdict is settled
// are closed and their later repetitions are not run (the baseline runs while any compared cell
// does).
func runCells(ctx context.Context, env *Env, plan *Plan, res *results.Results, describe func(PlannedCell) string, run cellFunc, outcome func(results.Cell) string) {
	sq := newRounds(plan)
	lo, hi := sq.bounds()
	ov := env.Progress.Overall("cells", lo+warmups(env), hi+warmups(env))
	defer ov.Finish()
	gate := &namespaceGate{}
	// The cells' emptied namespaces are deleted when the cells are done (returned, interrupted
	// or panicking), and waited for: nothing of the run outlives it.
	defer gate.drain(ctx, env, res)
	warmUp(ctx, env, gate, plan, res, run, ov)
	sq.done = 0
	for i, pc := range plan.Cells {
		// Rounds exist only under the sequential design (the fixed design's order is shuffled
		// across repetitions, so a change of repetition number is no round boundary).
		if sq.design != nil && i > 0 && pc.Rep != plan.Cells[i-1].Rep {
			sq.look(env, plan, res, plan.Cells[i-1].Rep)
			lo, hi := sq.bounds()
			ov.Plan(lo+len(res.Warmup), hi+len(res.Warmup))
			if sq.design != nil {
				ov.Note(fmt.Sprintf("round %d", pc.Rep))
			}
		}
		if ctx.Err() != nil {
			res.Errors = append(res.Errors, "interrupted before cell "+pc.ID)
			res.Incomplete = fmt.Sprintf("interrupted after %d of %s cells", sq.done, sq.planned())
			break
		}
		if pc.NotApplicable != "" {
			res.Cells = append(res.Cells, results.Cell{ID: pc.ID, Name: pc.Name, Rep: pc.Rep, Brake: pc.Brake, Fault: pc.Fault, NotApplicable: pc.NotApplicable,
				Controller: results.Controller{Version: pc.Version, Flags: pc.Flags}})
			if pc.Rep <= 1 {
				env.Progress.Printf("==> %s not applicable: %s", pc.Name, pc.NotApplicable)
			}
			continue
		}
		if sq.closed[pc.Name] {
			continue
		}
		env.Progress.Printf("==> cell %d of %s: %s (%s)", sq.done+1, sq.planned(), pc.ID, describe(pc))
		ov.Start(pc.ID + label(env, pc))
		cell := runBetween(ctx, env, gate, pc, i, run)
		ov.Done()
		sq.done++
		sq.left[pc.Name]--
		res.Cells = append(res.Cells, cell)
		res.CellOrder = append(res.CellOrder, pc.ID)
		if cell.Error == "" && outcome != nil {
			env.Progress.Printf("    %s", outcome(cell))
		}
		noteErrors(env, res, pc.ID, cell)
	}
	if res.Incomplete == "" && ctx.Err() != nil {
		res.Incomplete = fmt.Sprintf("interrupted after %d of %s cells", sq.done, sq.planned())
	}
}

// rounds tracks a run's cells under its design: how many ran, which names are closed, and the
// planned range of cells still to come (a range under the sequential design).
type rounds struct {
	design *stats.Sequential
	closed map[string]bool
	done   int
	left   map[string]int // planned repetitions not yet run, per open name
}

func newRounds(plan *Plan) *rounds {
	r := &rounds{design: plan.Design, closed: map[string]bool{}, left: map[string]int{}}
	for _, pc := range plan.Cells {
		if pc.NotApplicable == "" {
			r.left[pc.Name]++
		}
	}
	return r
}

// planned is the number of cells the run will have run in all: "40", or under the sequential
// design the range from "every open cell stops at its next look" to "every open cell runs to the
// maximum" ("12-40").
func (r *rounds) planned() string {
	lo, hi := r.bounds()
	if lo == hi {
		return fmt.Sprint(hi)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

// bounds is planned as numbers: the fewest and the most measured cells the run will have run.
func (r *rounds) bounds() (lo, hi int) {
	hi, lo = r.done, r.done
	for _, n := range r.left {
		hi += n
	}
	if r.design == nil {
		return hi, hi
	}
	for name, n := range r.left {
		if n > 0 && !r.closed[name] {
			lo += min(n, max(r.design.MinReps-(r.design.MaxReps-n), 1))
		}
	}
	return lo, hi
}

// warmups is the number of warm-up cells the run will run first.
func warmups(env *Env) int {
	if env.Config == nil {
		return 0
	}
	return max(env.Config.Matrix.Warmup, 0)
}

// label names a cell's controller version for the overall progress line.
func label(env *Env, pc PlannedCell) string {
	if pc.Version == "" && env.Versions["agent-sandbox"] == "" {
		return ""
	}
	return " (" + versionName(pc.Version, env.Versions["agent-sandbox"]) + ")"
}

// look runs after round `round`: from the design's minimum on, it closes every cell whose
// verdict is settled and says why.
func (r *rounds) look(env *Env, plan *Plan, res *results.Results, round int) {
	for name := range r.left {
		r.left[name] = 0
	}
	for _, pc := range plan.Cells {
		if pc.NotApplicable == "" && pc.Rep > round && !r.closed[pc.Name] {
			r.left[pc.Name]++
		}
	}
	if r.design == nil || round < r.design.MinReps {
		return
	}
	states := analysis.Sequential(res.Cells, plan.Names, plan.Baseline, r.design, round, false, false)
	var open []string
	for _, name := range plan.Names {
		st, ok := states[name]
		if !ok || r.closed[name] {
			continue
		}
		if st.Open {
			open = append(open, name)
			continue
		}
		r.closed[name] = true
		r.left[name] = 0
		env.Progress.Printf("    %s: %s", name, st.Stopping.Detail)
		if st.Verdict != nil {
			for _, m := range st.Verdict.Metrics {
				env.Progress.Printf("      %s", m.Text)
			}
		}
	}
	if len(open) > 0 {
		env.Progress.Printf("==> round %d done: %d of %d cells open (%s), %s cells in all", round, len(open), len(states), strings.Join(open, ", "), r.planned())
	}
}

// noteErrors adds a cell's error and teardown error to the run's errors and prints them.
func noteErrors(env *Env, res *results.Results, id string, cell results.Cell) {
	if cell.Error != "" {
		res.Errors = append(res.Errors, id+": "+cell.Error)
		env.Progress.Printf("    error: %s", cell.Error)
	}
	if cell.TeardownError != "" {
		res.Errors = append(res.Errors, id+": teardown: "+cell.TeardownError)
		env.Progress.Printf("    teardown: %s", cell.TeardownError)
	}
}

// warmUp runs matrix.warmup unmeasured copies of the plan's first baseline cell before the
// measured cells (a fresh lab serves its first cell faster than every later one), with the same
// housekeeping and scope, and records them in res.Warmup only: no analysis, gate or drift sees
// them. A warm-up that fails is a run error (the lab is not as the measured cells expect).
func warmUp(ctx context.Context, env *Env, gate *namespaceGate, plan *Plan, res *results.Results, run cellFunc, ov *progress.Overall) {
	if env.Config == nil || env.Config.Matrix.Warmup <= 0 {
		return
	}
	var base *PlannedCell
	for i := range plan.Cells {
		pc := &plan.Cells[i]
		if pc.NotApplicable == "" && (base == nil || (pc.Name == plan.Baseline && base.Name != plan.Baseline)) {
			base = pc
		}
	}
	if base == nil {
		return
	}
	for w := 1; w <= env.Config.Matrix.Warmup; w++ {
		if ctx.Err() != nil {
			return // the measured cells' loop records the interrupt
		}
		pc := *base
		pc.ID, pc.Rep = fmt.Sprintf("warmup-%d", w), 0
		env.Progress.Printf("==> warm-up %d/%d: %s, not measured", w, env.Config.Matrix.Warmup, pc.Name)
		ov.Start(pc.ID + label(env, pc))
		cell := runBetween(ctx, env, gate, pc, len(plan.Cells)+w-1, run)
		ov.Done()
		res.Warmup = append(res.Warmup, cell)
		noteErrors(env, res, pc.ID, cell)
	}
}

// runBetween runs one cell after the lab's housekeeping and health snapshot. A lab that lost a
// process is broken, and a namespace an earlier cell's teardown left behind is still being
// deleted: either way the cell is recorded as not run rather than measuring timeouts or that
// deletion. After the cell, a namespace its teardown left behind is waited for (gate.settle).
func runBetween(ctx context.Context, env *Env, gate *namespaceGate, pc PlannedCell, idx int, run cellFunc) results.Cell {
	if why := gate.blocks(ctx, env); why != "" {
		return results.Cell{ID: pc.ID, Name: pc.Name, Rep: pc.Rep, Brake: pc.Brake, Fault: pc.Fault,
			Controller: results.Controller{Version: pc.Version, Flags: pc.Flags}, Error: "not run: " + why}
	}
	health, hk := betweenCells(ctx, env)
	if hk != nil && hk.Error != "" {
		env.Progress.Printf("    lab housekeeping failed (the cell runs on the lab as it is): %s", hk.Error)
	}
	var cell results.Cell
	if health != nil && len(health.Down) > 0 {
		cell = results.Cell{ID: pc.ID, Name: pc.Name, Rep: pc.Rep, Brake: pc.Brake, Fault: pc.Fault,
			Controller: results.Controller{Version: pc.Version, Flags: pc.Flags},
			Error:      "not run: the lab is broken, these of its processes no longer run: " + strings.Join(health.Down, ", ")}
	} else {
		cell = runScoped(ctx, env, gate, pc, idx, run)
		gate.settle(ctx, env, pc, &cell)
	}
	cell.Lab, cell.Housekeeping = health, hk
	return cell
}

// cellTeardownTimeout bounds the runner's deletion of a cell's namespace, and its wait for a
// namespace a cell's teardown left behind.
var cellTeardownTimeout = 5 * time.Minute

// namespaceGate keeps a cell from starting while an earlier cell's namespace is still being
// deleted: the deletion of thousands of objects loads the API server, etcd and the controllers
// as much as a burst does, and a cell beside it would measure it too.
type namespaceGate struct {
	ns, cell string    // the namespace left behind and the cell it was
	since    time.Time // when that cell's teardown began
	// deferred are the namespaces the cells' teardowns emptied and left (teardown's
	// Options.Defer), in order; drain deletes them after the cells.
	deferred []deferredNamespace
}

// deferredNamespace is a cell's emptied namespace, left for the end of the run.
type deferredNamespace struct{ ns, cell string }

// drain deletes the cells' emptied namespaces at the end of the run (interrupted or not), side
// by side, each waited for on a watch up to cellTeardownTimeout, and records how many and how
// long; one that does not go is a run error naming it and its cell.
func (g *namespaceGate) drain(ctx context.Context, env *Env, res *results.Results) {
	todo := g.deferred
	g.deferred = nil
	if len(todo) == 0 {
		return
	}
	start := time.Now()
	errs := make([]error, len(todo))
	var wg sync.WaitGroup
	for i, d := range todo {
		wg.Go(func() {
			if err := teardown.DeleteNamespace(context.WithoutCancel(ctx), env.Clients, d.ns, cellTeardownTimeout); err != nil {
				errs[i] = fmt.Errorf("cell %s: %w", d.cell, err)
			}
		})
	}
	wg.Wait()
	d := &results.DeferredNamespaces{Count: len(todo), Seconds: time.Since(start).Seconds()}
	res.DeferredNamespaces = d
	if err := errors.Join(errs...); err != nil {
		d.Error = err.Error()
		res.Errors = append(res.Errors, "the cells' emptied namespaces: "+err.Error())
		env.Progress.Printf("==> the cells' %d emptied namespaces, after %.1f s: %v", d.Count, d.Seconds, err)
		return
	}
	env.Progress.Printf("==> deleted the cells' %d emptied namespaces in %.1f s", d.Count, d.Seconds)
}

// settle runs after a cell whose teardown failed: if the cell's namespace is still there, it
// waits for it on a watch, up to cellTeardownTimeout (the namespace controller goes on deleting
// it; a second sweep would only compete with it), and records the wait in the cell. A namespace
// still there after that closes the gate. Nothing is waited for after an interrupt.
func (g *namespaceGate) settle(ctx context.Context, env *Env, pc PlannedCell, cell *results.Cell) {
	if cell.TeardownError == "" || cell.Namespace == "" || ctx.Err() != nil {
		return
	}
	began := time.Now().Add(-time.Duration(cell.Phases["teardown"] * float64(time.Second)))
	c, ns := env.Clients, cell.Namespace
	exists, _, err := teardown.NamespaceRemaining(ctx, c, ns)
	if err == nil && !exists {
		return
	}
	env.Progress.Printf("    the teardown left namespace %s; waiting up to %s for it to go before the next cell", ns, cellTeardownTimeout)
	start := time.Now()
	werr := teardown.WaitNamespaceGone(ctx, c, ns, cellTeardownTimeout)
	wait := &results.TeardownWait{Seconds: time.Since(start).Seconds(), Gone: werr == nil}
	if cell.Teardown == nil {
		cell.Teardown = &results.Teardown{}
	}
	cell.Teardown.Wait = wait
	if werr == nil {
		env.Progress.Printf("    namespace %s gone after %.0f s more", ns, wait.Seconds)
		return
	}
	_, wait.Remaining, _ = teardown.NamespaceRemaining(context.WithoutCancel(ctx), c, ns)
	g.ns, g.cell, g.since = ns, pc.ID, began
}

// blocks says why the next cell may not start ("" when it may): the namespace an earlier cell
// left behind still exists. A namespace gone since opens the gate again.
func (g *namespaceGate) blocks(ctx context.Context, env *Env) string {
	if g.ns == "" {
		return ""
	}
	exists, remaining, err := teardown.NamespaceRemaining(ctx, env.Clients, g.ns)
	if err == nil && !exists {
		env.Progress.Printf("    namespace %s (cell %s) is gone now, %.0f s after its teardown began; cells run again", g.ns, g.cell, time.Since(g.since).Seconds())
		g.ns = ""
		return ""
	}
	if err != nil {
		remaining = "could not read it: " + err.Error()
	}
	if remaining != "" {
		remaining = " (" + remaining + ")"
	}
	return fmt.Sprintf("the previous cell's namespace %s (cell %s) is still being deleted after %.0f s%s; a cell sharing the API server with that deletion would measure it too",
		g.ns, g.cell, time.Since(g.since).Seconds(), remaining)
}

// betweenCells tidies the lab before a cell when lab.housekeeping asks for it, then records the
// lab's health (what grows over its lifetime) for the drift analysis. A cluster brakebench did
// not create is neither read nor touched.
func betweenCells(ctx context.Context, env *Env) (*results.LabHealth, *results.Housekeeping) {
	hk, ok := env.Cluster.(provider.Housekeeper)
	if !ok || env.Config == nil {
		return nil, nil
	}
	var done *results.Housekeeping
	if steps := env.Config.Lab.Steps(); len(steps) > 0 {
		h, err := hk.Housekeep(ctx, steps)
		if err != nil {
			h.Error = err.Error()
		}
		done = &h
	}
	health, err := hk.Health(ctx)
	if err != nil {
		health.Error = err.Error()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	health.HarnessGoroutines, health.HarnessHeapBytes = runtime.NumGoroutine(), ms.HeapAlloc
	return &health, done
}

// runScoped opens a cell's scope, runs the experiment and tears the scope down. The namespace's
// deletion is registered before the namespace exists. A teardown that fails does not void what
// the cell measured: it is reported as the cell's teardown error (and a run error).
func runScoped(ctx context.Context, env *Env, gate *namespaceGate, pc PlannedCell, idx int, run cellFunc) (cell results.Cell) {
	c := env.Clients
	sc := &Scope{
		Namespace: fmt.Sprintf("bb-%s-%02d", env.RunID, idx),
		Labels:    map[string]string{kube.ManagedByKey: kube.ManagedByValue, kube.RunIDKey: env.RunID},
		Reverts:   &undo.Stack{}, Timeline: &faults.Timeline{},
		clients: c, start: time.Now(), phases: map[string]float64{}, gate: gate,
	}
	sc.Reverts.Push("namespace "+sc.Namespace, func(ctx context.Context) error {
		if sc.deferred {
			return nil // emptied and left: the gate deletes it after the cells
		}
		return teardown.DeleteNamespace(ctx, c, sc.Namespace, cellTeardownTimeout)
	})
	env.Reverts.Push("cell "+pc.ID, sc.Reverts.Run)
	defer func() {
		down := time.Now()
		// Every deletion of the namespace in the cell's reverts is recorded, a suite's own
		// (warm-pool cells delete theirs, timed into phases, before the runner's) included.
		var td results.Teardown
		tctx := teardown.WithTrace(context.WithoutCancel(ctx), func(ns string, tm teardown.Timings, err error) {
			if ns == sc.Namespace && !tm.AlreadyGone {
				td.Deletions = append(td.Deletions, deletionRecord(tm, err))
			}
		})
		if err := sc.Reverts.Run(tctx); err != nil {
			cell.TeardownError = err.Error()
		}
		if sc.deferred && gate != nil {
			gate.deferred = append(gate.deferred, deferredNamespace{ns: sc.Namespace, cell: pc.ID})
		}
		if len(td.Deletions) > 0 {
			cell.Teardown = &td
			if _, ok := sc.phases["teardown.sweep"]; !ok {
				sc.phases["teardown.sweep"], sc.phases["teardown.namespace"] = td.Deletions[0].SweepSeconds, td.Deletions[0].NamespaceSeconds
			}
		}
		sc.Phase("teardown", down)
		sc.Phase("total", sc.start)
		for k, v := range cell.Phases {
			if _, ok := sc.phases[k]; !ok {
				sc.phases[k] = v
			}
		}
		cell.Phases = sc.phases
		if !sc.T0.IsZero() {
			cell.FaultLog = sc.Timeline.Relative(sc.T0)
		}
		cell.ID, cell.Name, cell.Rep, cell.Namespace = pc.ID, pc.Name, pc.Rep, sc.Namespace
		if ctx.Err() != nil && cell.Error == "" {
			cell.Error = "interrupted"
		}
	}()
	if _, err := c.Typed.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sc.Namespace, Labels: sc.Labels}}, metav1.CreateOptions{}); err != nil {
		return results.Cell{Brake: pc.Brake, Fault: pc.Fault, Error: "create namespace: " + err.Error()}
	}
	return run(ctx, sc, pc, idx)
}

// deletionRecord is a namespace deletion's timings as results record them.
func deletionRecord(tm teardown.Timings, err error) results.NamespaceDeletion {
	d := results.NamespaceDeletion{Method: string(tm.Method), SweepSeconds: tm.Sweep.Seconds(), NamespaceSeconds: tm.Namespace.Seconds(), Refused: tm.Refused, Deferred: tm.Deferred}
	if err != nil {
		d.Error = err.Error()
	}
	for _, k := range tm.Kinds {
		sk := results.SweepKind{Resource: k.Resource, Seconds: k.Duration.Seconds(), Found: k.Found, Deleted: k.Deleted, Left: k.Left,
			Requests: k.Requests, Timeouts: k.Timeouts, Refused: k.Refused, NotServed: k.NotServed}
		if k.Err != nil {
			sk.Error = k.Err.Error()
		}
		d.Kinds = append(d.Kinds, sk)
	}
	return d
}

// flagList prints controller flags for a progress line ("none" when there are none).
func flagList(flags []string) string {
	if len(flags) == 0 {
		return "none"
	}
	return strings.Join(flags, " ")
}
