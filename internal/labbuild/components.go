// Package labbuild builds the lab's upstream components (Kubernetes control plane, etcd, kwok,
// agent-sandbox) from the Go module proxy into a per-version binary cache. Each component is
// built from its own generated tools module so its dependency graph never mixes with another's.
package labbuild

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"sigs.k8s.io/yaml"

	"github.com/brakebench/brakebench/configs"
)

// Versions are the pinned upstream versions, read from configs/versions.yaml.
type Versions struct {
	Kubernetes   string `json:"kubernetes"`
	Etcd         string `json:"etcd"`
	Kwok         string `json:"kwok"`
	AgentSandbox string `json:"agent-sandbox"`
	// Optional components, built only when a suite needs them.
	Kueue string `json:"kueue"`
	LWS   string `json:"lws"`
	KEDA  string `json:"keda"`
	// The real node (lab.realNode): container runtime and CNI plugins; its kubelet is built
	// from the Kubernetes pin.
	Containerd string `json:"containerd"`
	CNIPlugins string `json:"cni-plugins"`
	// Karpenter with its kwok cloud provider (node provisioning and repair in the lab).
	Karpenter string `json:"karpenter"`
}

// LoadVersions reads the embedded pins.
func LoadVersions() (Versions, error) {
	raw, err := configs.FS.ReadFile("versions.yaml")
	if err != nil {
		return Versions{}, fmt.Errorf("read embedded configs/versions.yaml: %w", err)
	}
	var v Versions
	if err := yaml.UnmarshalStrict(raw, &v); err != nil {
		return Versions{}, fmt.Errorf("configs/versions.yaml: %w", err)
	}
	for key, val := range map[string]string{"kubernetes": v.Kubernetes, "etcd": v.Etcd, "kwok": v.Kwok, "agent-sandbox": v.AgentSandbox,
		"kueue": v.Kueue, "lws": v.LWS, "keda": v.KEDA, "containerd": v.Containerd, "cni-plugins": v.CNIPlugins, "karpenter": v.Karpenter} {
		if !semverRe.MatchString(val) {
			return Versions{}, fmt.Errorf("configs/versions.yaml: key %q: %q is not a version like v1.2.3", key, val)
		}
	}
	return v, nil
}

var semverRe = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

// Binary is one executable a component produces.
type Binary struct {
	Name    string // file name in the cache
	Package string // import path of its main package
	// WrapperMain, when set, is the source of a main package generated inside the tools module
	// (for upstreams whose command lives in a module that cannot be required directly).
	WrapperMain string
}

// Component is one upstream project built into the lab cache.
type Component struct {
	Name     string
	Module   string
	Version  string
	CacheKey string // directory name under bin/<Name>/; the version plus anything baked in
	Binaries []Binary
	LDFlags  []string
	Tags     []string // go build tags
	// GoModExtra returns additional go.mod directives (replace/exclude) for the tools module.
	GoModExtra func(ctx context.Context, b *Builder, version string) (string, error)
	// ColdEstimate is the measured cold build time on a 2-core machine, shown in progress output.
	ColdEstimate time.Duration
}

// kubeLDFlags stamps the Kubernetes version into component-base and client-go.
func kubeLDFlags(version string) []string {
	minor := strings.Split(strings.TrimPrefix(version, "v"), ".")
	ld := []string{}
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		ld = append(ld,
			"-X "+pkg+".gitVersion="+version,
			"-X "+pkg+".gitMajor="+minor[0],
			"-X "+pkg+".gitMinor="+minor[1],
			"-X "+pkg+".gitTreeState=clean",
		)
	}
	return ld
}

// KubernetesComponent builds the control plane and kubectl from k8s.io/kubernetes.
func KubernetesComponent(version string) Component {
	c := Component{
		Name: "kubernetes", Module: "k8s.io/kubernetes", Version: version, CacheKey: version,
		LDFlags:      kubeLDFlags(version),
		ColdEstimate: 13 * time.Minute,
		GoModExtra:   stagingReplaces,
	}
	for _, cmd := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"} {
		c.Binaries = append(c.Binaries, Binary{Name: cmd, Package: "k8s.io/kubernetes/cmd/" + cmd})
	}
	return c
}

