// Package results is the versioned results.json schema every suite writes and every report,
// gate and comparison reads. Times inside a cell are seconds relative to the cell's T0 (the
// burst start on the harness clock) so files stay small and comparable.
package results

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/brakebench/brakebench/internal/gates"
	"github.com/brakebench/brakebench/internal/scrape"
	"github.com/brakebench/brakebench/internal/stats"
)

// SchemaVersion changes whenever a field changes meaning.
const SchemaVersion = "brakebench.results/v1"

// Results is one run of one suite.
type Results struct {
	Schema    string            `json:"schema"`
	Suite     string            `json:"suite"`
	RunID     string            `json:"runID"`
	StartedAt time.Time         `json:"startedAt"`
	EndedAt   time.Time         `json:"endedAt"`
	Seed      int64             `json:"seed"`
	Config    map[string]any    `json:"config"`
	Cluster   Cluster           `json:"cluster"`
	Versions  map[string]string `json:"versions"`
	Machine   Machine           `json:"machine"`
	Loadgen   Loadgen           `json:"loadgen"`
	CellOrder []string          `json:"cellOrder"` // cell IDs in the order they ran
	Cells     []Cell            `json:"cells"`
	// Warmup are the unmeasured cells run before the measured ones (matrix.warmup): recorded so
	// a reader sees what was discarded, never analysed or gated.
	Warmup   []Cell    `json:"warmup,omitempty"`
	Summary  []Summary `json:"summary"` // per cell name, over repetitions
	Baseline string    `json:"baseline"`
	// CellAxes are each cell name's axis values and AxisPrimary the axis a bare cell name in a
	// gate stands for (from the plan; absent in results written before they were recorded).
	CellAxes    map[string]map[string]string `json:"cellAxes,omitempty"`
	AxisPrimary string                       `json:"axisPrimary,omitempty"`
	Gates       []gates.Verdict              `json:"gates,omitempty"`
	Errors      []string                     `json:"errors,omitempty"`
	// Notes are what the run changed beyond the plan and had to say (args a controller version
	// does not define, dropped from a Deployment on a version switch).
	Notes []string `json:"notes,omitempty"`
	// Incomplete says why the run did not finish its plan (interrupted, a broken lab): its
	// verdicts cover only what ran, and no report calls it a pass.
	Incomplete string `json:"incomplete,omitempty"`
	// Design is the sequential design the cells were stopped by (nil: the fixed design).
	Design *stats.Sequential `json:"design,omitempty"`
	// Drift is how the cluster itself changed during the run (nil when too few repetitions).
	Drift *Drift `json:"drift,omitempty"`
	// LabOverRun is how the lab's own state moved from the first cell to the last (lab runs).
	LabOverRun *LabOverRun `json:"labOverRun,omitempty"`
	// DeferredNamespaces are the cells' emptied namespaces the run deleted together after its
	// cells (NamespaceDeletion.Deferred): how many and how long until all were gone.
	DeferredNamespaces *DeferredNamespaces `json:"deferredNamespaces,omitempty"`
}

// DeferredNamespaces is the run's deletion of its cells' emptied namespaces, after its cells.
type DeferredNamespaces struct {
	Count   int     `json:"count"`
	Seconds float64 `json:"seconds"`
	Error   string  `json:"error,omitempty"`
}

// LabOverRun compares the lab's health when the first and the last cell started, and sums up
// the housekeeping between cells: where a drift's cause may lie.
type LabOverRun struct {
	Cells   int     `json:"cells"`
	Minutes float64 `json:"minutes"`
	// Housekeeping is lab.housekeeping as the cells recorded it, steps joined by "+" ("none"
	// when no cell had any).
	Housekeeping string `json:"housekeeping"`
	// HousekeepingSeconds and FreedBytes are medians over the cells that had housekeeping.
	HousekeepingSeconds float64 `json:"housekeepingSeconds,omitempty"`
	FreedBytes          float64 `json:"freedBytes,omitempty"`
	// RestartSeconds is the median time the API server took to come back (apiserver-restart).
	RestartSeconds float64   `json:"restartSeconds,omitempty"`
	First          LabHealth `json:"first"`
	Last           LabHealth `json:"last"`
}

// Drift is the trend of a run's repetitions against the time they ran: each repetition's median
// claim latency relative to its own cell's (geometric) mean, regressed on minutes since the first
// cell, as the change over the run's span (Minutes) in percent, with a 95% CI.
type Drift struct {
	Metric      string    `json:"metric"`
	Repetitions int       `json:"repetitions"`
	Minutes     float64   `json:"minutes"` // between the first and the last repetition used
	PctOverRun  stats.Num `json:"pctOverRun"`
	CI          stats.CI  `json:"ci"`
}

// Cluster describes where the run happened.
type Cluster struct {
	Provider      string `json:"provider"`
	Server        string `json:"server"`
	Context       string `json:"context,omitempty"`
	ServerVersion string `json:"serverVersion"`
	Nodes         int    `json:"nodes"`
	// Distribution, instance types, regions/zones: detected from nodes and server version.
	Distribution     string         `json:"distribution"`
	InstanceTypes    map[string]int `json:"instanceTypes,omitempty"`
	Regions          []string       `json:"regions,omitempty"`
	Zones            []string       `json:"zones,omitempty"`
	ControlPlaneTier string         `json:"controlPlaneTier"`
	// RTTms: median round trip of GET /version from the harness (client-side latencies include it).
	RTTms float64 `json:"rttMs"`
}

// Machine is the harness host.
type Machine struct {
	Hostname  string `json:"hostname"`
	CPUs      int    `json:"cpus"`
	MemoryMiB int64  `json:"memoryMiB"`
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
}

