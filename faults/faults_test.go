package faults

import (
	"context"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/brakebench/brakebench/internal/scrape"
	"github.com/brakebench/brakebench/internal/undo"
)

func gpuNode(name string) *corev1.Node {
	gpus := resource.MustParse("8")
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{GPUResource: gpus}, Allocatable: corev1.ResourceList{GPUResource: gpus},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}},
		},
	}
}

func journal(t *testing.T) *undo.Journal {
	j, err := undo.OpenJournal(t.TempDir(), "run1", undo.ClusterID{Server: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return j
}

func TestAPFThrottleArmAndRevert(t *testing.T) {
	ctx := context.Background()
	c := fake.NewSimpleClientset()
	j := journal(t)
	f := &APFThrottle{Client: c, Journal: j, Labels: map[string]string{"brakebench.io/run-id": "run1"}, ObjectName: "bb-throttle",
		Namespace: "agent-sandbox-system", ServiceAccount: "agent-sandbox-controller", Shares: 1, Queues: 1, QueueLength: 5, Precedence: 500}
	revert, err := f.Arm(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := c.FlowcontrolV1().FlowSchemas().Get(ctx, "bb-throttle", metav1.GetOptions{})
	if err != nil || fs.Spec.Rules[0].Subjects[0].ServiceAccount.Name != "agent-sandbox-controller" || fs.Spec.MatchingPrecedence != 500 || fs.Labels["brakebench.io/run-id"] != "run1" {
		t.Fatalf("flow schema %+v %v", fs, err)
	}
	if pl, err := c.FlowcontrolV1().PriorityLevelConfigurations().Get(ctx, "bb-throttle", metav1.GetOptions{}); err != nil || *pl.Spec.Limited.NominalConcurrencyShares != 1 {
		t.Fatalf("priority level %v", err)
	}
	js, _ := undo.ReadJournals(strings.TrimSuffix(j.Path, "/run1.jsonl"), "run1")
	if n := len(js[0].Entries); n != 3 {
		t.Errorf("journal has %d entries, want cluster + 2 created", n)
	}
	if err := revert(ctx); err != nil {
		t.Fatal(err)
	}
	if l, _ := c.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("flow schema left after revert")
	}
	if l, _ := c.FlowcontrolV1().PriorityLevelConfigurations().List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("priority level left after revert")
	}
	if err := revert(ctx); err != nil {
		t.Errorf("a second revert must be harmless: %v", err)
	}
}

func TestGPUFaultArmAndRevertRestoreTheNodeExactly(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, kind, escalate string
		xid                  int
		wantCondition        string // reason on the kind's condition ("" = none, an event instead)
		wantTaint, wantEvent bool
		wantGPUs             string
		condType             corev1.NodeConditionType // "" = AcceleratedHardwareReady
	}{
		{"xid 79 fatal with taint", "xid", "taint", 79, "NvidiaXID79Error", true, false, "8", ""},
		{"xid 94 warning only", "xid", "taint", 94, "", false, true, "8", ""},
		{"ecc double bit", "ecc", "none", 0, "NvidiaDoubleBitError", false, false, "8", ""},
		{"device count mismatch", "device-count", "none", 0, "NvidiaDeviceCountMismatch", false, false, "7", ""},
		{"nvlink, node goes NotReady", "nvlink", "notready", 0, "NvidiaNVLinkError", false, false, "8", ""},
		// The agent's other conditions; the node starts with KernelReady=True (KernelIsReady),
		// which the revert must put back as it was.
		{"kernel out of PIDs", "kernel", "none", 0, "ForkFailedOutOfPIDs", false, false, "8", KernelReady},
		{"networking interface down", "networking", "none", 0, "InterfaceNotUp", false, false, "8", NetworkingReady},
		{"runtime pod stuck terminating", "runtime", "none", 0, "PodStuckTerminating", false, false, "8", ContainerRuntimeReady},
		{"storage I/O errors are warning only", "storage", "none", 0, "", false, true, "8", StorageReady},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			condType := tc.condType
			if condType == "" {
				condType = AcceleratedHardwareReady
			}
			n0 := gpuNode("gpu-0")
			n0.Status.Conditions = append(n0.Status.Conditions, corev1.NodeCondition{Type: KernelReady, Status: corev1.ConditionTrue, Reason: "KernelIsReady",
				Message: "Monitoring for the Kernel system is active"})
			c := fake.NewSimpleClientset(n0, gpuNode("gpu-1"))
			before, _ := c.CoreV1().Nodes().Get(ctx, "gpu-0", metav1.GetOptions{})
			want := NodeState(before)
			exp := NewDCGMExporter(map[string]int{"gpu-0": 8, "gpu-1": 8})
			f := &GPUFault{Client: c, Journal: journal(t), Nodes: []string{"gpu-0"}, Kind: tc.kind, XID: tc.xid, Escalate: tc.escalate, Exporter: exp}
			revert, err := f.Arm(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n, _ := c.CoreV1().Nodes().Get(ctx, "gpu-0", metav1.GetOptions{})
			reason := ""
			for _, cd := range n.Status.Conditions {
				if cd.Type == condType && cd.Status == corev1.ConditionFalse {
					reason = cd.Reason
				}
			}
			if reason != tc.wantCondition {
				t.Errorf("condition reason %q, want %q", reason, tc.wantCondition)
			}
			tainted := false
			for _, tn := range n.Spec.Taints {
				tainted = tainted || (tn.Key == GPUErrorTaint && tn.Effect == corev1.TaintEffectNoExecute)
			}
			if tainted != tc.wantTaint {
				t.Errorf("tainted %v, want %v", tainted, tc.wantTaint)
			}
			evs, _ := c.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
			if (len(evs.Items) == 1) != tc.wantEvent {
				t.Errorf("%d events, want event=%v", len(evs.Items), tc.wantEvent)
			}
			if q := n.Status.Allocatable[GPUResource]; q.String() != tc.wantGPUs {
				t.Errorf("allocatable GPUs %s, want %s", q.String(), tc.wantGPUs)
			}
			if tc.escalate == "notready" && (n.Annotations["kwok.x-k8s.io/node"] != "" || !Unavailable(n)) {
				t.Errorf("notready escalation: annotations %v unavailable %v", n.Annotations, Unavailable(n))
			}
			other, _ := c.CoreV1().Nodes().Get(ctx, "gpu-1", metav1.GetOptions{})
			if NodeState(other) != NodeState(gpuNode("gpu-1")) {
				t.Error("a node that was not picked changed")
			}
			if err := revert(ctx); err != nil {
				t.Fatal(err)
			}
			after, _ := c.CoreV1().Nodes().Get(ctx, "gpu-0", metav1.GetOptions{})
			if got := NodeState(after); got != want {
				t.Errorf("revert did not restore the node:\n got %s\nwant %s", got, want)
			}
			if evs, _ := c.CoreV1().Events("default").List(ctx, metav1.ListOptions{}); len(evs.Items) != 0 {
				t.Errorf("event left after revert")
			}
		})
	}
}

