package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
	"github.com/brakebench/brakebench/internal/sut/karpenter"
)

// Karpenter is the running Karpenter (brakebench's build of it with the kwok cloud provider).
type Karpenter struct {
	proc
	Version        string                   `json:"version"`
	MetricsURL     string                   `json:"metricsURL"`
	HealthURL      string                   `json:"healthURL"`
	FeatureGates   string                   `json:"featureGates"`
	NodeRepair     bool                     `json:"nodeRepair"`
	CapacityBuffer bool                     `json:"capacityBuffer"`
	Policies       []karpenter.RepairPolicy `json:"policies"`
	// TolerationScale is the factor EKS's published tolerations were multiplied by.
	TolerationScale float64 `json:"tolerationScale"`
}

// KarpenterOptions are what a suite chooses of the lab's Karpenter.
type KarpenterOptions struct {
	NodeRepair     bool
	CapacityBuffer bool
	// TolerationScale multiplies EKS's repair tolerations (0 < f <= 1; 1 as published).
	TolerationScale float64
}

// StartKarpenter builds (cached) and starts Karpenter out of cluster against the lab: leader
// election off, its CRDs from the pinned module, the kwok provider with the lab's GPU instance
// type and EKS's repair policies (tolerations scaled). Nodes it launches carry kwok's annotation,
// so the lab's kwok controller runs them beside the static nodes. A running Karpenter with other
// options is restarted; with the same ones it is returned as it is.
func (l *Lab) StartKarpenter(ctx context.Context, s *State, opt KarpenterOptions) (*Karpenter, error) {
	policies, err := karpenter.ScalePolicies(karpenter.EKSRepairPolicies(), opt.TolerationScale)
	if err != nil {
		return nil, err
	}
	gates := karpenter.FeatureGates(opt.NodeRepair, opt.CapacityBuffer)
	if k := s.Karpenter; k != nil && alive(k.PID, k.Binary) && k.FeatureGates == gates && k.TolerationScale == opt.TolerationScale {
		return k, nil
	}
	if s.Karpenter != nil {
		if err := l.stopKarpenterProcess(s); err != nil {
			return nil, err
		}
	}
	bins, err := l.BuildAddons(ctx, []string{"karpenter"})
	if err != nil {
		return nil, err
	}
	mod, err := l.builder.ModuleDir(ctx, "sigs.k8s.io/karpenter", l.versions.Karpenter)
	if err != nil {
		return nil, err
	}
	c, err := s.clients()
	if err != nil {
		return nil, err
	}
	crds, err := karpenter.CRDs(mod)
	if err != nil {
		return nil, err
	}
	if err := c.Apply(ctx, crds, map[string]string{kube.ManagedByKey: kube.ManagedByValue}); err != nil {
		return nil, fmt.Errorf("apply the Karpenter CRDs: %w", err)
	}
	names := make([]string, 0, len(crds))
	for _, crd := range crds {
		names = append(names, crd.GetName())
	}
	if err := agentsandbox.WaitCRDsEstablished(ctx, c, names, time.Minute); err != nil {
		return nil, fmt.Errorf("the Karpenter CRDs are not established: %w", err)
	}
	dir := filepath.Join(l.dir, "karpenter")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	types := filepath.Join(dir, "instance-types.json")
	if err := os.WriteFile(types, karpenter.InstanceTypes(), 0o644); err != nil {
		return nil, err
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	// Karpenter reads its options from the environment (flags would be parsed by its own flag
	// set, which rejects the ones it does not know). Its metrics and health listeners have no host
	// option in v1.14.1: they listen on every interface, on ports of their own.
	env := []string{
		"KUBECONFIG=" + s.Kubeconfig,
		"DISABLE_LEADER_ELECTION=true",
		fmt.Sprintf("METRICS_PORT=%d", ports[0]),
		fmt.Sprintf("HEALTH_PROBE_PORT=%d", ports[1]),
		"FEATURE_GATES=" + gates,
		"INSTANCE_TYPES_FILE_PATH=" + types,
		karpenter.RepairPoliciesEnv + "=" + karpenter.EncodePolicies(policies),
		"LOG_LEVEL=info",
	}
	k := &Karpenter{Version: l.versions.Karpenter, FeatureGates: gates, NodeRepair: opt.NodeRepair, CapacityBuffer: opt.CapacityBuffer,
		Policies: policies, TolerationScale: opt.TolerationScale,
		MetricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[0]), HealthURL: fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1])}
	p, _, err := startProc("karpenter", bins["karpenter"].Path("karpenter-kwok"), nil, env, filepath.Join(l.dir, "logs", "karpenter.log"))
	if err != nil {
		return nil, err
	}
	k.proc = *p
	s.Karpenter = k
	if err := l.saveKarpenter(s); err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, k.HealthURL, 2*time.Minute, func() bool { return alive(p.PID, p.Binary) }); err != nil {
		stopErr := l.stopKarpenterProcess(s)
		return nil, errors.Join(fmt.Errorf("the lab's Karpenter did not become ready (log %s): %w\n%s", p.Log, err, tailFile(p.Log, 2000)), stopErr)
	}
	return k, nil
}