// Loadgen records how claims were sent.
type Loadgen struct {
	Identity      string  `json:"identity"`
	FlowSchema    string  `json:"flowSchema"`
	PriorityLevel string  `json:"priorityLevel"`
	Connections   int     `json:"connections"`
	MaxInFlight   int     `json:"maxInFlight,omitempty"`
	QPS           float64 `json:"qps"`
	// Runner is where the burst was fired and readiness observed from: "local" (the harness) or
	// "in-cluster" (a Job in the cluster); "" in results written before runners existed (local).
	Runner string `json:"runner,omitempty"`
}

// Cell is one repetition of one matrix cell.
type Cell struct {
	ID         string            `json:"id"` // name#rep
	Name       string            `json:"name"`
	Rep        int               `json:"rep"`
	Namespace  string            `json:"namespace"`
	Controller Controller        `json:"controller"`
	Brake      Brake             `json:"brake"`
	T0         time.Time         `json:"t0"`
	Fill       Fill              `json:"fill"`
	Claims     []Claim           `json:"claims"`
	Timeline   Timeline          `json:"timeline"`
	Pool       []PoolSample      `json:"pool"`
	Metrics    map[string]Scrape `json:"metrics"` // component -> before/after deltas
	Stats      CellStats         `json:"stats"`
	// Phases: wall seconds of fill, brakes (controller restart), claims (burst to all Ready),
	// refill_wait, teardown and total: where a cell's time goes.
	Phases   map[string]float64 `json:"phases,omitempty"`
	Fault    string             `json:"fault,omitempty"`
	FaultLog []FaultEvent       `json:"faultLog,omitempty"`
	Error    string             `json:"error,omitempty"`
	// TeardownError: the cell measured, but deleting what it created failed (a run error; the
	// cell's numbers stand).
	TeardownError string `json:"teardownError,omitempty"`
	NotApplicable string `json:"notApplicable,omitempty"`
	// Gang is the gang-quota suite's record of the cell (nil for other suites).
	Gang *Gang `json:"gang,omitempty"`
	// Autoscale is the pool-autoscaling suite's record of the cell (nil for other suites).
	Autoscale *Autoscale `json:"autoscale,omitempty"`
	// Lab is the lab's own state when the cell started (lab clusters only): what grows over a
	// lab's lifetime, recorded so a drift can be traced to its cause.
	Lab *LabHealth `json:"lab,omitempty"`
	// Housekeeping is what was done to the lab just before the cell (lab.housekeeping).
	Housekeeping *Housekeeping `json:"housekeeping,omitempty"`
	// Runner is the in-cluster runner's record of the cell: its shards' send lag and clocks.
	Runner *Runner `json:"runner,omitempty"`
	// Teardown is how the cell's namespace was deleted (absent in results written before it
	// was recorded, and for cells not run).
	Teardown *Teardown `json:"teardown,omitempty"`
}

// Teardown is how a cell's namespace went: each deletion of it that found it (normally one: a
// suite's own; the runner's follows only when that one left the namespace), then, when those
// left it still there, the runner's wait for it before the next cell.
type Teardown struct {
	Deletions []NamespaceDeletion `json:"deletions,omitempty"`
	Wait      *TeardownWait       `json:"wait,omitempty"`
}

// NamespaceDeletion is one deletion of a namespace: the sweep of its kinds, then the namespace.
type NamespaceDeletion struct {
	// Method is the sweep's: paged (a list in pages, a delete per object), collection (a
	// DeleteCollection per kind, sent again after a timeout), collection-once (before paging).
	Method           string      `json:"method,omitempty"`
	SweepSeconds     float64     `json:"sweepSeconds"`
	NamespaceSeconds float64     `json:"namespaceSeconds"`
	Kinds            []SweepKind `json:"kinds,omitempty"`
	Refused          []string    `json:"refused,omitempty"`
	Error            string      `json:"error,omitempty"`
	// Deferred: the sweep emptied the namespace, which was left there (NamespaceSeconds 0) and
	// deleted, with the run's other emptied namespaces, when the run's cells were done
	// (Results.DeferredNamespaces).
	Deferred bool `json:"deferred,omitempty"`
}

// SweepKind is one kind's part of a sweep: its time, what it found, deleted and left, and the
// requests it took.
type SweepKind struct {
	Resource string  `json:"resource"`
	Seconds  float64 `json:"seconds"`
	// Found: objects of the kind when its sweep began; Left: objects a list still showed after
	// it (terminating ones included); -1 where the server did not say.
	Found     int    `json:"found"`
	Deleted   int    `json:"deleted"`
	Left      int    `json:"left"`
	Requests  int    `json:"requests"`
	Timeouts  int    `json:"timeouts,omitempty"`
	Refused   bool   `json:"refused,omitempty"`
	NotServed bool   `json:"notServed,omitempty"`
	Error     string `json:"error,omitempty"`
}

// TeardownWait is the runner's wait, on a watch, for a namespace its cell's teardown left behind:
// the next cell starts only once it is gone.
type TeardownWait struct {
	Seconds float64 `json:"seconds"`
	Gone    bool    `json:"gone"`
	// Remaining is why the namespace was still there (the namespace controller's conditions).
	Remaining string `json:"remaining,omitempty"`
}

// LabHealth is read without touching the cluster's objects: etcd's revision and database size
// (its maintenance status), each lab process's resident memory and CPU time, and the harness's
// own goroutines and heap (a leak in brakebench would be drift too, but not the lab's).
type LabHealth struct {
	EtcdRevision     int64                    `json:"etcdRevision"`
	EtcdDBBytes      int64                    `json:"etcdDBBytes"`
	EtcdDBInUseBytes int64                    `json:"etcdDBInUseBytes"`
	Processes        map[string]ProcessHealth `json:"processes"`
	// Down are the lab's processes that no longer run (the lab is broken: the cell is not run).
	Down              []string `json:"down,omitempty"`
	HarnessGoroutines int      `json:"harnessGoroutines"`
	HarnessHeapBytes  uint64   `json:"harnessHeapBytes"`
	Error             string   `json:"error,omitempty"`
}