// KubeletComponent builds the real node's kubelet from the same k8s.io/kubernetes pin, in its own
// tools module (a separate cache entry, so the control plane is not rebuilt for it).
func KubeletComponent(version string) Component {
	return Component{
		Name: "kubelet", Module: "k8s.io/kubernetes", Version: version, CacheKey: version,
		Binaries:     []Binary{{Name: "kubelet", Package: "k8s.io/kubernetes/cmd/kubelet"}},
		LDFlags:      kubeLDFlags(version),
		ColdEstimate: 2 * time.Minute,
		GoModExtra:   stagingReplaces,
	}
}

// ContainerdComponent builds containerd 2.x, its runc shim and ctr. no_btrfs: the btrfs
// snapshotter needs cgo and headers; the lab uses overlayfs (or native).
func ContainerdComponent(version string) Component {
	return Component{
		Name: "containerd", Module: "github.com/containerd/containerd/v2", Version: version, CacheKey: version,
		Binaries: []Binary{
			{Name: "containerd", Package: "github.com/containerd/containerd/v2/cmd/containerd"},
			{Name: "containerd-shim-runc-v2", Package: "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"},
			{Name: "ctr", Package: "github.com/containerd/containerd/v2/cmd/ctr"},
		},
		LDFlags:      []string{"-X github.com/containerd/containerd/v2/version.Version=" + version},
		Tags:         []string{"no_btrfs"},
		ColdEstimate: 4 * time.Minute,
		GoModExtra:   upstreamReplaces("github.com/containerd/containerd/v2"),
	}
}

// CNIPluginsComponent builds the reference CNI plugins the real node's pods use.
func CNIPluginsComponent(version string) Component {
	c := Component{
		Name: "cni-plugins", Module: "github.com/containernetworking/plugins", Version: version, CacheKey: version,
		ColdEstimate: time.Minute,
		GoModExtra:   upstreamReplaces("github.com/containernetworking/plugins"),
	}
	for _, p := range []string{"main/bridge", "main/loopback", "ipam/host-local"} {
		c.Binaries = append(c.Binaries, Binary{Name: filepath.Base(p), Package: "github.com/containernetworking/plugins/plugins/" + p})
	}
	return c
}

// PauseComponent is a tiny static program of brakebench's own (no upstream module): the real
// node's pod sandbox ("pause") image and its sandbox workload image both run it. It sleeps until
// SIGTERM/SIGINT and reaps children; as a workload it also answers HTTP on :8080 when asked
// (--listen), so a readiness probe has something real to hit.
func PauseComponent() Component {
	return Component{
		Name: "pause", Version: PauseVersion, CacheKey: PauseVersion,
		Binaries:     []Binary{{Name: "bbpause", Package: "brakebench.local/tools/pause/cmd/bbpause", WrapperMain: pauseMain}},
		ColdEstimate: 10 * time.Second,
	}
}

// PauseVersion changes whenever pauseMain does (it is the cache key).
const PauseVersion = "v1"

const pauseMain = `// Command bbpause holds a pod's namespaces (as its sandbox) or stands in for a sandbox's
// workload on the brakebench lab's real node (generated by brakebench).
package main

import (
	"net/http"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 8)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for _, a := range os.Args[1:] {
		if len(a) > 9 && a[:9] == "--listen=" {
			go func(addr string) {
				_ = http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) }))
			}(a[9:])
		}
	}
	for s := range sig {
		if s != syscall.SIGCHLD {
			return
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
`

// stagingReplaces turns k8s.io/kubernetes' local staging replaces (./staging/src/k8s.io/X) into
// replaces of the published staging modules at the matching v0.Y.Z version.
func stagingReplaces(ctx context.Context, b *Builder, version string) (string, error) {
	info, err := b.modDownload(ctx, "k8s.io/kubernetes@"+version)
	if err != nil {
		return "", err
	}
	raw, err := os.ReadFile(info.GoMod)
	if err != nil {
		return "", fmt.Errorf("read k8s.io/kubernetes go.mod: %w", err)
	}
	return translateStagingReplaces(raw, version)
}

