package nodechain

import (
	"context"
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/sut/karpenter"
)

func nodeClaim(name, pool, node string, conds ...string) *unstructured.Unstructured {
	var cs []any
	for _, c := range conds {
		cs = append(cs, map[string]any{"type": c, "status": "True"})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
		"metadata": map[string]any{"name": name, "labels": map[string]any{karpenter.NodePoolLabel: pool}},
		"status":   map[string]any{"nodeName": node, "conditions": cs},
	}}
}

// The tracker follows a chain from watches (client-go fakes): a pod, its NodeClaim's conditions,
// the node going Ready, the pod scheduled and Ready, a repair (claim deleted), a blocked repair
// event. (Which pool's objects are watched is a label selector the API server applies; the
// fakes do not, so it is not tested here.)
func TestTrackerChain(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kc := fake.NewSimpleClientset()
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{karpenter.NodeClaimGVR: "NodeClaimList"})
	// The fakes do not replay what was created between an informer's list and its watch: wait
	// until all four watches are open before creating anything.
	watches := make(chan string, 8)
	onWatch := func(a k8stesting.Action) (bool, watch.Interface, error) {
		watches <- a.GetResource().Resource
		return false, nil, nil
	}
	kc.PrependWatchReactor("*", onWatch)
	dc.PrependWatchReactor("*", onWatch)
	tr, err := Start(ctx, &kube.Clients{Typed: kc, Dynamic: dc}, "ns", "gpu")
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		select {
		case <-watches:
		case <-time.After(10 * time.Second):
			t.Fatal("the tracker's watches did not open")
		}
	}
	wait := func(what string, f func(Timeline) bool) Timeline {
		t.Helper()
		tl, err := tr.WaitFor(ctx, what, 10*time.Second, f)
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1", Namespace: "ns"}}
	if _, err := kc.CoreV1().Pods("ns").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("pod", func(tl Timeline) bool { return len(tl.Pods) == 1 })
	ncs := dc.Resource(karpenter.NodeClaimGVR)
	if _, err := ncs.Create(ctx, nodeClaim("c1", "gpu", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("claim", func(tl Timeline) bool { return len(tl.Claims) == 1 })
	time.Sleep(5 * time.Millisecond)
	// Each step is made only once the watches delivered the one before: separate watches (claims,
	// nodes, pods) deliver in no order relative to each other.
	if _, err := ncs.Update(ctx, nodeClaim("c1", "gpu", "n1", "Launched"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("launched", func(tl Timeline) bool { return !tl.Claims["c1"].Launched.IsZero() })
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{karpenter.NodePoolLabel: "gpu"}}}
	if _, err := kc.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("node", func(tl Timeline) bool { return len(tl.Nodes) == 1 })
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if _, err := kc.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("node ready", func(tl Timeline) bool { return !tl.Nodes["n1"].Ready.IsZero() })
	pod.Spec.NodeName = "n1"
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if _, err := kc.CoreV1().Pods("ns").Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	tl := wait("pod ready", func(tl Timeline) bool {
		_, n, p := tl.Live()
		return n == 1 && p == 1 && tl.Claims["c1"].Node == "n1"
	})
	chains := tl.Chains()
	if len(chains) != 1 {
		t.Fatalf("chains %+v", chains)
	}
	s := chains[0]
	if !(s.NodeClaimCreated >= 0 && s.Launched >= s.NodeClaimCreated && s.NodeReady >= s.NodeCreated && s.PodReady >= s.NodeReady) || s.Total != s.PodReady {
		t.Errorf("chain out of order: %+v", s)
	}
	// An unhealthy node, a repair and a blocked repair.
	node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: "AcceleratedHardwareReady", Status: corev1.ConditionFalse, Reason: "NvidiaXID79Error"})
	if _, err := kc.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("unhealthy", func(tl Timeline) bool { return tl.Nodes["n1"].Unhealthy == "AcceleratedHardwareReady=NvidiaXID79Error" })
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "default"}, Reason: karpenter.RepairBlockedReason,
		Message: "more than 20% nodes are unhealthy in the nodepool", InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	if _, err := kc.CoreV1().Events("default").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := ncs.Delete(ctx, "c1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	tl = wait("repair", func(tl Timeline) bool { return !tl.Claims["c1"].Deleted.IsZero() && len(tl.Blocked) == 1 })
	if c, _, _ := tl.Live(); c != 0 || tl.Blocked[0].Node != "n1" {
		t.Errorf("live claims %d, blocked %+v", c, tl.Blocked)
	}
	if _, err := tr.WaitFor(ctx, "never", 50*time.Millisecond, func(Timeline) bool { return false }); err == nil {
		t.Error("WaitFor must time out")
	}
}

func TestChainsMissingLinks(t *testing.T) {
	now := time.Now()
	tl := Timeline{
		Pods:   map[string]PodTimes{"p": {Name: "p", Node: "n", Created: now, Ready: now.Add(3 * time.Second)}, "q": {Name: "q", Created: now}},
		Nodes:  map[string]NodeTimes{"n": {Name: "n", Created: now.Add(time.Second), Ready: now.Add(2 * time.Second)}},
		Claims: map[string]ClaimTimes{"c": {Name: "c", Node: "n", Created: now}},
	}
	ch := tl.Chains()
	if len(ch) != 1 || !math.IsNaN(ch[0].Launched) || ch[0].NodeReady != 2 || ch[0].Total != 3 {
		t.Errorf("%+v", ch)
	}
}

// A pod deleted and recreated under the same name (agent-sandbox names a sandbox's pod after the
// sandbox) is a second pod with its own chain, not the first one's.
func TestTrackerPodRecreatedUnderItsName(t *testing.T) {
	clock := time.Unix(100, 0)
	tr := newTracker(func() time.Time { return clock })
	ready := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	first := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sb-1", UID: "u1"}, Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Conditions: ready}}
	tr.pod(first)
	clock = clock.Add(5 * time.Second)
	tr.podGone(first)
	clock = clock.Add(time.Second)
	second := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sb-1", UID: "u2"}}
	tr.pod(second)
	tl := tr.Snapshot()
	if len(tl.Pods) != 2 {
		t.Fatalf("pods %+v, want two", tl.Pods)
	}
	if p := tl.Pods["u1"]; p.Deleted.IsZero() || p.Node != "n1" || p.Ready.IsZero() {
		t.Errorf("first pod %+v", p)
	}
	if p := tl.Pods["u2"]; !p.Deleted.IsZero() || !p.Ready.IsZero() || !p.Created.Equal(time.Unix(106, 0)) {
		t.Errorf("second pod %+v: a new chain from its own creation", p)
	}
}