// ProcessHealth is one process's resident memory and CPU seconds (user+system) so far.
type ProcessHealth struct {
	RSSBytes   int64   `json:"rssBytes"`
	CPUSeconds float64 `json:"cpuSeconds"`
}

// Housekeeping is what was done to the lab between two cells (lab.housekeeping): etcd
// compacted to its current revision and defragmented, the API server restarted.
type Housekeeping struct {
	// Steps are the steps that ran, in order (absent in results written before there was more
	// than one kind: etcd-defrag then).
	Steps         []string `json:"steps,omitempty"`
	Seconds       float64  `json:"seconds"`
	Revision      int64    `json:"revision"`
	DBBytesBefore int64    `json:"dbBytesBefore"`
	DBBytesAfter  int64    `json:"dbBytesAfter"`
	// RestartSeconds is how long the API server took from stop to healthy (apiserver-restart).
	RestartSeconds float64 `json:"restartSeconds,omitempty"`
	Error          string  `json:"error,omitempty"`
}

// StepsText is the steps joined by "+" ("etcd-defrag" for results that did not record them).
func (h Housekeeping) StepsText() string {
	if len(h.Steps) == 0 {
		return "etcd-defrag"
	}
	return strings.Join(h.Steps, "+")
}

// Autoscale is one arm of the pool-autoscaling experiment: a demand profile of claims against a
// SandboxWarmPool, with a KEDA ScaledObject driving the pool's /scale, or without (control).
type Autoscale struct {
	Arm             string  `json:"arm"` // keda | control
	Profile         []int   `json:"profile"`
	StepSeconds     float64 `json:"stepSeconds"`
	MetricType      string  `json:"metricType"`
	Target          float64 `json:"target"`
	Min             int     `json:"min"`
	Max             int     `json:"max"`
	PollingInterval string  `json:"pollingInterval"`
	ScaleUp         string  `json:"scaleUp"`       // the HPA's scale-up policy
	HPASyncPeriod   string  `json:"hpaSyncPeriod"` // "" when the control plane does not say
	KEDAVersion     string  `json:"kedaVersion,omitempty"`
	ScaledObject    string  `json:"scaledObject,omitempty"`
	HPA             string  `json:"hpa,omitempty"`
	ExporterURL     string  `json:"exporterURL"`
	// PhaseOffsetSeconds is the random wait (within one HPA sync period) before the first step,
	// so step changes do not align with the HPA's syncs.
	PhaseOffsetSeconds float64 `json:"phaseOffsetSeconds"`
	// MetricReadSeconds: ScaledObject created -> its HPA reported a current metric value.
	MetricReadSeconds *float64          `json:"metricReadSeconds,omitempty"`
	Steps             []AutoscaleStep   `json:"steps"`
	Samples           []AutoscaleSample `json:"samples"`
	// ExporterHits are the seconds (after T0) at which the exporter was read, and what it served.
	ExporterHits []AutoscaleHit `json:"exporterHits"`
	// APIWrites are the mutating requests (POST/PUT/PATCH/DELETE) the API server counted during
	// the profile, by resource (apiserver_request_total deltas).
	APIWrites map[string]float64 `json:"apiWrites,omitempty"`
	// ReplicaChanges counts the writes of spec.replicas the pool saw (the decisions).
	ReplicaChanges int      `json:"replicaChanges"`
	MinSpec        int      `json:"minSpec"`
	MaxSpec        int      `json:"maxSpec"`
	EndSpec        int      `json:"endSpec"`
	Assertions     []string `json:"assertions"` // "PASS: ..." / "FAIL: ..." lines, as printed
	Warm           int      `json:"warm"`
	Cold           int      `json:"cold"`
	// Nodes is set when the pool ran on a Karpenter NodePool (poolAutoscaling.nodes=karpenter).
	Nodes *AutoscaleNodes `json:"nodes,omitempty"`
}

// AutoscaleNodes is the Karpenter NodePool a pool-autoscaling cell ran on.
type AutoscaleNodes struct {
	Karpenter        string   `json:"karpenter"`
	NodePool         string   `json:"nodePool"`
	GPUsPerSandbox   int      `json:"gpusPerSandbox"`
	ConsolidateAfter string   `json:"consolidateAfter"`
	Headroom         int      `json:"headroom"`                 // CapacityBuffer chunks (the capacity-buffer brake), 0 without
	StartNodes       int      `json:"startNodes"`               // Ready pool nodes when the profile started
	HeadroomReadyS   *float64 `json:"headroomReadyS,omitempty"` // CapacityBuffer created -> its nodes Ready
	// TailS is how long the last step was watched beyond its duration, until the pool's Ready
	// nodes were no more than its pods and headroom need (Karpenter's consolidation of the
	// scale-down, which takes about as long as a short step) or poolAutoscaling.settleTimeout;
	// Settled says which. The last step's node figures cover the tail.
	TailS   float64 `json:"tailS"`
	Settled bool    `json:"settled"`
}

// AutoscaleNodeStep is one step's node chain on a Karpenter NodePool: the pods created during the
// step traced to the node each ran on and that node's NodeClaim, medians in seconds from each
// pod's creation; and what the NodePool did during the step.
type AutoscaleNodeStep struct {
	Pods int `json:"pods"` // pods created during the step that became Ready on a pool node
	// OnExistingNodes of them ran on a node that was Ready before the pod was created.
	OnExistingNodes int      `json:"onExistingNodes"`
	NodeClaimS      *float64 `json:"nodeClaimS,omitempty"` // pod created -> its node's NodeClaim created (new nodes only)
	NodeReadyS      *float64 `json:"nodeReadyS,omitempty"` // pod created -> its node Ready (new nodes only)
	PodReadyS       *float64 `json:"podReadyS,omitempty"`  // pod created -> pod Ready (all)
	ClaimsCreated   int      `json:"claimsCreated"`        // NodeClaims created during the step
	NodesDeleted    int      `json:"nodesDeleted"`         // pool nodes deleted during the step (consolidated away)
	// ConsolidatedS: step start -> the last pool node deleted during the step (the last step:
	// during it or its tail, AutoscaleNodes.TailS).
	ConsolidatedS *float64 `json:"consolidatedS,omitempty"`
	ReadyNodes    int      `json:"readyNodes"` // Ready pool nodes at the end of the step (the last: of its tail)
}