func (l *Lab) stopKarpenterProcess(s *State) error {
	if s.Karpenter == nil {
		return nil
	}
	if err := stopPID(s.Karpenter.PID, s.Karpenter.Binary, 15*time.Second); err != nil {
		return err
	}
	s.Karpenter = nil
	return l.saveKarpenter(s)
}

// saveKarpenter writes s's Karpenter into the lab's saved state as it is on disk now, and
// refreshes s from it: s may be older than the file (a caller that loaded it before other runs
// restarted the controller), and saving it whole would put a dead controller's pid back, after
// which the next run finds the lab unhealthy and recreates it.
func (l *Lab) saveKarpenter(s *State) error {
	cur, err := l.Load()
	if err != nil {
		return l.save(s)
	}
	cur.Karpenter = s.Karpenter
	*s = *cur
	return l.save(s)
}

// StopKarpenter stops Karpenter, then removes what it and brakebench made of it: NodePools and
// KWOKNodeClasses brakebench labelled, and every NodeClaim and Node of those pools (their
// karpenter.sh/termination finalizers stripped: the Karpenter that would remove them is gone, and
// in the kwok provider the Node is the instance). Safe to call when nothing runs or after a
// SIGKILL; it waits until the objects are gone.
func (l *Lab) StopKarpenter(ctx context.Context, s *State) error {
	var errs []error
	if err := l.stopKarpenterProcess(s); err != nil {
		errs = append(errs, err)
	}
	c, err := s.clients()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	errs = append(errs, SweepKarpenter(ctx, c))
	return errors.Join(errs...)
}

// SweepKarpenter deletes the brakebench NodePools, the NodeClaims and Nodes of brakebench pools
// (labelled brakebench.io/pool by the pool's template) and the brakebench KWOKNodeClasses,
// stripping Karpenter's finalizers, and waits (up to a minute) until they are gone. Objects of
// NodePools brakebench did not create are not touched. Where Karpenter's CRDs are not installed
// there is nothing to do.
func SweepKarpenter(ctx context.Context, c *kube.Clients) error {
	managed := metav1.ListOptions{LabelSelector: kube.ManagedByKey + "=" + kube.ManagedByValue}
	pools, err := c.Dynamic.Resource(karpenter.NodePoolGVR).List(ctx, managed)
	if apierrors.IsNotFound(err) {
		return nil // no NodePool CRD: Karpenter was never installed here
	}
	if err != nil {
		return fmt.Errorf("list NodePools: %w", err)
	}
	var errs []error
	del := func(gvr schema.GroupVersionResource, o unstructured.Unstructured) {
		if len(o.GetFinalizers()) > 0 {
			patch := []byte(`{"metadata":{"finalizers":null}}`)
			if _, err := c.Dynamic.Resource(gvr).Patch(ctx, o.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("strip finalizers of %s %s: %w", gvr.Resource, o.GetName(), err))
			}
		}
		if err := c.Dynamic.Resource(gvr).Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s %s: %w", gvr.Resource, o.GetName(), err))
		}
	}
	nodesGVR := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	// The pools first (no new NodeClaims), then their NodeClaims and Nodes.
	for _, p := range pools.Items {
		del(karpenter.NodePoolGVR, p)
	}
	remaining := func() ([]string, error) {
		var left []string
		// Every NodeClaim and Node of a brakebench pool carries the pool's template label, also
		// when its NodePool is already gone (a sweep cut short).
		sel := metav1.ListOptions{LabelSelector: karpenter.PoolLabel}
		for _, gvr := range []schema.GroupVersionResource{karpenter.NodeClaimGVR, nodesGVR} {
			list, err := c.Dynamic.Resource(gvr).List(ctx, sel)
			if err != nil {
				return nil, fmt.Errorf("list %s: %w", gvr.Resource, err)
			}
			for _, o := range list.Items {
				del(gvr, o)
				left = append(left, gvr.Resource+"/"+o.GetName())
			}
		}
		for _, gvr := range []schema.GroupVersionResource{karpenter.NodePoolGVR, karpenter.KWOKNodeClassGVR} {
			list, err := c.Dynamic.Resource(gvr).List(ctx, managed)
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("list %s: %w", gvr.Resource, err)
			}
			if list == nil {
				continue
			}
			for _, o := range list.Items {
				del(gvr, o)
				left = append(left, gvr.Resource+"/"+o.GetName())
			}
		}
		return left, nil
	}
	deadline := time.Now().Add(time.Minute)
	for {
		left, err := remaining()
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.Join(append(errs, fmt.Errorf("objects of Karpenter left after a minute: %s", strings.Join(left, ", ")))...)
		}
		select {
		case <-ctx.Done():
			return errors.Join(append(errs, ctx.Err())...)
		case <-time.After(500 * time.Millisecond):
		}
		errs = nil // retried: only the last round's errors matter
	}
}
