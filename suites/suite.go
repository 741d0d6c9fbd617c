// Package suites holds the experiments. Each suite registers itself by name and reads top to
// bottom as scenario, matrix and gates; the runner in the CLI never grows a switch per suite.
package suites

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/brakebench/brakebench/faults"
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/progress"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/stats"
	"github.com/brakebench/brakebench/internal/undo"
	"github.com/brakebench/brakebench/loadgen"
)

// Suite is one experiment.
type Suite interface {
	Name() string
	Description() string
	Brakes() []string
	Faults() []string
	// Plan resolves the matrix without touching a cluster.
	Plan(cfg *config.Resolved, pc PlanContext) (*Plan, error)
	// Run executes the plan on env's cluster.
	Run(ctx context.Context, env *Env, plan *Plan) (*results.Results, error)
}

// Env is what a suite runs against.
type Env struct {
	Config   *config.Resolved
	Cluster  provider.Cluster
	Clients  *kube.Clients
	Progress *progress.Progress
	// Reverts holds every undo registered during the run; the CLI runs it on every exit path.
	Reverts *undo.Stack
	// Journal records every change before it is made (brakebench cleanup replays it after a crash).
	Journal *undo.Journal
	// Source returns the directory of the controller's module at version (overlays, manifests).
	Source func(ctx context.Context, version string) (string, error)
	// DCGM serves dcgm-exporter metrics for the GPU nodes while the run lasts (gpu cells).
	DCGM *faults.DCGMExporter
	// Karpenter is the Karpenter the node-repair cells' NodePool is served by.
	Karpenter *provider.Karpenter
	RunID     string
	// APF is how API Priority and Fairness classified the load generator (set by the first cell).
	APF *loadgen.APF
	// Versions are the pinned component versions (for provenance).
	Versions map[string]string

	notes []string
}

// collectNotes prints and keeps what the controller said about its last change (provider.Noter).
func (e *Env) collectNotes(ctrl provider.Controller) {
	n, ok := ctrl.(provider.Noter)
	if !ok {
		return
	}
	for _, note := range n.TakeNotes() {
		e.Progress.Printf("note: %s", note)
		if !slices.Contains(e.notes, note) {
			e.notes = append(e.notes, note)
		}
	}
}

// PlanContext answers what planning needs to know about the system under test.
type PlanContext struct {
	// Supports reports whether the controller at version knows flag (e.g.
	// "sandbox-warm-pool-max-refill-rate"); an error means the version cannot be had.
	// nil: every flag is assumed supported.
	Supports func(version, flag string) (bool, error)
	// CheckArg says what is wrong with a controller arg's value ("--name=value") for the
	// flag's kind at version ("" when nothing is); nil: values are not checked.
	CheckArg func(version, arg string) (string, error)
	// Source returns the directory of the controller's module at version (its manifests and
	// examples); nil: overlays are assumed present.
	Source func(version string) (string, error)
}

// Plan is a resolved matrix.
type Plan struct {
	Suite    string   `json:"suite"`
	Seed     int64    `json:"seed"`
	Names    []string `json:"names"`    // cell names in matrix order (reports show them so)
	Baseline string   `json:"baseline"` // the cell every other is compared with
	// Axes are each cell name's axis values (gates select cells by them), Primary the axis a
	// bare cell name in a gate stands for.
	Axes    map[string]map[string]string `json:"axes,omitempty"`
	Primary string                       `json:"primary,omitempty"`
	Cells   []PlannedCell                `json:"cells"`   // in run order
	Changes []string                     `json:"changes"` // what will be created or changed, and where
	// Design is the sequential design the runner stops cells by (cells are ordered in rounds,
	// round r holding repetition r of every cell); nil: the fixed design, every planned cell runs.
	Design *stats.Sequential `json:"design,omitempty"`
}

// sequentialDesign is the design matrix.sequential asks for, or nil (the fixed design) when it is
// off or there is only one look (matrix.repetitions not above matrix.minRepetitions). It is
// paired by round unless matrix.paired is false.
func sequentialDesign(m config.Matrix) *stats.Sequential {
	if !m.Sequential || m.Repetitions <= m.MinRepetitions {
		return nil
	}
	// Paired (matrix.paired, the default): rounds (inRounds) run repetition r of every cell and of
	// the baseline together, so each repetition is compared with the baseline's of its round.
	return &stats.Sequential{Alpha: 0.05, MinReps: m.MinRepetitions, MaxReps: m.Repetitions, EquivalencePct: m.Equivalence, Spending: m.Spending, StopOn: m.StopOn, Paired: m.Paired}
}

// inRounds orders cells in rounds for the sequential design: round r holds repetition r of every
// cell, in an order shuffled per round with rng (seeded from the recorded seed).
func inRounds(cells []PlannedCell, rng *rand.Rand) []PlannedCell {
	byRep := map[int][]PlannedCell{}
	maxRep := 0
	for _, c := range cells {
		byRep[c.Rep] = append(byRep[c.Rep], c)
		maxRep = max(maxRep, c.Rep)
	}
	out := make([]PlannedCell, 0, len(cells))
	for r := 0; r <= maxRep; r++ {
		round := byRep[r]
		rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		out = append(out, round...)
	}
	return out
}

// addAxes records a cell name's axis values (empty values are left out).
func (p *Plan) addAxes(name string, kv ...string) {
	if p.Axes == nil {
		p.Axes = map[string]map[string]string{}
	}
	ax := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			ax[kv[i]] = kv[i+1]
		}
	}
	p.Axes[name] = ax
}

// PlannedCell is one repetition of one matrix cell.
type PlannedCell struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Rep     int      `json:"rep"`
	Version string   `json:"version,omitempty"` // controller version ("" = the pinned one)
	Flags   []string `json:"flags"`             // controller flags the cell adds
	// FillFlags are the flags the pool is filled with (Flags without the brakes, unless
	// workload.fillWithBrakes); the controller restarts with Flags before the burst.
	FillFlags []string      `json:"fillFlags"`
	Brake     results.Brake `json:"brake"`
	Fault     string        `json:"fault,omitempty"` // "" or none: no fault
	// NotApplicable says why the cell cannot run (its version lacks a flag it needs).
	NotApplicable string `json:"notApplicable,omitempty"`
	// Arm and Profile are the pool-autoscaling suite's axes (keda|control, "0,3,0").
	Arm     string `json:"arm,omitempty"`
	Profile string `json:"profile,omitempty"`
}

// Registry is the set of known suites.
type Registry struct {
	suites map[string]Suite
}

// NewRegistry registers suites.
func NewRegistry(ss ...Suite) *Registry {
	r := &Registry{suites: map[string]Suite{}}
	for _, s := range ss {
		r.suites[s.Name()] = s
	}
	return r
}

// Default is every suite brakebench ships.
func Default() *Registry {
	return NewRegistry(WarmpoolBurst(), WarmpoolSustained(), APFThrottle(), GPUFaults(), GangQuota(), PoolAutoscaling())
}

// Get finds a suite by name.
func (r *Registry) Get(name string) (Suite, error) {
	s, ok := r.suites[name]
	if !ok {
		return nil, fmt.Errorf("no suite named %q (known: %s)", name, strings.Join(r.Names(), ", "))
	}
	return s, nil
}

// Names lists the suites, sorted.
func (r *Registry) Names() []string {
	var out []string
	for n := range r.suites {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
