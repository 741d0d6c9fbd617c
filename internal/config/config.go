// Package config resolves brakebench's configuration: built-in defaults < the suite's default file
// (configs/suites/<suite>.yaml) < the user's file (-f) < environment (BRAKEBENCH_*) < --set/flags.
// Every key is known up front; an unknown key, a value of the wrong type or an out-of-range value
// is an error that names where it came from, before anything touches a cluster.
package config

import (
	"strings"
	"time"

	"github.com/brakebench/brakebench/internal/images"
)

// Config is the whole resolved configuration of one command.
type Config struct {
	Cluster    Cluster    `mapstructure:"cluster"`
	Lab        Lab        `mapstructure:"lab"`
	Controller Controller `mapstructure:"controller"`
	Workload   Workload   `mapstructure:"workload"`
	Loadgen    Loadgen    `mapstructure:"loadgen"`
	Matrix     Matrix     `mapstructure:"matrix"`
	// Brakes are the brake types' settings: each declares its keys (config.Own) and defaults
	// (configs/brakes/<brake>.yaml) and decodes them itself (internal/brakes).
	Brakes Section `mapstructure:"brakes"`
	// Faults are the fault types' settings (matrix.faults cells): each declares its keys
	// (config.Own) and defaults (configs/faults/<owner>.yaml) and decodes them itself (faults).
	Faults    Section   `mapstructure:"faults"`
	GangQuota GangQuota `mapstructure:"gangQuota"`
	Autoscale Autoscale `mapstructure:"poolAutoscaling"`
	// Tune is `brakebench tune`'s search (tune.go).
	Tune Tune   `mapstructure:"tune"`
	Out  string `mapstructure:"out"`
}

// GangQuota is the gang-quota suite's experiment: a Kueue-managed LeaderWorkerSet admitted
// under a GPU quota, then resized.
type GangQuota struct {
	GPUQuota        int           `mapstructure:"gpuQuota"`        // ClusterQueue nominal nvidia.com/gpu
	CPUQuota        string        `mapstructure:"cpuQuota"`        // ClusterQueue nominal cpu
	MemoryQuota     string        `mapstructure:"memoryQuota"`     // ClusterQueue nominal memory
	GPUsPerPod      int           `mapstructure:"gpusPerPod"`      // every leader and worker pod requests this many
	Size            int           `mapstructure:"size"`            // spec.leaderWorkerTemplate.size Kueue admits
	ResizeTo        int           `mapstructure:"resizeTo"`        // the size the experiment raises it to
	Replicas        int           `mapstructure:"replicas"`        // spec.replicas (groups) admitted
	ScaleReplicasTo int           `mapstructure:"scaleReplicasTo"` // the safe path: raise spec.replicas instead
	Observe         time.Duration `mapstructure:"observe"`         // how long each step is watched
	AdmitTimeout    time.Duration `mapstructure:"admitTimeout"`    // how long the first admission may take
	// On kind/kubeconfig clusters: Kueue's manager Deployment, whose --feature-gates are patched.
	KueueNamespace  string `mapstructure:"kueueNamespace"`
	KueueDeployment string `mapstructure:"kueueDeployment"`
}