// AutoscaleStep is one demand step and how the pool followed it.
type AutoscaleStep struct {
	Demand int     `json:"demand"`
	T      float64 `json:"t"` // step start, seconds after T0
	// Expected is what the HPA should decide with AverageValue: clamp(ceil(demand/target), min,
	// max); -1 with Value, whose decision depends on ready pods (proportional control).
	Expected int `json:"expected"`
	// Decision is spec.replicas at the end of the step; DecisionSeconds the time from the step to
	// the first spec.replicas equal to it (nil when it did not change during the step).
	Decision        int      `json:"decision"`
	DecisionSeconds *float64 `json:"decisionSeconds"`
	// Capacity is status.readyReplicas at the end of the step; CapacitySeconds the time from the
	// step until readyReplicas first equalled Decision (nil when it did not change or never did).
	Capacity        int      `json:"capacity"`
	CapacitySeconds *float64 `json:"capacitySeconds"`
	PeakSpec        int      `json:"peakSpec"`
	Overshoot       int      `json:"overshoot"` // spec.replicas above both the step's start and its final decision
	Warm            int      `json:"warm"`      // claims created at this step bound to a warm sandbox
	Cold            int      `json:"cold"`
	// Nodes is the step's node chain (poolAutoscaling.nodes=karpenter).
	Nodes *AutoscaleNodeStep `json:"nodes,omitempty"`
}

// AutoscaleSample is the pool and demand at one moment.
type AutoscaleSample struct {
	T        float64 `json:"t"`
	Demand   int     `json:"demand"` // claims that exist
	Spec     int     `json:"spec"`   // pool spec.replicas (the decision)
	Replicas int     `json:"replicas"`
	Ready    int     `json:"ready"` // pool status.readyReplicas (the capacity)
}

// AutoscaleHit is one read of the demand exporter.
type AutoscaleHit struct {
	T     float64 `json:"t"`
	Value int     `json:"value"`
}

// Gang is one arm of the gang-quota experiment: a Kueue-managed LeaderWorkerSet admitted under
// a GPU quota, then its group size raised (the brake's target) and its replicas raised (the
// path that goes back through admission).
type Gang struct {
	KueueVersion string   `json:"kueueVersion"`
	Gates        []string `json:"gates"` // Kueue --feature-gates during the cell
	GateOn       bool     `json:"gateOn"`
	QuotaGPUs    int      `json:"quotaGPUs"`
	GPUsPerPod   int      `json:"gpusPerPod"`
	Size         int      `json:"size"`
	Replicas     int      `json:"replicas"`
	// AdmittedSeconds: LWS created -> every pod of the admitted groups Running.
	AdmittedSeconds *float64     `json:"admittedSeconds"`
	Steps           []GangStep   `json:"steps"`
	Samples         []GangSample `json:"samples"`
	// PeakGPUsRunning over the whole cell, and by how much it exceeded the quota (0 if never).
	PeakGPUsRunning int     `json:"peakGPUsRunning"`
	OverQuotaGPUs   int     `json:"overQuotaGPUs"`
	PeakReserved    int     `json:"peakReservedGPUs"`
	BypassRatio     float64 `json:"bypassRatio"` // peak running GPUs / Kueue's reserved GPUs at that moment
	// PeakUnreservedGPUs is the largest excess of GPUs running over GPUs Kueue reserved at the same
	// moment, and UnreservedSeconds how long any excess lasted (running pods outside Kueue's
	// accounting, even below the nominal quota).
	PeakUnreservedGPUs int     `json:"peakUnreservedGPUs"`
	UnreservedSeconds  float64 `json:"unreservedSeconds"`
	Outcome            string  `json:"outcome"` // one line: what happened
}

// GangStep is one change the experiment made and what followed within the watch window.
type GangStep struct {
	Name     string  `json:"name"` // resize | scale-replicas
	Change   string  `json:"change"`
	T        float64 `json:"t"` // seconds since the LWS was created
	Accepted bool    `json:"accepted"`
	Error    string  `json:"error,omitempty"` // the API server's answer when rejected, verbatim
	// Peaks within the window after the change.
	PeakPodsRunning int `json:"peakPodsRunning"`
	PeakGPUsRunning int `json:"peakGPUsRunning"`
	PeakReserved    int `json:"peakReservedGPUs"`
	// At the end of the window.
	End GangSample `json:"end"`
	// KueueUsageMetric is kueue_cluster_queue_resource_usage{resource="nvidia.com/gpu"} scraped
	// at the end of the window (nil when Kueue's metrics are not reachable).
	KueueUsageMetric *float64 `json:"kueueUsageMetric,omitempty"`
	KueueMetricError string   `json:"kueueMetricError,omitempty"`
	// Workloads are the Kueue Workloads' true conditions at the end of the window
	// ("<name>: Type (Reason: message)").
	Workloads []string `json:"workloads,omitempty"`
}

