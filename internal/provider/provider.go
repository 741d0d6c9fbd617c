// Package provider is the cluster seam: the embedded lab, a kind cluster, or an existing
// kubeconfig context, behind one small interface. A Cluster's Close undoes only what its
// provider created; a cluster brakebench did not create is never deleted.
package provider

import (
	"context"
	"fmt"
	"io"

	"k8s.io/client-go/rest"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/sut/karpenter"
)

// Info describes a connected cluster for results and reports.
type Info struct {
	Provider   string `json:"provider"`
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Context    string `json:"context,omitempty"`
	Server     string `json:"server"`
	Created    bool   `json:"created"` // brakebench created it for this command
}

// MetricsTarget is a /metrics endpoint to scrape before and after each cell.
type MetricsTarget struct {
	Component string `json:"component"`
	URL       string `json:"url"`
	// ViaAPIServer: URL is a path on the apiserver (scraped with the cluster's credentials).
	ViaAPIServer bool `json:"viaAPIServer"`
	Insecure     bool `json:"-"`
	// BearerToken authenticates the scrape (endpoints behind controller-runtime's authn/authz filter).
	BearerToken string `json:"-"`
}

// Controller is the agent-sandbox controller under test.
type Controller interface {
	// Configure runs version with extra flags (added to the baseline) and returns a revert that
	// restores the previous setting. The revert is valid even when Configure fails half-way.
	Configure(ctx context.Context, version string, extra []string) (revert func(context.Context) error, err error)
	// Current reports the running version and full flag list.
	Current() (version string, flags []string)
	// Stop stops the controller (lab) or scales it to zero (cluster); revert restores it.
	Stop(ctx context.Context) (revert func(context.Context) error, err error)
	// Restore sets exactly this version and flag list (what Current reported before a change);
	// cleanup uses it to replay a journal after a crash.
	Restore(ctx context.Context, version string, flags []string) error
}

// Cluster is a connected cluster.
type Cluster interface {
	Info() Info
	RESTConfig() *rest.Config
	Controller() Controller
	MetricsTargets() []MetricsTarget
	Close(ctx context.Context) error
}

// Housekeeper is a cluster brakebench owns outright (the lab): its own health can be read
// between cells, and it can be tidied (Housekeep, the steps of lab.housekeeping in order) so
// every cell starts from the same shape. A cluster brakebench did not create never implements it.
type Housekeeper interface {
	Health(ctx context.Context) (results.LabHealth, error)
	Housekeep(ctx context.Context, steps []string) (results.Housekeeping, error)
}

// Provider creates or connects to a cluster.
type Provider interface {
	Name() string
	Connect(ctx context.Context) (Cluster, error)
}

// Factory builds a provider from the resolved configuration.
type Factory func(cfg *config.Resolved) (Provider, error)

// Registry maps provider names to factories.
type Registry map[string]Factory

// New returns the provider cfg.Cluster.Provider names.
func (r Registry) New(cfg *config.Resolved) (Provider, error) {
	f, ok := r[cfg.Cluster.Provider]
	if !ok {
		return nil, fmt.Errorf("no cluster provider %q", cfg.Cluster.Provider)
	}
	return f(cfg)
}

// Kueue is a running Kueue (with the LeaderWorkerSet controller) whose feature gates a suite
// can set.
type Kueue interface {
	// SetGates makes Kueue run with these --feature-gates items ("Name=bool") on top of its own,
	// and waits until it is ready again.
	SetGates(ctx context.Context, gates []string) error
	// Gates are the --feature-gates items Kueue runs with now.
	Gates() []string
	// Metrics is Kueue's /metrics endpoint, or nil when brakebench cannot reach it.
	Metrics() *MetricsTarget
	// Version is Kueue's version as far as it is known ("" when not).
	Version() string
}

// KueueCluster is a cluster that can provide Kueue and LWS (the gang-quota suite's system).
type KueueCluster interface {
	// Kueue starts (lab) or finds (kind/kubeconfig) Kueue and the LWS controller. The original
	// state is journaled as original before anything changes; restore puts it back (and is what
	// `brakebench cleanup` calls with the journaled original after a crash).
	Kueue(ctx context.Context, journal func(original []byte) error) (k Kueue, restore func(context.Context) error, err error)
	// RestoreKueue restores a journaled original.
	RestoreKueue(ctx context.Context, original []byte) error
}

// KEDA is a running KEDA (operator and metrics adapter) a suite can point ScaledObjects at.
type KEDA interface {
	Version() string
	// HPASyncPeriod is kube-controller-manager's HPA sync period ("" when unknown: managed
	// control planes do not say).
	HPASyncPeriod() string
	// ExporterURL is the URL KEDA's metrics-api scaler should read for a demand exporter that
	// this process serves at local (lab), or the configured in-cluster exporter URL.
	ExporterURL(local string) string
	// ServesExporter is true when the suite must serve the demand exporter itself (lab).
	ServesExporter() bool
}

// KEDACluster is a cluster that can provide KEDA.
type KEDACluster interface {
	// KEDA starts (lab) or finds (kind/kubeconfig) KEDA; the original state is journaled first and
	// restore puts it back (also what `brakebench cleanup` calls after a crash).
	KEDA(ctx context.Context, hpaSyncPeriod string, journal func(original []byte) error) (k KEDA, restore func(context.Context) error, err error)
	RestoreKEDA(ctx context.Context, original []byte) error
}

// KarpenterOptions are what a suite chooses of a cluster's Karpenter.
type KarpenterOptions struct {
	NodeRepair     bool
	CapacityBuffer bool
	// TolerationScale multiplies EKS's published repair tolerations (0 < f <= 1).
	TolerationScale float64
}

// Karpenter is a running Karpenter a suite's NodePools are served by.
type Karpenter struct {
	Version    string
	MetricsURL string // "" when brakebench cannot scrape it
	// Policies are the repair policies it runs with (tolerations already scaled).
	Policies []karpenter.RepairPolicy
}

// KarpenterCluster is a cluster that can provide Karpenter (the lab: built on first use and run
// out of cluster with its kwok provider). Optional.
type KarpenterCluster interface {
	// Karpenter starts Karpenter with opts; the original state is journaled first and restore
	// puts it back, removing the NodePools, NodeClaims and nodes of brakebench's pools (also what
	// `brakebench cleanup` calls with the journaled original after a crash).
	Karpenter(ctx context.Context, opts KarpenterOptions, journal func(original []byte) error) (k Karpenter, restore func(context.Context) error, err error)
	RestoreKarpenter(ctx context.Context, original []byte) error
}

// ControllerLogs is a cluster whose agent-sandbox controller log brakebench can read (the lab:
// the process's log file). Suites use it for what the controller states and nothing outside
// shows, such as how many sandboxes one reconcile pass created.
type ControllerLogs interface {
	// ControllerLog is the controller's log (JSON lines) from its start or earlier.
	ControllerLog(ctx context.Context) (io.ReadCloser, error)
}

// Noter is a controller with something to say about a change it made (a Deployment that
// dropped args its new version does not define); the runner prints it and keeps it in results.
type Noter interface {
	TakeNotes() []string
}

// VersionPreparer is a cluster that must build controller versions before it can run them (the
// lab); a run prepares every version it needs before its first cell, so a failing build never
// wastes half a run.
type VersionPreparer interface {
	PrepareVersions(ctx context.Context, versions []string) error
}

// PodPlacer is a cluster that must adapt a pod it did not define before it can run there (the
// lab: only its real node runs containers, on the host's network). Optional.
type PodPlacer interface {
	PlacePod(spec map[string]any) error
}