// Autoscale is the pool-autoscaling suite's experiment: KEDA drives a SandboxWarmPool's /scale
// from claim demand, against a control arm without an autoscaler.
type Autoscale struct {
	Arms     []string `mapstructure:"arms"`     // keda | control
	Profiles []string `mapstructure:"profiles"` // demand profiles: claims held at each step, e.g. "0-3-0"
	// StepDuration is how long each demand step is held (and watched).
	StepDuration time.Duration `mapstructure:"stepDuration"`
	MinReplicas  int           `mapstructure:"minReplicas"`
	// MaxReplicas is the ScaledObject's bound; 0 = the profile's largest step.
	MaxReplicas int     `mapstructure:"maxReplicas"`
	MetricType  string  `mapstructure:"metricType"` // AverageValue | Value
	TargetValue float64 `mapstructure:"targetValue"`
	// PollingInterval is the ScaledObject's pollingInterval (KEDA's own loop).
	PollingInterval time.Duration `mapstructure:"pollingInterval"`
	// ScaleDownStabilization is the HPA's scaleDown stabilization window (upstream 300s).
	ScaleDownStabilization time.Duration `mapstructure:"scaleDownStabilization"`
	// ScaleUpPods, when > 0, replaces the HPA's default scale-up policies (max(4 pods, 100%) per
	// 15 s) with "at most ScaleUpPods pods per ScaleUpPeriod".
	ScaleUpPods   int           `mapstructure:"scaleUpPods"`
	ScaleUpPeriod time.Duration `mapstructure:"scaleUpPeriod"`
	// HPASyncPeriod, on the lab, is kube-controller-manager's HPA sync period during the run
	// (0 = leave lab.hpaSyncPeriod as it is); the run records the value in effect.
	HPASyncPeriod time.Duration `mapstructure:"hpaSyncPeriod"`
	// ExporterURL is where KEDA's metrics-api scaler reaches the demand exporter on kind and
	// kubeconfig clusters (run `brakebench exporter` where KEDA can reach it); on the lab the
	// suite serves it itself on 127.0.0.1.
	ExporterURL string `mapstructure:"exporterURL"`
	// SettleTimeout bounds the wait for the pool to settle between arms and for the HPA to read
	// its first metric.
	SettleTimeout time.Duration `mapstructure:"settleTimeout"`
	// Nodes is where the pool's pods run: "existing" (the cluster's nodes) or "karpenter" (lab:
	// a Karpenter NodePool of the lab's 8-GPU instance type; each sandbox requests
	// GPUsPerSandbox GPUs, so a step of more sandboxes than the nodes hold needs new nodes, and
	// each step's chain pod -> NodeClaim -> node Ready -> pod Ready is recorded). Empty nodes are
	// consolidated ConsolidateAfter after they empty; RegistrationDelay is the simulated launch.
	Nodes             string        `mapstructure:"nodes"`
	GPUsPerSandbox    int           `mapstructure:"gpusPerSandbox"`
	ConsolidateAfter  time.Duration `mapstructure:"consolidateAfter"`
	RegistrationDelay time.Duration `mapstructure:"registrationDelay"`
}

// Cluster selects the cluster provider.
type Cluster struct {
	Provider   string `mapstructure:"provider"`   // lab | kind | kubeconfig
	Kubeconfig string `mapstructure:"kubeconfig"` // kubeconfig provider: path (default $KUBECONFIG / ~/.kube/config)
	Context    string `mapstructure:"context"`    // kubeconfig provider: context name (required there)
	KindName   string `mapstructure:"kindName"`   // kind provider: cluster name
	KindImage  string `mapstructure:"kindImage"`  // kind provider: pinned node image
	// AllowContext must equal Context before brakebench changes anything it did not create on a
	// kubeconfig cluster (brake toggles patch the controller Deployment).
	AllowContext string `mapstructure:"allowContext"`
}