// GangSample is the experiment's state at one moment (from informers).
type GangSample struct {
	T            float64 `json:"t"`
	Pods         int     `json:"pods"`
	PodsRunning  int     `json:"podsRunning"`
	PodsGated    int     `json:"podsGated"` // held by Kueue's admission scheduling gate
	GPUsRunning  int     `json:"gpusRunning"`
	ReservedGPUs int     `json:"reservedGPUs"` // sum of admitted, unfinished Workloads' GPU assignments
	// CQReservedGPUs is the ClusterQueue's status.flavorsReservation (Kueue updates it a little later).
	CQReservedGPUs    int            `json:"cqReservedGPUs"`
	Workloads         int            `json:"workloads"`
	WorkloadsAdmitted int            `json:"workloadsAdmitted"`
	RunningByGroup    map[string]int `json:"runningByGroup,omitempty"`
	LWSSize           int            `json:"lwsSize"`
	LWSReplicas       int            `json:"lwsReplicas"`
}

// Controller is the controller of a cell.
type Controller struct {
	Version string   `json:"version"`
	Flags   []string `json:"flags"`
}

// Brake is the brake setting of a cell.
type Brake struct {
	// Settings are the brakes the cell combines (internal/brakes names) and each one's value as
	// the controller got it ("20s", "10", the overlay path). Empty: no brake.
	Settings map[string]string `json:"settings,omitempty"`
	// The fields below are how results.json files before brake settings recorded the three
	// first brakes; Read moves them into Settings (Normalized).
	ReplenishDelay string  `json:"replenishDelay,omitempty"`
	MaxRefillRate  float64 `json:"maxRefillRate,omitempty"`
	APFInsulation  bool    `json:"apfInsulation,omitempty"`
}

// Normalized is b with the older fields moved into Settings.
func (b Brake) Normalized() Brake {
	if b.ReplenishDelay == "" && b.MaxRefillRate == 0 && !b.APFInsulation {
		return b
	}
	out := Brake{Settings: map[string]string{}}
	for k, v := range b.Settings {
		out.Settings[k] = v
	}
	if b.ReplenishDelay != "" {
		out.Settings["replenish-delay"] = b.ReplenishDelay
	}
	if b.MaxRefillRate != 0 {
		out.Settings["max-refill-rate"] = strconv.FormatFloat(b.MaxRefillRate, 'f', -1, 64)
	}
	if b.APFInsulation {
		out.Settings["apf-insulation"] = "examples/apf-insulation/apf-insulation.yaml"
	}
	return out
}

// Fill is the initial pool fill before the burst.
type Fill struct {
	Replicas int     `json:"replicas"`
	Seconds  float64 `json:"seconds"` // pool create -> readyReplicas == replicas
}

// Claim is one claim's timeline, in seconds from T0; negative values never occur, missing
// stages are null.
type Claim struct {
	Name       string   `json:"name"`
	Planned    float64  `json:"planned"`
	Intent     *float64 `json:"intent"`
	Acked      *float64 `json:"acked"`
	Bound      *float64 `json:"bound"`
	Ready      *float64 `json:"ready"`
	LatencyMS  *float64 `json:"latencyMs"` // ready - intent
	LaunchType string   `json:"launchType,omitempty"`
	Sandbox    string   `json:"sandbox,omitempty"`
	Failed     bool     `json:"failed"`
	Reason     string   `json:"reason,omitempty"`
}

// Timeline holds per-second counts from T0 (server clock for creations and transitions).
type Timeline struct {
	SandboxCreates []float64 `json:"sandboxCreates"`
	RefillCreates  []float64 `json:"refillCreates"` // sandboxes created by the warm-pool controller after T0
	ColdCreates    []float64 `json:"coldCreates"`   // sandboxes created by the claim controller (cold starts)
	PodCreates     []float64 `json:"podCreates"`
	PodsScheduled  []float64 `json:"podsScheduled"`
	PodsReady      []float64 `json:"podsReady"`
	ClaimsReady    []float64 `json:"claimsReady"`
}

// PoolSample is the pool's status at T (seconds from T0).
type PoolSample struct {
	T        float64 `json:"t"`
	Desired  int64   `json:"desired"`
	Replicas int64   `json:"replicas"`
	Ready    int64   `json:"ready"`
}

// Scrape is one component's metric deltas over a cell.
type Scrape struct {
	Error  string          `json:"error,omitempty"`
	Series []scrape.Series `json:"series"`
}

// Writes is a cell's write accounting from the API server's own counters over the burst and
// the refill (analysis.WriteAccount).
type Writes struct {
	Claims int `json:"claims"`
	// PerClaim are requests per claim by "resource.verb" ("sandboxclaims.patch", the object
	// itself) and "resource/status.verb" (its status): the mutating verbs of the claims,
	// sandboxes, pods, events and leases, refused requests included.
	PerClaim map[string]float64 `json:"perClaim"`
	// TotalPerClaim counts every mutating request of any resource, per claim.
	TotalPerClaim float64 `json:"totalPerClaim"`
	// ConflictsPerClaim counts the requests answered 409 Conflict, per claim.
	ConflictsPerClaim float64 `json:"conflictsPerClaim"`
	// APFWait is the time requests waited in API Priority and Fairness, per priority level.
	APFWait map[string]APFWait `json:"apfWait,omitempty"`
	// AllReadySeconds is when the burst's last claim became Ready (from T0); nil when one never did.
	AllReadySeconds *float64 `json:"allReadySeconds,omitempty"`
}

// APFWait is one priority level's queue wait over a cell.
type APFWait struct {
	Requests float64 `json:"requests"`
	MeanMS   float64 `json:"meanMs"`
	P99MS    float64 `json:"p99Ms"` // from the histogram's buckets
}

