//go:build e2e

// Karpenter (brakebench's build of v1.14.1 with the kwok provider and EKS's repair policies) is
// built in the background by TestMain with the other optional components; these tests run last.

package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/brakebench/brakebench/faults"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/lab"
	"github.com/brakebench/brakebench/internal/nodechain"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/scrape"
	"github.com/brakebench/brakebench/internal/scrape/fetch"
	"github.com/brakebench/brakebench/internal/sut/karpenter"
	"github.com/brakebench/brakebench/internal/undo"
)

// karpenterScale shrinks EKS's tolerations for the lab: AcceleratedHardwareReady's 10 min to 6 s,
// the other conditions' 30 min to 18 s. Nothing is backdated: the fault's lastTransitionTime is
// the time it was injected.
const karpenterScale = 0.01

// karpenterLeft lists what the Karpenter tests may leave: NodePools, NodeClaims, KWOKNodeClasses,
// nodes of a Karpenter pool, the process.
func karpenterLeft(t *testing.T) []string {
	t.Helper()
	c := clients(t)
	ctx := context.Background()
	var left []string
	for _, gvr := range []struct {
		name string
		l    func() (*unstructured.UnstructuredList, error)
	}{
		{"nodepool", func() (*unstructured.UnstructuredList, error) {
			return c.Dynamic.Resource(karpenter.NodePoolGVR).List(ctx, metav1.ListOptions{})
		}},
		{"nodeclaim", func() (*unstructured.UnstructuredList, error) {
			return c.Dynamic.Resource(karpenter.NodeClaimGVR).List(ctx, metav1.ListOptions{})
		}},
		{"kwoknodeclass", func() (*unstructured.UnstructuredList, error) {
			return c.Dynamic.Resource(karpenter.KWOKNodeClassGVR).List(ctx, metav1.ListOptions{})
		}},
	} {
		l, err := gvr.l()
		if err != nil && !apierrors.IsNotFound(err) {
			left = append(left, fmt.Sprintf("list %s: %v", gvr.name, err))
			continue
		}
		if l != nil {
			for _, o := range l.Items {
				left = append(left, gvr.name+"/"+o.GetName())
			}
		}
	}
	nodes, err := c.Typed.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: karpenter.NodePoolLabel})
	if err != nil {
		left = append(left, "list nodes: "+err.Error())
	} else {
		for _, n := range nodes.Items {
			left = append(left, "node/"+n.Name)
		}
	}
	if st, err := theLab.Load(); err == nil && st.Karpenter != nil {
		left = append(left, "lab state still records Karpenter")
	}
	return left
}

// karpenterPool creates a namespace, the pool's KWOKNodeClass (status Ready, as a provider's node
// class controller would write) and NodePool, and a Deployment of replicas pods that each need a
// whole node of the pool (8 GPUs); it returns the tracker watching the chain.
func karpenterPool(ctx context.Context, t *testing.T, c *kube.Clients, ns string, pool karpenter.PoolSpec, replicas int32) *nodechain.Tracker {
	t.Helper()
	tr := karpenterPoolOnly(ctx, t, c, ns, pool)
	gpuDeployment(ctx, t, c, ns, pool, replicas)
	return tr
}

// gpuPodSpec is a pod that needs a whole node of pool.
func gpuPodSpec(pool karpenter.PoolSpec) corev1.PodSpec {
	gpu := corev1.ResourceList{faults.GPUResource: resource.MustParse("8"), corev1.ResourceCPU: resource.MustParse("1")}
	return corev1.PodSpec{
		NodeSelector:                  map[string]string{karpenter.PoolLabel: pool.Name},
		Tolerations:                   []corev1.Toleration{{Key: pool.Taint, Operator: corev1.TolerationOpExists}},
		TerminationGracePeriodSeconds: ptr.To(int64(0)),
		Containers:                    []corev1.Container{{Name: "worker", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{Limits: gpu, Requests: gpu}}},
	}
}