// Lab describes the embedded lab cluster.
type Lab struct {
	Name     string `mapstructure:"name"`
	CacheDir string `mapstructure:"cacheDir"` // binaries and tools modules; default <user cache dir>/brakebench
	StateDir string `mapstructure:"stateDir"` // running labs; default <cacheDir>/labs
	Nodes    Nodes  `mapstructure:"nodes"`
	// PodBootDelay is how long kwok waits before a scheduled pod turns Running/Ready (sandbox boot).
	PodBootDelay  time.Duration `mapstructure:"podBootDelay"`
	PodBootJitter time.Duration `mapstructure:"podBootJitter"`
	// APIServerArgs are extra kube-apiserver flags (key=value without dashes).
	APIServerArgs []string `mapstructure:"apiserverArgs"`
	// HPASyncPeriod is kube-controller-manager's --horizontal-pod-autoscaler-sync-period (upstream
	// default 15s); the pool-autoscaling suite may change it for its run and records it.
	HPASyncPeriod time.Duration `mapstructure:"hpaSyncPeriod"`
	UpTimeout     time.Duration `mapstructure:"upTimeout"`
	// RealNode adds one real node (containerd, runc, CNI bridge, kubelet) beside the simulated
	// ones, for the in-cluster paths: controllers as Deployments, cold start on a real runtime.
	// Decided when the lab comes up; off by default (it needs root, runc and a few seconds).
	RealNode bool `mapstructure:"realNode"`
	// ControllerMode is how the lab runs the agent-sandbox controller: "process" (a local process,
	// the default) or "deployment" (the upstream Deployment on the real node, image built here;
	// the kubeconfig path then drives it as it would on EKS/GKE). deployment needs realNode.
	ControllerMode string `mapstructure:"controllerMode"`
	// ControllerImages are further agent-sandbox versions whose controller images the real node
	// gets (deployment mode; the pinned version always), e.g. for --preset upgrade.
	ControllerImages []string `mapstructure:"controllerImages"`
	// Housekeeping is what is done to the lab before each cell, steps joined by "+": "etcd-defrag"
	// compacts its etcd to the current revision and defragments it (each cell then starts from a
	// database of the same shape), "apiserver-restart" restarts the kube-apiserver with the flags
	// it runs with (each cell then starts from a fresh API server); "none" leaves the lab alone.
	// Cells record the lab's health either way.
	Housekeeping string `mapstructure:"housekeeping"`
}

// HousekeepingSteps are the lab housekeeping steps there are (they run in the order given).
var HousekeepingSteps = []string{"etcd-defrag", "apiserver-restart"}

// Steps splits lab.housekeeping into its steps (none for "none" or "").
func (l Lab) Steps() []string {
	if l.Housekeeping == "" || l.Housekeeping == "none" {
		return nil
	}
	return strings.Split(l.Housekeeping, "+")
}

// Nodes are the simulated (kwok) nodes.
type Nodes struct {
	Count  int    `mapstructure:"count"`
	CPU    string `mapstructure:"cpu"`
	Memory string `mapstructure:"memory"`
	Pods   int    `mapstructure:"pods"`
	GPUs   int    `mapstructure:"gpus"` // nvidia.com/gpu capacity per node
	// Labels are "key=value" items (a list, since label keys contain dots).
	Labels []string `mapstructure:"labels"`
}

// Controller is the agent-sandbox controller under test.
type Controller struct {
	Version string `mapstructure:"version"` // default: the pin in configs/versions.yaml
	// Versions makes the controller version a matrix axis (e.g. v0.5.3,v0.5.5); empty = Version.
	Versions []string `mapstructure:"versions"`
	Args     []string `mapstructure:"args"` // extra flags for every cell (e.g. --api-connections=4)
	// Namespace/Deployment locate the controller on kind/kubeconfig clusters.
	Namespace  string `mapstructure:"namespace"`
	Deployment string `mapstructure:"deployment"`
}

// Workload is the scenario of a warm-pool suite.
type Workload struct {
	Pool          int           `mapstructure:"pool"`   // SandboxWarmPool replicas
	Claims        int           `mapstructure:"claims"` // burst size (mode burst)
	Mode          string        `mapstructure:"mode"`   // burst | poisson | steps | ceiling
	Rate          float64       `mapstructure:"rate"`   // poisson: claims/s
	Duration      time.Duration `mapstructure:"duration"`
	Steps         []float64     `mapstructure:"steps"` // steps: rates, each held for duration
	ClaimTimeout  time.Duration `mapstructure:"claimTimeout"`
	RefillTimeout time.Duration `mapstructure:"refillTimeout"`
	FillTimeout   time.Duration `mapstructure:"fillTimeout"`
	// RefillProjection is the window W of the refill projection: once a refill has run W since
	// its first create, a refill that at its create rate over the last W needs more than twice
	// the time left of RefillTimeout's wait (rate 0: never finishes) is ended there, recorded as
	// projected and not as refilled (recorder.ProjectRefill states the rule). 0 turns it off.
	RefillProjection time.Duration `mapstructure:"refillProjection"`
	// FillWithBrakes fills the pool with the cell's brake flags already on. Off (default): the
	// pool is filled without them, then the controller restarts with the cell's flags before the
	// burst (a full pool at steady state is what the brakes meet in production; with both brakes
	// on, the initial fill itself was measured taking over 5 minutes on the lab).
	FillWithBrakes bool   `mapstructure:"fillWithBrakes"`
	Image          string `mapstructure:"image"`
	// Placement is where the sandboxes' pods run: "simulated" (kwok nodes, the default) or
	// "real-node" (the lab's real node, lab.realNode: its runtime starts every container, and a
	// cell whose claims cannot be served warm measures a real cold start; the image is then the
	// node's own workload image).
	Placement string `mapstructure:"placement"`
	// Ceiling is the search of workload.mode ceiling (config/ceiling.go).
	Ceiling Ceiling `mapstructure:"ceiling"`
}