// CellStats are the numbers computed from one cell.
type CellStats struct {
	Latency   LatencySet      `json:"latency"` // ms, client-observed
	Total     int             `json:"total"`
	Warm      int             `json:"warm"`
	Cold      int             `json:"cold"`
	Failed    int             `json:"failed"`
	SendLagMS stats.Quantiles `json:"sendLagMs"`
	AckMS     stats.Quantiles `json:"ackMs"`
	Ceilings  Ceilings        `json:"ceilings"`
	// Sustained is the ceiling search of a workload.mode ceiling cell (nil otherwise).
	Sustained *Sustained `json:"sustained,omitempty"`
	// RefillSeconds: T0 -> pool back at full readiness (null if it never refilled in time).
	RefillSeconds *float64 `json:"refillSeconds"`
	// RefillStartSeconds: T0 -> first refill sandbox created.
	RefillStartSeconds *float64 `json:"refillStartSeconds"`
	// RefillEndedSeconds: T0 -> the wait for the refill was ended because the refill's create
	// rate over the last workload.refillProjection projected its completion past the wait's end
	// (recorder.ProjectRefill); nil when the wait was not ended that way. RefillSeconds is then
	// nil (not refilled), and so are the refill create ratios of Correctness (an unfinished
	// refill's ratio is not a measurement of over-creation).
	RefillEndedSeconds *float64 `json:"refillEndedSeconds,omitempty"`
	// RefillProjectedSeconds: T0 -> the completion that projection put the refill at; nil when
	// not projected, or when no create came in the window (rate 0: never).
	RefillProjectedSeconds *float64 `json:"refillProjectedSeconds,omitempty"`
	// RefillProjection says it in one sentence: "refill projected at N s from the rate over the
	// last M (...); ended at K s".
	RefillProjection string `json:"refillProjection,omitempty"`
	// ControllerLatencyMS: quantiles of agent_sandbox_client_claim_startup_latency_ms over the cell.
	ControllerLatencyMS *stats.Quantiles `json:"controllerLatencyMs,omitempty"`
	// PodStart: the pods created after T0, step by step as the harness's informers saw them
	// (created -> bound to a node -> a container running -> Ready). On kwok nodes the running and
	// Ready steps are kwok's simulated boot; on the lab's real node (workload.placement
	// real-node) they are a real runtime's cold start.
	PodStart          *PodStart          `json:"podStart,omitempty"`
	CPUSeconds        map[string]float64 `json:"cpuSeconds,omitempty"`
	APFWaitP99Seconds map[string]float64 `json:"apfWaitP99Seconds,omitempty"` // by priority level
	Correctness       Correctness        `json:"correctness"`
	Fault             *FaultStats        `json:"fault,omitempty"`
	// CreatePasses are the pool's create passes after T0 as the controller logged them (the
	// sandboxes each reconcile pass created, in order); nil when the controller's log cannot be
	// read on this cluster.
	CreatePasses  []int  `json:"createPasses,omitempty"`
	BrakeEngaged  *bool  `json:"brakeEngaged,omitempty"`
	BrakeEvidence string `json:"brakeEvidence,omitempty"`
	// Writes is the write accounting (nil: no API server scrape, or a file written before it).
	Writes *Writes `json:"writes,omitempty"`
	// ClaimAnnotations counts the cell's claims carrying each agents.x-k8s.io/ annotation key
	// (as last seen); ClaimEvents the Events about its claims (nil: not counted).
	ClaimAnnotations map[string]int `json:"claimAnnotations,omitempty"`
	ClaimEvents      *int           `json:"claimEvents,omitempty"`
}

// FaultEvent is one entry of a cell's fault timeline (seconds from T0).
type FaultEvent struct {
	T      float64 `json:"t"`
	Fault  string  `json:"fault"`
	Event  string  `json:"event"` // armed | effective | reverted | error
	Detail string  `json:"detail,omitempty"`
}

// FaultStats are what a fault did, measured.
type FaultStats struct {
	Nodes               []string    `json:"nodes,omitempty"`
	TimeToUnavailableS  *float64    `json:"timeToUnavailableS,omitempty"` // fault -> node tainted/NotReady seen
	SandboxesLost       int         `json:"sandboxesLost"`                // pool sandboxes whose pod was on a faulted node and went away
	RefillCreate5sAfter float64     `json:"refillCreate5sAfter"`          // refill create ceiling from the fault on
	UnavailableMaxFrac  float64     `json:"unavailableMaxFraction"`       // most GPU nodes unavailable at once / GPU nodes
	NodesDeleted        int         `json:"nodesDeleted"`
	Invariants          []Invariant `json:"invariants,omitempty"`
	Condition           string      `json:"condition,omitempty"` // reason set on AcceleratedHardwareReady (or the Event's)
	DCGMXID             *float64    `json:"dcgmXid,omitempty"`   // DCGM_FI_DEV_XID_ERRORS scraped from the exporter after arming
	APFLevel            string      `json:"apfLevel,omitempty"`
	APFWaitP99S         *float64    `json:"apfWaitP99S,omitempty"`
	APFRejected         float64     `json:"apfRejected"`
	// Node repair (Karpenter): the NodePool when the fault struck, Karpenter's breaker
	// threshold for it, and what Karpenter did, on the harness clock from the fault.
	Repair *RepairStats `json:"repair,omitempty"`
}