func TestDCGMExporterServesFaults(t *testing.T) {
	exp := NewDCGMExporter(map[string]int{"gpu-0": 2, "gpu-1": 2})
	if err := exp.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = exp.Stop(context.Background()) }()
	read := func() []scrape.Series {
		resp, err := http.Get(exp.URL())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body := new(strings.Builder)
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			body.WriteString(string(buf[:n]))
			if err != nil {
				break
			}
		}
		// Parse the exposition the way a scraper would, then read the DCGM families.
		p := scrape.ParseAll(strings.NewReader(body.String()))
		return p
	}
	xid := func(ss []scrape.Series, host string) float64 {
		return scrape.Sum(ss, "DCGM_FI_DEV_XID_ERRORS", map[string]string{"Hostname": host, "gpu": "0"})
	}
	if v := xid(read(), "gpu-1"); v != 0 {
		t.Errorf("healthy XID %v", v)
	}
	exp.Inject("gpu-1", "xid", 79)
	ss := read()
	if v := xid(ss, "gpu-1"); v != 79 {
		t.Errorf("XID after fault %v", v)
	}
	for _, s := range ss {
		if s.Name == "DCGM_FI_DEV_XID_ERRORS" && (s.Labels["UUID"] == "" || s.Labels["device"] == "") {
			t.Errorf("missing dcgm-exporter labels: %v", s.Labels)
		}
	}
	exp.Clear("gpu-1")
	if v := xid(read(), "gpu-1"); v != 0 {
		t.Errorf("XID after clear %v", v)
	}
}

type fakeRestarter struct{ args map[string][]string }

func (f *fakeRestarter) ComponentArgs(name string) ([]string, error) { return f.args[name], nil }
func (f *fakeRestarter) RestartComponent(_ context.Context, name string, args []string) error {
	f.args[name] = args
	return nil
}

func TestControlPlaneFlagsArmAndRevert(t *testing.T) {
	r := &fakeRestarter{args: map[string][]string{"kube-scheduler": {"--kubeconfig=k", "--kube-api-qps=50"}}}
	f := &ControlPlaneFlags{Restarter: r, Journal: journal(t), Component: "kube-scheduler", Flags: []string{"--kube-api-qps=200", "--kube-api-burst=400"}}
	revert, err := f.Arm(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.args["kube-scheduler"], " "); got != "--kubeconfig=k --kube-api-qps=200 --kube-api-burst=400" {
		t.Errorf("armed args %q", got)
	}
	if err := revert(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.args["kube-scheduler"], " "); got != "--kubeconfig=k --kube-api-qps=50" {
		t.Errorf("reverted args %q", got)
	}
	js, _ := undo.ReadJournals(strings.TrimSuffix(f.Journal.Path, "/run1.jsonl"), "run1")
	if p := js[0].Pending(); len(p) != 0 {
		t.Errorf("a reverted change is still pending: %+v", p)
	}
}