// PodImage is the image the sandboxes' pods run: workload.image, or on the real node the image
// its containerd holds.
func (w Workload) PodImage() string {
	if w.Placement == "real-node" {
		return images.RealNodeWorkload
	}
	return w.Image
}

// Loadgen is how claims are fired.
type Loadgen struct {
	Connections int     `mapstructure:"connections"` // HTTP/2 connections to shard creates over
	QPS         float64 `mapstructure:"qps"`         // 0 = unlimited
	Burst       int     `mapstructure:"burst"`
	Identity    string  `mapstructure:"identity"` // exempt | serviceaccount
	// MaxInFlight bounds the creates in flight at once; claims beyond it wait (send lag).
	MaxInFlight int `mapstructure:"maxInFlight"`
	// Runner is where the burst is fired and the claims' readiness observed from: "local" (this
	// process) or "in-cluster" (a Job running RunnerImage's `brakebench agent` as a ServiceAccount
	// that may only create, list and watch the cell's SandboxClaims; the client's round trip to a
	// remote API server is then not in the latency).
	Runner      string `mapstructure:"runner"`
	RunnerImage string `mapstructure:"runnerImage"` // a brakebench image built from this repository (in-cluster)
	// RunnerStartup is how long the runner Job gets to start before the burst's T0.
	RunnerStartup time.Duration `mapstructure:"runnerStartup"`
	// RunnerShards is how many pods the in-cluster runner's Indexed Job runs (1 to 64): the
	// schedule's claims are dealt out in time order (the i-th to shard i mod N), every shard fires
	// its share at the same absolute T0, and the harness merges their records (suites/incluster.go).
	RunnerShards int `mapstructure:"runnerShards"`
	// MaxClockSkew is the most two runner shards' clocks may disagree, as estimated against the
	// API server's Date header (loadgen.EstimateClock): a cell whose shards certainly disagree by
	// more fails; one whose estimate cannot rule it out is warned about. Default 50ms: the send lag
	// p99 one generator process already has in a 300-claim burst on the lab (7-44 ms), so shards
	// within it offer the API server a burst no more spread out than one process does.
	MaxClockSkew time.Duration `mapstructure:"maxClockSkew"`
}

// Matrix is what a suite varies.
type Matrix struct {
	Brakes []string `mapstructure:"brakes"`
	// ControllerArgs is an axis of extra controller flag sets, one per item, flags separated by
	// spaces (e.g. "--sandbox-warm-pool-max-batch-size=50"); "" is the controller's defaults.
	ControllerArgs []string `mapstructure:"controllerArgs"`
	// Faults is an axis of fault cells: none, apf-throttle, gpu.
	Faults      []string `mapstructure:"faults"`
	Repetitions int      `mapstructure:"repetitions"`
	// Warmup is how many unmeasured cells run before the measured ones (copies of the baseline
	// cell): a fresh lab serves its first cell faster than every later one, so without a warm-up
	// the first cell of a run is an outlier. Warm-up cells are recorded apart and never analysed.
	Warmup int   `mapstructure:"warmup"`
	Seed   int64 `mapstructure:"seed"` // cell order; 0 = pick one and record it
	// Sequential runs repetitions in rounds (one of every open cell per round, shuffled per
	// round) and stops each cell when its verdict is settled, under a group-sequential rule whose
	// false-positive rate over all looks is 5%; Repetitions is then the planned maximum. false:
	// the fixed design, every cell Repetitions times in one shuffled order.
	Sequential bool `mapstructure:"sequential"`
	// MinRepetitions is the first look (repetitions a side). 3: the fewest with which the
	// repetition-level Welch test has a spread to work with; a large effect can stop there.
	MinRepetitions int `mapstructure:"minRepetitions"`
	// Equivalence (percent) stops a cell whose repeated interval of the change lies within
	// +-Equivalence ("no change larger than Equivalence%"); 0 turns the equivalence stop off.
	Equivalence float64 `mapstructure:"equivalence"`
	// Spending is how alpha is spent over the looks: pocock or obrien-fleming.
	Spending string `mapstructure:"spending"`
	// StopOn are the verdict metrics whose settled verdict stops a cell (claim.p50_ms,
	// claim.p99_ms). The others are judged at the repetitions the cell got, by the same repeated
	// intervals (valid whatever decided when to stop).
	StopOn []string `mapstructure:"stopOn"`
	// Paired compares each repetition of a cell with the baseline's repetition of the same round
	// (a paired t on per-round log ratios): a round's shared conditions (drift, a busy neighbour)
	// cancel out. false: the two-sample (Welch) comparison over repetitions. Sequential design only.
	Paired bool `mapstructure:"paired"`
}