// RepairStats are a node-repair cell's measurements (Karpenter's repair of faulted nodes).
type RepairStats struct {
	Karpenter       string  `json:"karpenter"`       // its version
	PoolNodes       int     `json:"poolNodes"`       // nodes of the NodePool when the fault struck (Ready or not, as Karpenter counts)
	Threshold       int     `json:"threshold"`       // most unhealthy nodes Karpenter still repairs (ceil 20% of ThresholdFor)
	ThresholdFor    int     `json:"thresholdFor"`    // PoolNodes, or (blocked cells) the most nodes the pool and its claims can need
	Faulted         int     `json:"faulted"`         // nodes given the condition
	Condition       string  `json:"condition"`       // the condition set False (type=reason)
	TolerationS     float64 `json:"tolerationS"`     // the repair policy's toleration, scaled
	TolerationScale float64 `json:"tolerationScale"` // the factor EKS's published toleration was multiplied by
	Repaired        int     `json:"repaired"`        // faulted nodes whose NodeClaim Karpenter deleted
	// Seconds from the fault: Karpenter deleting the first faulted NodeClaim, the first node
	// created after that Ready, the first NodeRepairBlocked event.
	RepairS           *float64 `json:"repairS,omitempty"`
	ReplacementReadyS *float64 `json:"replacementReadyS,omitempty"`
	// Displaced are the cell's pods deleted from faulted nodes, Recreated those whose sandbox
	// got a new pod (same name) that became Ready, RecoveredS fault -> the last of them Ready
	// (nil unless every displaced pod was recreated).
	Displaced  int      `json:"displaced"`
	Recreated  int      `json:"recreated"`
	RecoveredS *float64 `json:"recoveredS,omitempty"`
	// ConditionSinceS: fault -> the condition's lastTransitionTime as stored (one-second
	// resolution, so up to 1 s negative): what Karpenter counts the toleration from.
	ConditionSinceS *float64 `json:"conditionSinceS,omitempty"`
	BlockedS        *float64 `json:"blockedS,omitempty"`
	BlockedMessage  string   `json:"blockedMessage,omitempty"`
	// DisruptedMax is the most NodeClaims of the pool being deleted at once.
	DisruptedMax int `json:"disruptedMax"`
	// CounterDelta is karpenter_nodeclaims_unhealthy_disrupted_total's change over the cell (nil
	// when Karpenter's metrics could not be read).
	CounterDelta *float64 `json:"counterDelta,omitempty"`
}

// Invariant is a repair-safety rule evaluated from what the cluster did.
type Invariant struct {
	Name   string `json:"name"`
	Held   bool   `json:"held"`
	Detail string `json:"detail"`
}

// Correctness are the numbers that keep a faster but sloppier controller from looking better.
type Correctness struct {
	// RefillCreatesPerSlot: sandboxes the pool created after T0 per pool slot vacated by a warm
	// adoption (1.0 is ideal; above it the controller over-created).
	RefillCreatesPerSlot *float64 `json:"refillCreatesPerSlot"`
	// PodCreatesPerSandbox: pods created after T0 per sandbox created after T0 (1.0 is ideal).
	PodCreatesPerSandbox *float64 `json:"podCreatesPerSandbox"`
	PoolExcessMax        int      `json:"poolExcessMax"` // most live pool members beyond spec.replicas
	DoubleBound          int      `json:"doubleBound"`   // sandboxes bound to more than one claim
	Orphans              int      `json:"orphans"`       // live sandboxes without a controller owner at the end
	// The whole cell, the initial fill included (over-creation shows most from empty to full).
	// FillCreatesPerSlot: pool sandboxes the informers saw created before the burst, per pool
	// slot (1.0 is ideal). FillAPICreatesPerSlot and FillAPIDeletes: sandbox POST and DELETE
	// requests the API server counted from before the pool was created to the burst (the fill
	// and the controller's restart with the cell's flags). RefillAPICreatesPerSlot and
	// RefillAPIDeletes: the same from the burst to the end of the refill, per warm adoption
	// (cold starts' creates included). Requests include refused ones: they are load either way.
	FillCreatesPerSlot      *float64 `json:"fillCreatesPerSlot,omitempty"`
	FillAPICreatesPerSlot   *float64 `json:"fillApiCreatesPerSlot,omitempty"`
	FillAPIDeletes          *float64 `json:"fillApiDeletes,omitempty"`
	RefillAPICreatesPerSlot *float64 `json:"refillApiCreatesPerSlot,omitempty"`
	RefillAPIDeletes        *float64 `json:"refillApiDeletes,omitempty"`
}

// LatencySet splits latency by launch type.
type LatencySet struct {
	All  stats.Quantiles `json:"all"`
	Warm stats.Quantiles `json:"warm"`
	Cold stats.Quantiles `json:"cold"`
}

// Ceilings are the highest rates held over 1 s and 5 s (per second).
type Ceilings struct {
	SandboxCreate1s float64 `json:"sandboxCreate1s"`
	SandboxCreate5s float64 `json:"sandboxCreate5s"`
	RefillCreate1s  float64 `json:"refillCreate1s"`
	RefillCreate5s  float64 `json:"refillCreate5s"`
	PodCreate1s     float64 `json:"podCreate1s"`
	PodCreate5s     float64 `json:"podCreate5s"`
	PodSchedule1s   float64 `json:"podSchedule1s"`
	PodSchedule5s   float64 `json:"podSchedule5s"`
	PodReady1s      float64 `json:"podReady1s"`
	PodReady5s      float64 `json:"podReady5s"`
}

// Summary aggregates one cell name over its repetitions.
type Summary struct {
	Name          string   `json:"name"`
	Reps          int      `json:"reps"`
	NotApplicable string   `json:"notApplicable,omitempty"`
	Metrics       []Metric `json:"metrics"`
	// Stopping says how many repetitions the cell got and why it got no more (nil in results
	// written before the sequential design).
	Stopping *Stopping `json:"stopping,omitempty"`
	// Verdict is the cell's answer against the baseline on the metrics its verdict rests on
	// (nil for the baseline itself and for cells that were not compared).
	Verdict *Verdict `json:"verdict,omitempty"`
	// Invariants are the metrics with an ideal value, judged per repetition.
	Invariants []InvariantVerdict `json:"invariants,omitempty"`
	// Sustained is the cell's sustainable claim rate over its repetitions (ceiling mode only).
	Sustained *SustainedEstimate `json:"sustained,omitempty"`
}

