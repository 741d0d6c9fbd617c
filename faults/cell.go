package faults

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/brakebench/brakebench/internal/catalog"
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/recorder"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/undo"
)

// CellFault is one fault type a warm-pool cell can inject (a matrix.faults item). A fault type is
// one file in this package that registers itself (init): what a cell of it changes, where it can
// run, how it is armed (reverts registered before acting), what it measured, which of those
// numbers gates may name, and how its statistics read in the report. The cell runner, the
// planner, the report and the gates only loop over the registry.
type CellFault interface {
	Name() string
	// Change says, for the plan, what a cell of this fault changes.
	Change(cfg *config.Resolved) string
	// NotApplicable says why a cell of this fault cannot run on the configured cluster ("" = it can).
	NotApplicable(cfg *config.Resolved) string
	// Arm injects the fault for one cell, after the pool is full and before the burst.
	Arm(ctx context.Context, c *Cell) (Armed, error)
}

// Armed is a fault armed for a cell.
type Armed interface {
	// Fired tells the fault the burst starts at t0 (a fault armed mid-burst schedules itself).
	Fired(ctx context.Context, t0 time.Time)
	// Settle waits, after the claims, until the fault took effect; an error fails the cell.
	Settle(ctx context.Context, timeout time.Duration) error
	// Stats measures what the fault did in the assembled cell.
	Stats(c *results.Cell, snap recorder.Snapshot) *results.FaultStats
}

// Preparer is a fault type that needs something for the whole run (the GPU fault's DCGM
// exporter); Prepare runs before the first cell when the plan has cells of the fault, and
// registers its reverts on r.Reverts.
type Preparer interface {
	Prepare(ctx context.Context, r *Run) error
}

// Placer is a fault type whose cells need the warm pool's pods on particular nodes (node
// repair: on the NodePool Karpenter repairs); PlacePod adapts the SandboxTemplate's pod spec
// before the pool fills.
type Placer interface {
	PlacePod(cfg *config.Resolved, spec map[string]any) error
}

// Prechecker is a fault type with checks that need no cluster (run before one is touched).
type Prechecker interface {
	Precheck(cfg *config.Resolved) error
}

// Owner is a fault type with settings of its own: Settings names the owner of its keys and the
// struct they decode into (mapstructure tags naming keys under faults.). The loader learns them
// once per owner (fault types that share keys, like the control-plane ones, name one owner), and
// the owner's defaults are configs/faults/<owner>.yaml. A fault type decodes and checks its
// settings itself (settingsOf), in its Precheck: at plan time, before any cluster is touched.
type Owner interface {
	Settings() (owner string, settings any)
}

// Describer is a fault type whose statistics read as labelled rows (report and terminal).
type Describer interface {
	Describe(fs *results.FaultStats) [][2]string
}

// Metricer is a fault type with gate metrics (per repetition), registered in the metric
// catalogue.
type Metricer interface {
	Metrics() []catalog.Metric
}

// Run is what a Preparer gets: the run's cluster, journal and revert stack. One Run is shared
// by every fault type of a plan, so what one prepared the next can see (two fault types that
// share a setup prepare it once).
type Run struct {
	Config  *config.Resolved
	Clients *kube.Clients
	Cluster any // the provider's cluster (faults that need an add-on from it)
	Journal *undo.Journal
	RunID   string
	Reverts *undo.Stack
	Printf  func(format string, args ...any)
	// DCGM is set by the GPU fault's Prepare.
	DCGM *DCGMExporter
	// Karpenter is set by the node-repair faults' Prepare.
	Karpenter *provider.Karpenter
}

// Cell is what a fault gets from the cell runner.
type Cell struct {
	Config    *config.Resolved
	Clients   *kube.Clients
	Cluster   any // the provider's cluster (faults that restart control-plane components need a Restarter)
	Journal   *undo.Journal
	Reverts   *undo.Stack // the cell's: runs at the end of the cell, or on interrupt
	Labels    map[string]string
	Namespace string
	RunID     string
	Index     int // the cell's index in the run (object names)
	Rec       *recorder.Recorder
	Timeline  *Timeline
	DCGM      *DCGMExporter
	Karpenter *provider.Karpenter
}

var cellFaults = map[string]CellFault{}

// owners are the owners of fault settings declared to the config loader.
var owners = map[string]bool{}

func registerCell(f CellFault) {
	if _, dup := cellFaults[f.Name()]; dup {
		panic("faults: " + f.Name() + " registered twice")
	}
	cellFaults[f.Name()] = f
	if o, ok := f.(Owner); ok {
		if name, st := o.Settings(); !owners[name] {
			owners[name] = true
			config.Own("faults", name, st)
		}
	}
	cf := catalog.Fault{Name: f.Name()}
	if m, ok := f.(Metricer); ok {
		cf.Metrics = m.Metrics()
	}
	if d, ok := f.(Describer); ok {
		cf.Describe = d.Describe
	}
	catalog.Default.AddFault(cf)
}

// CellFaultNamed is the fault type called name ("none" and "" are no fault: nil, true).
func CellFaultNamed(name string) (CellFault, bool) {
	if name == "" || name == "none" {
		return nil, true
	}
	f, ok := cellFaults[name]
	return f, ok
}

// CellFaultNames are the registered fault types, sorted.
func CellFaultNames() []string {
	var out []string
	for n := range cellFaults {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Timeline collects a cell's fault (and cluster-side brake) events on the harness clock.
type Timeline struct {
	mu     sync.Mutex
	events []timelineEvent
}

type timelineEvent struct {
	at                   time.Time
	fault, event, detail string
}

// Add records an event now.
func (l *Timeline) Add(fault, event, detail string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, timelineEvent{time.Now(), fault, event, detail})
}

// Relative is the timeline in seconds from t0.
func (l *Timeline) Relative(t0 time.Time) []results.FaultEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []results.FaultEvent
	for _, e := range l.events {
		out = append(out, results.FaultEvent{T: e.at.Sub(t0).Seconds(), Fault: e.fault, Event: e.event, Detail: e.detail})
	}
	return out
}