// gpuDeployment creates the Deployment gpu-worker of replicas gpuPodSpec pods.
func gpuDeployment(ctx context.Context, t *testing.T, c *kube.Clients, ns string, pool karpenter.PoolSpec, replicas int32) {
	t.Helper()
	app := map[string]string{"app": "bb-gpu-worker"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-worker", Namespace: ns, Labels: map[string]string{kube.ManagedByKey: kube.ManagedByValue}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: app},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: app}, Spec: gpuPodSpec(pool)},
		},
	}
	if _, err := c.Typed.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func scaleDeployment(ctx context.Context, t *testing.T, c *kube.Clients, ns string, replicas int32) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
	if _, err := c.Typed.AppsV1().Deployments(ns).Patch(ctx, "gpu-worker", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// karpenterPoolOnly is karpenterPool without the Deployment.
func karpenterPoolOnly(ctx context.Context, t *testing.T, c *kube.Clients, ns string, pool karpenter.PoolSpec) *nodechain.Tracker {
	t.Helper()
	labels := map[string]string{kube.ManagedByKey: kube.ManagedByValue}
	nsObj := nsObject(ns)
	nsObj.Labels = labels
	if _, err := c.Typed.CoreV1().Namespaces().Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Typed.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	if err := karpenter.CreatePool(ctx, c, pool, labels); err != nil {
		t.Fatal(err)
	}
	tr, err := nodechain.Start(ctx, c, ns, pool.Name)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func claimOfNode(tl nodechain.Timeline, node string) (nodechain.ClaimTimes, bool) {
	for _, c := range tl.Claims {
		if c.Node == node {
			return c, true
		}
	}
	return nodechain.ClaimTimes{}, false
}

// medianOf is median (teardown_test.go) over the links that were seen (NaN: not seen).
func medianOf(xs []float64) float64 {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	return median(v)
}

func logChains(t *testing.T, what string, tl nodechain.Timeline) {
	t.Helper()
	ch := tl.Chains()
	col := func(f func(nodechain.Step) float64) float64 {
		var xs []float64
		for _, s := range ch {
			xs = append(xs, f(s))
		}
		return medianOf(xs)
	}
	t.Logf("%s: %d pods; median s from pod created: NodeClaim created %.1f, Launched %.1f, Node created %.1f, Node Ready %.1f, pod scheduled %.1f, pod Ready %.1f",
		what, len(ch), col(func(s nodechain.Step) float64 { return s.NodeClaimCreated }), col(func(s nodechain.Step) float64 { return s.Launched }),
		col(func(s nodechain.Step) float64 { return s.NodeCreated }), col(func(s nodechain.Step) float64 { return s.NodeReady }),
		col(func(s nodechain.Step) float64 { return s.PodScheduled }), col(func(s nodechain.Step) float64 { return s.PodReady }))
}

// TestZZKarpenterRepairBreaker runs Karpenter's node repair on the lab with EKS's policies
// (tolerations x0.01): a pool of 5 GPU nodes provisioned by Karpenter for 5 pods (the chain
// recorded); one node's AcceleratedHardwareReady=False (below the breaker: ceil(20% of 5) = 1)
// gets its NodeClaim deleted no earlier than the toleration and the node replaced, the pods Ready
// again; then two nodes faulted at once (above the breaker) get NodeRepairBlocked and are not
// replaced; then Karpenter is SIGKILLed in the middle of a repair and StopKarpenter leaves no
// NodePool, NodeClaim, node of the pool or process behind.
func TestZZKarpenterRepairBreaker(t *testing.T) {
	waitOptionalBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	start := time.Now()
	k, err := theLab.StartKarpenter(ctx, labState, lab.KarpenterOptions{NodeRepair: true, TolerationScale: karpenterScale})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Karpenter %s up in %s (policies %s)", k.Version, time.Since(start).Round(time.Millisecond), karpenter.EncodePolicies(k.Policies))
	t.Cleanup(func() {
		if err := theLab.StopKarpenter(context.Background(), labState); err != nil {
			t.Errorf("StopKarpenter: %v", err)
		}
		if left := karpenterLeft(t); len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
	})
	tol, _ := karpenter.Toleration(k.Policies, string(faults.AcceleratedHardwareReady), "False")
	c := clients(t)
	pool := karpenter.PoolSpec{Name: "bb-e2e-repair", Taint: "brakebench.io/karpenter-e2e", MaxNodes: 8}
	const n = 5
	tr := karpenterPool(ctx, t, c, "bb-e2e-karpenter", pool, n)
	provisionStart := time.Now()
	tl, err := tr.WaitFor(ctx, fmt.Sprintf("%d pods Ready on %d Karpenter nodes", n, n), 4*time.Minute, func(tl nodechain.Timeline) bool {
		_, nodes, pods := tl.Live()
		return nodes == n && pods == n
	})
	if err != nil {
		t.Fatalf("%v (timeline %+v)", err, tl)
	}
	t.Logf("provisioned %d nodes for %d pods in %s", n, n, time.Since(provisionStart).Round(time.Millisecond))
	logChains(t, "provisioning", tl)

	dir := t.TempDir()
	journal, err := undo.OpenJournal(dir, "karpenter-e2e", undo.ClusterID{Server: labState.Server})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = journal.Close() }) // registered before the reverts: runs after them
	arm := func(kind string, nodes []string) undo.Revert {
		t.Helper()
		f := &faults.GPUFault{Client: c.Typed, Journal: journal, Labels: map[string]string{kube.ManagedByKey: kube.ManagedByValue}, Nodes: nodes, Kind: kind, XID: 79, Escalate: "none"}
		revert, err := f.Arm(ctx)
		t.Cleanup(func() {
			if revert != nil {
				if err := revert(context.Background()); err != nil {
					t.Errorf("revert %s on %v: %v", kind, nodes, err)
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return revert
	}

	// Below the breaker: one node of five.
	victim := tl.LiveNodes()[0]
	faultAt := time.Now()
	arm("xid", []string{victim})
	tl, err = tr.WaitFor(ctx, "the faulted node replaced and every pod Ready again", 4*time.Minute, func(tl nodechain.Timeline) bool {
		cl, ok := claimOfNode(tl, victim)
		_, nodes, pods := tl.Live()
		return ok && !cl.Deleted.IsZero() && !tl.Nodes[victim].Deleted.IsZero() && nodes == n && pods == n
	})
	if err != nil {
		t.Fatalf("below the breaker: %v (timeline %+v)", err, tl)
	}
	cl, _ := claimOfNode(tl, victim)
	var replacement nodechain.ClaimTimes
	for _, c := range tl.Claims {
		if c.Created.After(faultAt) && (replacement.Created.IsZero() || c.Created.Before(replacement.Created)) {
			replacement = c
		}
	}
	if replacement.Name == "" {
		t.Fatal("no replacement NodeClaim was created after the fault")
	}
	// lastTransitionTime has second resolution: repair may start up to 1 s before fault + toleration.
	if early := cl.Deleting.Sub(faultAt); early < tol-time.Second {
		t.Errorf("NodeClaim of %s deleted %s after the fault, before its toleration %s", victim, early, tol)
	}
	var readyAgain time.Time
	for _, p := range tl.Pods {
		if p.Created.After(faultAt) && p.Ready.After(readyAgain) {
			readyAgain = p.Ready
		}
	}
	t.Logf("repair below the breaker (1 of %d, threshold %d): fault -> NodeClaim deleting %.1f s (toleration %s), -> node gone %.1f s, -> replacement NodeClaim %.1f s, -> its node Ready %.1f s, -> displaced pod Ready %.1f s",
		n, karpenter.RepairThreshold(n), cl.Deleting.Sub(faultAt).Seconds(), tol, tl.Nodes[victim].Deleted.Sub(faultAt).Seconds(),
		replacement.Created.Sub(faultAt).Seconds(), tl.Nodes[replacement.Node].Ready.Sub(faultAt).Seconds(), readyAgain.Sub(faultAt).Seconds())

	// Karpenter's own count of what it repaired, from its metrics endpoint.
	repaired := func() float64 {
		t.Helper()
		series, err := fetch.All(ctx, k.MetricsURL)
		if err != nil {
			t.Fatalf("scrape Karpenter: %v", err)
		}
		return scrape.Sum(series, "karpenter_nodeclaims_unhealthy_disrupted_total", map[string]string{"nodepool": pool.Name})
	}
	if got := repaired(); got != 1 {
		t.Errorf("karpenter_nodeclaims_unhealthy_disrupted_total{nodepool=%q} = %v after one repair, want 1", pool.Name, got)
	}

	// Above the breaker: two nodes of five at once.
	pair := tl.LiveNodes()[:2]
	blockedAt := time.Now()
	revertPair := arm("ecc", pair)
	tl, err = tr.WaitFor(ctx, "NodeRepairBlocked for a faulted node", tol+2*time.Minute, func(tl nodechain.Timeline) bool {
		return slices.ContainsFunc(tl.Blocked, func(b nodechain.Blocked) bool { return slices.Contains(pair, b.Node) })
	})
	if err != nil {
		t.Fatalf("above the breaker: %v (blocked %+v)", err, tl.Blocked)
	}
	b := tl.Blocked[slices.IndexFunc(tl.Blocked, func(b nodechain.Blocked) bool { return slices.Contains(pair, b.Node) })]
	// Neither may be repaired while both are unhealthy: watch for twice the toleration more.
	tl, err = tr.WaitFor(ctx, "a blocked node repaired", 2*tol, func(tl nodechain.Timeline) bool {
		for _, node := range pair {
			if cl, ok := claimOfNode(tl, node); ok && !cl.Deleting.IsZero() {
				return true
			}
		}
		return false
	})
	if err == nil {
		t.Fatalf("above the breaker a faulted node was repaired anyway: %+v", tl.Claims)
	}
	if got := repaired(); got != 1 {
		t.Errorf("karpenter_nodeclaims_unhealthy_disrupted_total = %v while repair was blocked, want still 1", got)
	}
	t.Logf("repair above the breaker (2 of %d): NodeRepairBlocked on %s %.1f s after the fault (%q); neither node repaired in the %s after", n, b.Node, b.At.Sub(blockedAt).Seconds(), b.Message, 2*tol)
	if err := revertPair(ctx); err != nil {
		t.Fatal(err)
	}

	// SIGKILL in the middle of a repair, then StopKarpenter (as `brakebench lab down` and the
	// cleanup of a lab run do).
	victim = tl.LiveNodes()[len(tl.LiveNodes())-1]
	arm("kernel", []string{victim})
	ktol, _ := karpenter.Toleration(k.Policies, string(faults.KernelReady), "False")
	tl, err = tr.WaitFor(ctx, "repair of a KernelReady=False node started", ktol+2*time.Minute, func(tl nodechain.Timeline) bool {
		cl, ok := claimOfNode(tl, victim)
		return ok && !cl.Deleting.IsZero()
	})
	if err != nil {
		t.Fatalf("KernelReady repair: %v", err)
	}
	st, err := theLab.Load()
	if err != nil || st.Karpenter == nil {
		t.Fatalf("lab state %v, %v", st, err)
	}
	if err := syscall.Kill(st.Karpenter.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("Karpenter SIGKILLed %.1f s into the repair of %s", time.Since(tl.Claims[mustClaim(t, tl, victim)].Deleting).Seconds(), victim)
	if err := c.Typed.AppsV1().Deployments("bb-e2e-karpenter").Delete(ctx, "gpu-worker", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	sweep := time.Now()
	if err := theLab.StopKarpenter(ctx, labState); err != nil {
		t.Fatalf("StopKarpenter after SIGKILL: %v", err)
	}
	if left := karpenterLeft(t); len(left) > 0 {
		t.Fatalf("after SIGKILL and StopKarpenter: %s", strings.Join(left, ", "))
	}
	t.Logf("after SIGKILL: every NodePool, NodeClaim and pool node gone in %s", time.Since(sweep).Round(time.Millisecond))
}

func mustClaim(t *testing.T, tl nodechain.Timeline, node string) string {
	t.Helper()
	cl, ok := claimOfNode(tl, node)
	if !ok {
		t.Fatalf("no NodeClaim for %s", node)
	}
	return cl.Name
}

// podsOnNodesCreatedBefore counts the Ready pods created after since that landed on a node the
// tracker saw before the pod was created (capacity that was already there when demand arrived).
func podsOnNodesCreatedBefore(tl nodechain.Timeline, since time.Time) (onExisting, total int) {
	for _, p := range tl.Pods {
		if p.Created.Before(since) || p.Ready.IsZero() {
			continue
		}
		total++
		if n, ok := tl.Nodes[p.Node]; ok && n.Created.Before(p.Created) {
			onExisting++
		}
	}
	return onExisting, total
}

// TestZZKarpenterProvisioningAndBuffer records the chain demand -> pods Pending -> NodeClaim ->
// node Ready -> pod Ready for a scale-up that needs new nodes (instance launch simulated by the
// KWOKNodeClass's 3 s registration delay), Karpenter's consolidation on the way down, and the
// same scale-up with a CapacityBuffer ("pre-provisioned headroom", Karpenter's CapacityBuffer
// gate) of as many chunks as pods: with it every pod lands on a node that existed before the pod,
// and the headroom is provisioned again afterwards.
func TestZZKarpenterProvisioningAndBuffer(t *testing.T) {
	waitOptionalBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := theLab.StartKarpenter(ctx, labState, lab.KarpenterOptions{CapacityBuffer: true, TolerationScale: 1}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := theLab.StopKarpenter(context.Background(), labState); err != nil {
			t.Errorf("StopKarpenter: %v", err)
		}
		if left := karpenterLeft(t); len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
	})
	c := clients(t)
	const ns, n = "bb-e2e-karpenter-prov", 3
	pool := karpenter.PoolSpec{Name: "bb-e2e-prov", Taint: "brakebench.io/karpenter-e2e", MaxNodes: 2 * n, RegistrationDelay: 3 * time.Second,
		Consolidate: true, ConsolidateAfter: 5 * time.Second}
	tr := karpenterPoolOnly(ctx, t, c, ns, pool)
	gpuDeployment(ctx, t, c, ns, pool, 0)

	// Without headroom: every pod waits for a node of its own.
	up := time.Now()
	scaleDeployment(ctx, t, c, ns, n)
	tl, err := tr.WaitFor(ctx, fmt.Sprintf("%d pods Ready", n), 3*time.Minute, func(tl nodechain.Timeline) bool { _, _, p := tl.Live(); return p == n })
	if err != nil {
		t.Fatalf("scale-up without a buffer: %v", err)
	}
	logChains(t, "scale-up 0 -> 3 without a buffer", tl)
	if on, total := podsOnNodesCreatedBefore(tl, up); on != 0 || total != n {
		t.Errorf("without a buffer %d of %d pods found a node already there", on, total)
	}
	down := time.Now()
	scaleDeployment(ctx, t, c, ns, 0)
	tl, err = tr.WaitFor(ctx, "empty nodes consolidated away", 3*time.Minute, func(tl nodechain.Timeline) bool { cl, nodes, _ := tl.Live(); return cl == 0 && nodes == 0 })
	if err != nil {
		t.Fatalf("consolidation: %v (claims %+v)", err, tl.Claims)
	}
	var lastGone time.Time
	for _, nt := range tl.Nodes {
		if nt.Deleted.After(lastGone) {
			lastGone = nt.Deleted
		}
	}
	t.Logf("scale-down 3 -> 0: every node consolidated away %.1f s after (consolidateAfter %s)", lastGone.Sub(down).Seconds(), pool.ConsolidateAfter)

	// With headroom: a CapacityBuffer of n chunks shaped like the pods.
	tmpl := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "gpu-chunk", Namespace: ns, Labels: map[string]string{kube.ManagedByKey: kube.ManagedByValue}},
		Template: corev1.PodTemplateSpec{Spec: gpuPodSpec(pool)}}
	if _, err := c.Typed.CoreV1().PodTemplates(ns).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	buffered := time.Now()
	if err := c.Apply(ctx, []*unstructured.Unstructured{karpenter.CapacityBuffer(ns, "headroom", "gpu-chunk", n)}, map[string]string{kube.ManagedByKey: kube.ManagedByValue}); err != nil {
		t.Fatal(err)
	}
	tl, err = tr.WaitFor(ctx, fmt.Sprintf("%d headroom nodes Ready", n), 3*time.Minute, func(tl nodechain.Timeline) bool { _, nodes, _ := tl.Live(); return nodes == n })
	if err != nil {
		t.Fatalf("CapacityBuffer headroom: %v", err)
	}
	t.Logf("CapacityBuffer of %d chunks: %d headroom nodes Ready %.1f s after it was created", n, n, time.Since(buffered).Seconds())
	up = time.Now()
	scaleDeployment(ctx, t, c, ns, n)
	tl, err = tr.WaitFor(ctx, fmt.Sprintf("%d pods Ready with a buffer", n), 3*time.Minute, func(tl nodechain.Timeline) bool {
		_, total := podsOnNodesCreatedBefore(tl, up)
		return total == n
	})
	if err != nil {
		t.Fatalf("scale-up with a buffer: %v", err)
	}
	var readyMax float64
	for _, p := range tl.Pods {
		if !p.Created.Before(up) && p.Ready.Sub(p.Created).Seconds() > readyMax {
			readyMax = p.Ready.Sub(p.Created).Seconds()
		}
	}
	on, total := podsOnNodesCreatedBefore(tl, up)
	t.Logf("scale-up 0 -> 3 with the buffer: %d of %d pods on nodes that existed before them; slowest pod created -> Ready %.1f s", on, total, readyMax)
	if on != total {
		t.Errorf("with a CapacityBuffer of %d chunks only %d of %d pods found headroom", n, on, total)
	}
	// The buffer is headroom on top of demand: Karpenter provisions it again.
	tl, err = tr.WaitFor(ctx, "headroom provisioned again", 3*time.Minute, func(tl nodechain.Timeline) bool { _, nodes, _ := tl.Live(); return nodes >= 2*n })
	if err != nil {
		t.Errorf("after the scale-up the buffer's headroom was not provisioned again: %v", err)
	} else {
		t.Logf("headroom provisioned again: %d nodes Ready %.1f s after the scale-up", 2*n, time.Since(up).Seconds())
	}
	if err := c.Dynamic.Resource(karpenter.CapacityBufferGVR).Namespace(ns).Delete(ctx, "headroom", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// nodeRepairRun are the settings of the node-repair suite cells on the test lab: a pool of 40
// sandboxes at one GPU each fills five 8-GPU Karpenter nodes, so node-repair faults one node (the
// breaker repairs ceil(20% of 5) = 1) and node-repair-blocked two; tolerations x0.01 (6 s).
var nodeRepairRun = []string{"matrix.faults=node-repair,node-repair-blocked", "matrix.brakes=none,both", "matrix.repetitions=1",
	"matrix.warmup=0", "workload.pool=40", "workload.claims=16", "workload.refillTimeout=60s", "faults.nodeRepair.settleTimeout=90s"}

// TestZZNodeRepairCells runs the node-repair faults as warm-pool cells during a claim burst,
// with and without the refill brakes: below the breaker Karpenter replaces the faulted node no
// earlier than its toleration and the pool refills; above it Karpenter reports NodeRepairBlocked
// and replaces nothing. The invariants are the cells' own (judged by the run), and nothing of
// Karpenter is left afterwards.
func TestZZNodeRepairCells(t *testing.T) {
	waitOptionalBuild(t)
	r, dir, stdout := runSuiteOut(t, "warmpool-burst", nodeRepairRun...)
	seen := map[string]bool{}
	for _, cell := range r.Cells {
		if cell.Error != "" {
			t.Errorf("%s: %s", cell.ID, cell.Error)
			continue
		}
		fs := cell.Stats.Fault
		if fs == nil || fs.Repair == nil {
			t.Errorf("%s: no repair statistics", cell.ID)
			continue
		}
		seen[cell.Fault] = true
		rs := fs.Repair
		t.Logf("%s: NodePool %d nodes, faulted %d (breaker %d), repaired %d, condition stored %s, NodeClaim deleted %s, replacement Ready %s, displaced pods Ready %s, blocked %s (%s), counter change %s, most disrupted %d, refill %s",
			cell.ID, rs.PoolNodes, rs.Faulted, rs.Threshold, rs.Repaired, results.FormatSecs(rs.ConditionSinceS), results.FormatSecs(rs.RepairS), results.FormatSecs(rs.ReplacementReadyS), fmt.Sprintf("%d of %d in %s", rs.Recreated, rs.Displaced, results.FormatSecs(rs.RecoveredS)),
			results.FormatSecs(rs.BlockedS), rs.BlockedMessage, results.FormatSecs(rs.CounterDelta), rs.DisruptedMax, results.FormatSecs(cell.Stats.RefillSeconds))
		for _, inv := range fs.Invariants {
			if !inv.Held {
				t.Errorf("%s: invariant violated: %s (%s)", cell.ID, inv.Name, inv.Detail)
			}
		}
		// The NodePool holds the pool and the claimed sandboxes being refilled when the fault
		// strikes (40 to 56 sandboxes at 1 GPU: 5 to 7 nodes); the breaker's threshold follows it.
		if rs.PoolNodes < 5 || rs.ThresholdFor < rs.PoolNodes || rs.Threshold != karpenter.RepairThreshold(rs.ThresholdFor) {
			t.Errorf("%s: NodePool of %d nodes, threshold %d of %d; want at least 5 (40 sandboxes at 1 GPU on 8-GPU nodes) and ceil(20%%)", cell.ID, rs.PoolNodes, rs.Threshold, rs.ThresholdFor)
		}
		if cell.Fault == "node-repair-blocked" && rs.ThresholdFor != 7 {
			t.Errorf("%s: the breaker's allowance is for %d nodes, want 7 (56 sandboxes, pool and claims, at 8 a node)", cell.ID, rs.ThresholdFor)
		}
		switch cell.Fault {
		case "node-repair":
			if rs.Faulted != rs.Threshold || rs.Repaired != rs.Faulted || rs.RecoveredS == nil {
				t.Errorf("%s: faulted %d, repaired %d, displaced pods Ready again %s; want %d, all, and a time", cell.ID, rs.Faulted, rs.Repaired, results.FormatSecs(rs.RecoveredS), rs.Threshold)
			}
			if rs.CounterDelta == nil || *rs.CounterDelta != float64(rs.Faulted) {
				t.Errorf("%s: %s changed by %s, want %d", cell.ID, "karpenter_nodeclaims_unhealthy_disrupted_total", results.FormatSecs(rs.CounterDelta), rs.Faulted)
			}
			if cell.Stats.RefillSeconds == nil {
				t.Errorf("%s: the pool did not refill after the repair", cell.ID)
			}
		case "node-repair-blocked":
			if rs.Faulted != rs.Threshold+1 || rs.Repaired != 0 || rs.BlockedS == nil {
				t.Errorf("%s: faulted %d, repaired %d, blocked %s; want %d, 0 and a time", cell.ID, rs.Faulted, rs.Repaired, results.FormatSecs(rs.BlockedS), rs.Threshold+1)
			}
		}
	}
	if !seen["node-repair"] || !seen["node-repair-blocked"] {
		t.Errorf("cells measured: %v", seen)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fault to NodeClaim deleted", "fault to NodeRepairBlocked", "the repair breaker held"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report.html does not show %q", want)
		}
	}
	if !strings.Contains(stdout, "Karpenter") {
		t.Errorf("the run did not say it started Karpenter:\n%s", stdout)
	}
	if left := karpenterLeft(t); len(left) > 0 {
		t.Errorf("left after the run: %v", left)
	}
}

// TestZZNodeRepairSIGKILLThenCleanup kills the harness while a node-repair cell's fault is on
// a Karpenter node; `brakebench cleanup --all` must stop Karpenter and remove its NodePool,
// NodeClaims and nodes, and the run's namespace.
func TestZZNodeRepairSIGKILLThenCleanup(t *testing.T) {
	waitOptionalBuild(t)
	c := clients(t)
	faulted := func() bool {
		nodes, err := c.Typed.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: karpenter.PoolLabel})
		if err != nil {
			return false
		}
		for _, n := range nodes.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == "AcceleratedHardwareReady" && cond.Status == corev1.ConditionFalse {
					return true
				}
			}
		}
		return false
	}
	left := func(t *testing.T) []string {
		l := karpenterLeft(t)
		return append(l, labelledLeft(t)...)
	}
	args := []string{"warmpool-burst"}
	for _, s := range []string{"matrix.faults=node-repair", "matrix.brakes=none", "matrix.repetitions=1", "matrix.warmup=0",
		"workload.pool=40", "workload.claims=16", "faults.nodeRepair.settleTimeout=90s"} {
		args = append(args, "--set", s)
	}
	killRunWhen(t, args, faulted, 5*time.Minute, left, "restore Karpenter")
}