// translateStagingReplaces is stagingReplaces' pure part: go.mod text in, replace block out.
func translateStagingReplaces(raw []byte, version string) (string, error) {
	staging := "v0" + strings.TrimPrefix(version, "v1")
	re := regexp.MustCompile(`(?m)^\s*(k8s\.io/[A-Za-z0-9_.-]+)\s*=>\s*\./staging/src/k8s\.io/[A-Za-z0-9_.-]+\s*$`)
	var sb strings.Builder
	sb.WriteString("replace (\n")
	n := 0
	for _, m := range re.FindAllStringSubmatch(string(raw), -1) {
		fmt.Fprintf(&sb, "\t%s => %s %s\n", m[1], m[1], staging)
		n++
	}
	sb.WriteString(")\n")
	if n == 0 {
		return "", fmt.Errorf("k8s.io/kubernetes@%s go.mod has no staging replaces to translate", version)
	}
	return sb.String(), nil
}

// EtcdComponent wraps go.etcd.io/etcd/server/v3's etcdmain in a tiny main package.
func EtcdComponent(version string) Component {
	return Component{
		Name: "etcd", Module: "go.etcd.io/etcd/server/v3", Version: version, CacheKey: version,
		Binaries: []Binary{{
			Name:    "etcd",
			Package: "brakebench.local/tools/etcd/cmd/etcd",
			WrapperMain: `// Command etcd runs the etcd server from go.etcd.io/etcd/server/v3 (generated by brakebench).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
`,
		}},
		ColdEstimate: 2 * time.Minute,
	}
}

// KwokComponent builds kwok and kwokctl; the Kubernetes version they assume is stamped in.
func KwokComponent(version, kubeVersion string) Component {
	return Component{
		Name: "kwok", Module: "sigs.k8s.io/kwok", Version: version, CacheKey: version + "-k8s" + kubeVersion,
		Binaries: []Binary{
			{Name: "kwok", Package: "sigs.k8s.io/kwok/cmd/kwok"},
			{Name: "kwokctl", Package: "sigs.k8s.io/kwok/cmd/kwokctl"},
		},
		LDFlags: []string{
			"-X sigs.k8s.io/kwok/pkg/consts.Version=" + strings.TrimPrefix(version, "v"),
			"-X sigs.k8s.io/kwok/pkg/consts.KubeVersion=" + strings.TrimPrefix(kubeVersion, "v"),
		},
		ColdEstimate: 2 * time.Minute,
	}
}

// AgentSandboxComponent builds the agent-sandbox controller at any served version.
func AgentSandboxComponent(version string) Component {
	return Component{
		Name: "agent-sandbox", Module: "sigs.k8s.io/agent-sandbox", Version: version, CacheKey: version,
		Binaries: []Binary{{Name: "agent-sandbox-controller", Package: "sigs.k8s.io/agent-sandbox/cmd/agent-sandbox-controller"}},
		LDFlags: []string{
			"-X sigs.k8s.io/agent-sandbox/internal/version.gitVersion=" + version,
			"-X sigs.k8s.io/agent-sandbox/internal/version.gitSHA=modproxy-" + version,
		},
		ColdEstimate: 2 * time.Minute,
	}
}

// KueueComponent builds the Kueue manager (cmd/kueue).
func KueueComponent(version string) Component {
	return Component{
		Name: "kueue", Module: "sigs.k8s.io/kueue", Version: version, CacheKey: version,
		Binaries: []Binary{{Name: "kueue", Package: "sigs.k8s.io/kueue/cmd/kueue"}},
		LDFlags: []string{
			"-X sigs.k8s.io/kueue/pkg/version.GitVersion=" + version,
			"-X sigs.k8s.io/kueue/pkg/version.GitCommit=modproxy-" + version,
		},
		ColdEstimate: 6 * time.Minute,
		GoModExtra:   upstreamReplaces("sigs.k8s.io/kueue"),
	}
}

// LWSComponent builds the LeaderWorkerSet controller manager (its main package is cmd/).
func LWSComponent(version string) Component {
	return Component{
		Name: "lws", Module: "sigs.k8s.io/lws", Version: version, CacheKey: version,
		Binaries: []Binary{{Name: "lws-controller-manager", Package: "sigs.k8s.io/lws/cmd"}},
		LDFlags: []string{
			"-X sigs.k8s.io/lws/pkg/version.GitVersion=" + version,
			"-X sigs.k8s.io/lws/pkg/version.GitCommit=modproxy-" + version,
		},
		ColdEstimate: 4 * time.Minute,
		GoModExtra:   upstreamReplaces("sigs.k8s.io/lws"),
	}
}