// Default is the built-in base layer.
func Default() Config {
	return Config{
		Cluster: Cluster{Provider: "lab", KindName: "brakebench", KindImage: "kindest/node:v1.37.0"},
		Lab: Lab{
			Name:           "brakebench",
			Nodes:          Nodes{Count: 4, CPU: "64", Memory: "256Gi", Pods: 500, Labels: []string{}},
			PodBootDelay:   300 * time.Millisecond,
			PodBootJitter:  200 * time.Millisecond,
			APIServerArgs:  []string{},
			HPASyncPeriod:  15 * time.Second,
			UpTimeout:      3 * time.Minute,
			ControllerMode: "process", ControllerImages: []string{}, Housekeeping: "none",
		},
		Controller: Controller{Args: []string{}, Versions: []string{}, Namespace: "agent-sandbox-system", Deployment: "agent-sandbox-controller"},
		Workload: Workload{
			Pool: 10, Claims: 10, Mode: "burst", Rate: 10, Duration: 60 * time.Second, Steps: []float64{},
			ClaimTimeout: 3 * time.Minute, RefillTimeout: 3 * time.Minute, FillTimeout: 5 * time.Minute, RefillProjection: 10 * time.Second,
			Image: "registry.k8s.io/pause:3.10", Placement: "simulated", Ceiling: defaultCeiling(),
		},
		Loadgen: Loadgen{Connections: 1, Identity: "exempt", MaxInFlight: 1000, Runner: "local", RunnerStartup: 20 * time.Second,
			RunnerShards: 1, MaxClockSkew: 50 * time.Millisecond},
		Matrix: Matrix{Brakes: []string{"none"}, Repetitions: 1, ControllerArgs: []string{}, Faults: []string{"none"},
			Sequential: true, MinRepetitions: 3, Equivalence: 15, Spending: "pocock", StopOn: []string{"claim.p99_ms"}, Paired: true},
		Autoscale: Autoscale{Arms: []string{"keda", "control"}, Profiles: []string{"0-3-0"}, StepDuration: 45 * time.Second, MinReplicas: 1,
			MetricType: "AverageValue", TargetValue: 1, PollingInterval: 5 * time.Second, SettleTimeout: 2 * time.Minute, ScaleUpPeriod: 15 * time.Second,
			Nodes: "existing", GPUsPerSandbox: 8, ConsolidateAfter: 10 * time.Second},
		GangQuota: GangQuota{GPUQuota: 4, CPUQuota: "64", MemoryQuota: "256Gi", GPUsPerPod: 1, Size: 2, ResizeTo: 8, Replicas: 1, ScaleReplicasTo: 3,
			Observe: 30 * time.Second, AdmitTimeout: 2 * time.Minute, KueueNamespace: "kueue-system", KueueDeployment: "kueue-controller-manager"},
		Tune: defaultTune(),
		Out:  "out",
	}
}