// TestZZAutoscaleOnKarpenterNodes runs the pool-autoscaling suite with the pool on a Karpenter
// NodePool (one sandbox a node, so every replica beyond the minimum needs a new node), with and
// without KEDA, and with and without the capacity-buffer brake (3 chunks of headroom): each
// step's chain pod -> NodeClaim -> node Ready -> pod Ready is recorded, KEDA's scale-up needs new
// nodes without headroom and lands on existing ones with it, and the scale-down's emptied nodes
// are consolidated away (profile 3 -> 0 in 20 s steps; the scale-down step is watched on until
// its empty nodes are gone, as consolidation takes 21-47 s on the lab).
func TestZZAutoscaleOnKarpenterNodes(t *testing.T) {
	waitOptionalBuild(t)
	r := runSuite(t, "pool-autoscaling", "poolAutoscaling.nodes=karpenter", "poolAutoscaling.profiles=3-0", "poolAutoscaling.stepDuration=20s",
		"poolAutoscaling.hpaSyncPeriod=2s", "poolAutoscaling.consolidateAfter=5s", "matrix.brakes=none,capacity-buffer", "brakes.capacityBuffer=3")
	seen := 0
	for _, cell := range r.Cells {
		if cell.Error != "" {
			t.Errorf("%s: %s", cell.ID, cell.Error)
			continue
		}
		as := cell.Autoscale
		if as == nil || as.Nodes == nil || len(as.Steps) != 2 {
			t.Errorf("%s: no node chain: %+v", cell.ID, as)
			continue
		}
		seen++
		for _, line := range as.Assertions {
			if strings.HasPrefix(line, "FAIL") {
				t.Errorf("%s: %s", cell.ID, line)
			}
		}
		for i, st := range as.Steps {
			n := st.Nodes
			t.Logf("%s step %d (demand %d): pods %d (%d on existing nodes), pod -> NodeClaim %s, -> node Ready %s, -> pod Ready %s; NodeClaims %d, consolidated %d (last %s), Ready nodes %d; start nodes %d, headroom %d Ready %s",
				cell.ID, i, st.Demand, n.Pods, n.OnExistingNodes, results.FormatSecs(n.NodeClaimS), results.FormatSecs(n.NodeReadyS), results.FormatSecs(n.PodReadyS),
				n.ClaimsCreated, n.NodesDeleted, results.FormatSecs(n.ConsolidatedS), n.ReadyNodes, as.Nodes.StartNodes, as.Nodes.Headroom, results.FormatSecs(as.Nodes.HeadroomReadyS))
		}
		t.Logf("%s: the last step watched %.1f s beyond its duration, settled %v", cell.ID, as.Nodes.TailS, as.Nodes.Settled)
		up, down := as.Steps[0].Nodes, as.Steps[1].Nodes
		buffered := as.Nodes.Headroom > 0
		switch {
		case as.Arm == "keda" && !buffered:
			// Scale-up: the pool's new sandboxes need new nodes.
			if up.ClaimsCreated == 0 || up.NodeReadyS == nil || up.Pods == 0 {
				t.Errorf("%s: the scale-up provisioned no node (%+v)", cell.ID, up)
			}
		case as.Arm == "keda" && buffered:
			if as.Nodes.HeadroomReadyS == nil || up.OnExistingNodes == 0 {
				t.Errorf("%s: with headroom no scaled-up pod found an existing node (%+v)", cell.ID, up)
			}
		}
		if up.Pods == 0 {
			t.Errorf("%s: no pod of the demand step became Ready on a pool node", cell.ID)
		}
		if as.Arm == "keda" && (down.NodesDeleted == 0 || down.ConsolidatedS == nil) {
			t.Errorf("%s: the scale-down's empty nodes were not consolidated within the step and its tail (%+v; tail %.1f s, settled %v)", cell.ID, down, as.Nodes.TailS, as.Nodes.Settled)
		}
	}
	if seen != 4 {
		t.Errorf("%d cells measured, want 4 (keda and control, with and without headroom)", seen)
	}
	if left := karpenterLeft(t); len(left) > 0 {
		t.Errorf("left after the run: %v", left)
	}
}