// KEDAComponent builds KEDA's operator and metrics adapter, the heaviest lab build.
func KEDAComponent(version string) Component {
	return Component{
		Name: "keda", Module: "github.com/kedacore/keda/v2", Version: version, CacheKey: version,
		Binaries: []Binary{
			{Name: "keda-operator", Package: "github.com/kedacore/keda/v2/cmd/operator"},
			{Name: "keda-adapter", Package: "github.com/kedacore/keda/v2/cmd/adapter"},
		},
		LDFlags: []string{
			"-X=github.com/kedacore/keda/v2/version.Version=" + version,
			"-X=github.com/kedacore/keda/v2/version.GitCommit=modproxy-" + version,
		},
		ColdEstimate: 12 * time.Minute,
		GoModExtra:   upstreamReplaces("github.com/kedacore/keda/v2"),
	}
}

// KarpenterComponent builds Karpenter with its kwok cloud provider, wrapped by brakebench (the
// main package is brakebench's own, karpenterMain) so that the provider's repair policies are the
// ones the lab passes in (EKS's, tolerations scaled) instead of kwok's Ready-only pair.
func KarpenterComponent(version string) Component {
	return Component{
		Name: "karpenter", Module: "sigs.k8s.io/karpenter", Version: version, CacheKey: version + "-" + KarpenterWrapperVersion,
		Binaries: []Binary{{Name: "karpenter-kwok", Package: "brakebench.local/tools/karpenter/cmd/karpenter-kwok", WrapperMain: karpenterMain}},
		LDFlags:  []string{"-X sigs.k8s.io/karpenter/pkg/operator.Version=" + version},
		// Measured here: 6m on 2 cores from an empty build cache.
		ColdEstimate: 6 * time.Minute,
		GoModExtra:   upstreamReplaces("sigs.k8s.io/karpenter"),
	}
}

// KarpenterWrapperVersion changes whenever karpenterMain does (it is part of the cache key).
const KarpenterWrapperVersion = "bb1"

// karpenterMain is brakebench's Karpenter: the operator, every core controller, and the kwok
// cloud provider with its RepairPolicies replaced by the JSON in $REPAIR_POLICIES (unset: the
// kwok provider's own). Everything else is upstream's, unchanged.
const karpenterMain = `// Command karpenter-kwok runs Karpenter's controllers with its kwok cloud provider, whose repair
// policies come from $REPAIR_POLICIES when set (generated by brakebench).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kwok "sigs.k8s.io/karpenter/kwok/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/overlay"
	"sigs.k8s.io/karpenter/pkg/controllers"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/operator"
)

// withRepair is a cloud provider whose repair policies are given; every other method is the
// wrapped provider's.
type withRepair struct {
	cloudprovider.CloudProvider
	policies []cloudprovider.RepairPolicy
}

func (w withRepair) RepairPolicies() []cloudprovider.RepairPolicy { return w.policies }

func policiesFromEnv() ([]cloudprovider.RepairPolicy, error) {
	raw := os.Getenv("REPAIR_POLICIES")
	if raw == "" {
		return nil, nil
	}
	var in []struct{ Condition, Status, Toleration string }
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		return nil, fmt.Errorf("REPAIR_POLICIES: %w", err)
	}
	out := make([]cloudprovider.RepairPolicy, 0, len(in))
	for _, p := range in {
		d, err := time.ParseDuration(p.Toleration)
		if err != nil || p.Condition == "" || p.Status == "" {
			return nil, fmt.Errorf("REPAIR_POLICIES: bad policy %+v", p)
		}
		out = append(out, cloudprovider.RepairPolicy{ConditionType: corev1.NodeConditionType(p.Condition),
			ConditionStatus: corev1.ConditionStatus(p.Status), TolerationDuration: d})
	}
	return out, nil
}

func main() {
	policies, err := policiesFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, op := operator.NewOperator()
	types, err := kwok.ConstructInstanceTypes(ctx)
	if err != nil {
		log.FromContext(ctx).Error(err, "constructing instance types")
		os.Exit(1)
	}
	var provider cloudprovider.CloudProvider = kwok.NewCloudProvider(ctx, op.GetClient(), types)
	if policies != nil {
		provider = withRepair{CloudProvider: provider, policies: policies}
	}
	log.FromContext(ctx).Info("repair policies", "policies", fmt.Sprint(provider.RepairPolicies()))
	decorated := overlay.Decorate(provider, op.GetClient(), op.InstanceTypeStore)
	cluster := state.NewCluster(op.Clock, op.GetClient(), decorated)
	op.WithControllers(ctx, controllers.NewControllers(ctx, op.Manager, op.Clock, op.GetClient(), op.EventRecorder,
		decorated, provider, cluster, op.InstanceTypeStore)...).Start(ctx)
}
`