// Stopping records how a cell's repetitions ended.
type Stopping struct {
	Design string `json:"design"` // "sequential" or "fixed"
	// Paired says each repetition was compared with the baseline's of the same round (a paired
	// sequential design; false in results written before it).
	Paired  bool `json:"paired,omitempty"`
	Reps    int  `json:"reps"` // measured repetitions the cell got
	MinReps int  `json:"minReps"`
	MaxReps int  `json:"maxReps"`
	// Reason: "effect" (a verdict metric crossed its boundary), "equivalence" (every verdict
	// metric's interval inside +-matrix.equivalence), "max" (the planned maximum), "baseline"
	// (ran while a compared cell ran), "fixed" (the fixed design), "interrupted", "errors".
	Reason string `json:"reason"`
	Detail string `json:"detail"` // one sentence for the report
}

// Verdict answers "does this cell make claims faster or slower than the baseline, and by how
// much" on the verdict metrics (claim p50 and p99).
type Verdict struct {
	Metrics []MetricVerdict `json:"metrics"`
}

// MetricVerdict is one verdict metric of a cell against the baseline.
type MetricVerdict struct {
	Key string `json:"key"` // e.g. claim.p99_ms
	// Verdict: "faster", "slower" (lower/higher latency beyond the boundary), "equivalent" (no
	// change larger than EquivalencePct), "~" (not settled at the planned maximum) or
	// "insufficient repetitions".
	Verdict string    `json:"verdict"`
	Pct     stats.Num `json:"pct"` // estimated change, % of the baseline (ratio of repetition geometric means)
	// CI is the interval of Pct valid for the design (a repeated confidence interval under the
	// sequential design, at the look the verdict was reached).
	CI stats.CI `json:"ci"`
	// P is the p-value valid for the design (the repeated p-value under the sequential design).
	P stats.Num `json:"p"`
	// MDEPct is the smallest change (%) this comparison had 80% power to detect at the spread
	// between repetitions it measured.
	MDEPct         stats.Num `json:"mdePct"`
	EquivalencePct float64   `json:"equivalencePct,omitempty"`
	Look           int       `json:"look"` // repetitions (per side, the smaller) when it was settled
	Text           string    `json:"text"` // one line for the report and the terminal
}

// InvariantVerdict is a metric with an ideal value judged per repetition: "violated in 3 of 3
// repetitions (45, 27, 4)" or "held in 5 of 5".
type InvariantVerdict struct {
	Key       string      `json:"key"`
	Ideal     float64     `json:"ideal"`
	Tolerance float64     `json:"tolerance"` // a repetition within Ideal +- Tolerance holds
	Reps      int         `json:"reps"`
	Violated  int         `json:"violated"`
	Values    []stats.Num `json:"values"` // the violating repetitions' values
	Text      string      `json:"text"`
}

// Metric is one summarized number with its CI and the comparison against the baseline cell.
type Metric struct {
	Key    string      `json:"key"` // e.g. claim.p99_ms
	Unit   string      `json:"unit"`
	Value  stats.Num   `json:"value"` // median over repetitions (pooled for latency quantiles)
	CI     stats.CI    `json:"ci"`    // bootstrap 95%
	Delta  *Delta      `json:"delta,omitempty"`
	PerRep []stats.Num `json:"perRep"`
}

// Delta is the comparison of a metric against the baseline cell.
type Delta struct {
	Abs        stats.Num        `json:"abs"`
	Pct        stats.Num        `json:"pct"`
	CI         stats.CI         `json:"ci"` // bootstrap 95% CI of the difference
	Comparison stats.Comparison `json:"comparison"`
	// MDEPct is the smallest change (% of the baseline) this comparison had 80% power to detect
	// at alpha, given the spread between repetitions it measured (null when it cannot be
	// estimated: fewer than 2 repetitions a side, or a metric that does not vary).
	MDEPct stats.Num `json:"mdePct"`
}

// Write saves r as dir/results.json.
func Write(dir string, r *Results) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "results.json")
	raw, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, raw, 0o644)
}

// Read loads a results file and checks its schema.
func Read(path string) (*Results, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Schema != SchemaVersion {
		return nil, fmt.Errorf("%s: schema %q, this brakebench reads %q", path, r.Schema, SchemaVersion)
	}
	if len(r.Cells) == 0 {
		return nil, NoCellsError(path, r.Incomplete)
	}
	for i := range r.Cells {
		r.Cells[i].Brake = r.Cells[i].Brake.Normalized()
	}
	return &r, nil
}

// NoCellsError is the error of a results file that holds no cells (only its schema, or a run
// stopped before its first cell, incomplete saying why): there is nothing to report, compare or
// follow, and an empty report would look like a run that measured nothing wrong.
func NoCellsError(path, incomplete string) error {
	if incomplete != "" {
		return fmt.Errorf("%s: holds no cells, so no results (the run stopped first: %s)", path, incomplete)
	}
	return fmt.Errorf("%s: holds no cells, so no results (a results.json of a run has at least one)", path)
}

// Find returns the metric key of summary name.
func (r *Results) Find(name, key string) (*Metric, bool) {
	for i := range r.Summary {
		if r.Summary[i].Name != name {
			continue
		}
		for j := range r.Summary[i].Metrics {
			if r.Summary[i].Metrics[j].Key == key {
				return &r.Summary[i].Metrics[j], true
			}
		}
	}
	return nil, false
}

// PodStart are the quantiles (ms) of each step of the pods created in a cell.
type PodStart struct {
	Node          string          `json:"node,omitempty"` // the one node they all ran on, "" when several
	Placement     string          `json:"placement"`      // workload.placement: "real-node" is a real runtime
	Schedule      stats.Quantiles `json:"scheduleMs"`     // created (first seen) -> bound to a node
	Run           stats.Quantiles `json:"runMs"`          // bound -> a container running
	Ready         stats.Quantiles `json:"readyMs"`        // running -> Ready
	CreateToReady stats.Quantiles `json:"createToReadyMs"`
}