// upstreamReplaces copies the upstream module's own replace and exclude directives (those that
// point at other module versions, not local paths) into the tools module, so it resolves the
// dependency graph upstream tested.
func upstreamReplaces(module string) func(ctx context.Context, b *Builder, version string) (string, error) {
	return func(ctx context.Context, b *Builder, version string) (string, error) {
		info, err := b.modDownload(ctx, module+"@"+version)
		if err != nil {
			return "", err
		}
		raw, err := os.ReadFile(info.GoMod)
		if err != nil {
			return "", fmt.Errorf("read %s go.mod: %w", module, err)
		}
		return copyReplaceExclude(raw)
	}
}

// copyReplaceExclude is upstreamReplaces' pure part: it parses go.mod text and returns its
// version replaces and excludes; a replace to a local directory is an error.
func copyReplaceExclude(raw []byte) (string, error) {
	f, err := modfile.Parse("go.mod", raw, nil)
	if err != nil {
		return "", fmt.Errorf("parse upstream go.mod: %w", err)
	}
	var sb strings.Builder
	for _, r := range f.Replace {
		if r.New.Version == "" {
			return "", fmt.Errorf("upstream go.mod replaces %s with local path %s; it cannot be built from the module proxy", r.Old.Path, r.New.Path)
		}
		old := r.Old.Path
		if r.Old.Version != "" {
			old += " " + r.Old.Version
		}
		fmt.Fprintf(&sb, "replace %s => %s %s\n", old, r.New.Path, r.New.Version)
	}
	for _, e := range f.Exclude {
		fmt.Fprintf(&sb, "exclude %s %s\n", e.Mod.Path, e.Mod.Version)
	}
	return sb.String(), nil
}

// LabComponents lists what the embedded lab needs, in build order (heaviest first).
func LabComponents(v Versions) []Component {
	return []Component{
		KubernetesComponent(v.Kubernetes),
		EtcdComponent(v.Etcd),
		KwokComponent(v.Kwok, v.Kubernetes),
		AgentSandboxComponent(v.AgentSandbox),
	}
}

// Addons are the optional components, by name, built only when a suite (or `lab build --with`)
// asks for them.
func Addons(v Versions) map[string]Component {
	return map[string]Component{
		"kueue": KueueComponent(v.Kueue),
		"lws":   LWSComponent(v.LWS),
		"keda":  KEDAComponent(v.KEDA),
		// The real node (lab.realNode).
		"kubelet":     KubeletComponent(v.Kubernetes),
		"containerd":  ContainerdComponent(v.Containerd),
		"cni-plugins": CNIPluginsComponent(v.CNIPlugins),
		"pause":       PauseComponent(),
		"karpenter":   KarpenterComponent(v.Karpenter),
	}
}

// AddonNames lists the optional components' names in a stable order.
func AddonNames() []string {
	return []string{"kueue", "lws", "keda", "kubelet", "containerd", "cni-plugins", "pause", "karpenter"}
}

// RealNodeAddons are the components of the lab's real node.
func RealNodeAddons() []string { return []string{"kubelet", "containerd", "cni-plugins", "pause"} }

// BinDir is where a component's binaries live in the cache.
func BinDir(cacheDir string, c Component) string {
	return filepath.Join(cacheDir, "bin", c.Name, c.CacheKey)
}
