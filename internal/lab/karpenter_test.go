package lab

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/sut/karpenter"
)

func obj(apiVersion, kind, name string, labels map[string]any, finalizers ...any) *unstructured.Unstructured {
	md := map[string]any{"name": name, "labels": labels}
	if len(finalizers) > 0 {
		md["finalizers"] = finalizers
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}}
}

// The sweep removes brakebench's NodePools and KWOKNodeClasses and every NodeClaim and Node of a
// brakebench pool (also one whose NodePool is already gone), and nothing of a NodePool that is
// not brakebench's.
func TestSweepKarpenter(t *testing.T) {
	ctx := context.Background()
	managed := map[string]any{kube.ManagedByKey: kube.ManagedByValue}
	ours := map[string]any{karpenter.PoolLabel: "bb", karpenter.NodePoolLabel: "bb"}
	orphan := map[string]any{karpenter.PoolLabel: "gone", karpenter.NodePoolLabel: "gone"}
	theirs := map[string]any{karpenter.NodePoolLabel: "theirs"}
	nodes := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		karpenter.NodePoolGVR: "NodePoolList", karpenter.NodeClaimGVR: "NodeClaimList", karpenter.KWOKNodeClassGVR: "KWOKNodeClassList", nodes: "NodeList",
	},
		obj("karpenter.sh/v1", "NodePool", "bb", managed),
		obj("karpenter.sh/v1", "NodePool", "theirs", nil),
		obj("karpenter.kwok.sh/v1alpha1", "KWOKNodeClass", "bb", managed),
		obj("karpenter.sh/v1", "NodeClaim", "bb-1", ours, karpenter.TerminationFinalizer),
		obj("karpenter.sh/v1", "NodeClaim", "gone-1", orphan, karpenter.TerminationFinalizer),
		obj("karpenter.sh/v1", "NodeClaim", "theirs-1", theirs),
		obj("v1", "Node", "n-bb-1", ours, karpenter.TerminationFinalizer),
		obj("v1", "Node", "n-theirs-1", theirs),
		obj("v1", "Node", "static-0", nil),
	)
	if err := SweepKarpenter(ctx, &kube.Clients{Dynamic: dc}); err != nil {
		t.Fatal(err)
	}
	want := map[schema.GroupVersionResource][]string{
		karpenter.NodePoolGVR: {"theirs"}, karpenter.NodeClaimGVR: {"theirs-1"}, karpenter.KWOKNodeClassGVR: nil, nodes: {"n-theirs-1", "static-0"},
	}
	for gvr, names := range want {
		l, err := dc.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range l.Items {
			got = append(got, o.GetName())
		}
		if len(got) != len(names) {
			t.Errorf("%s left: %v, want %v", gvr.Resource, got, names)
			continue
		}
		for i := range got {
			if got[i] != names[i] {
				t.Errorf("%s left: %v, want %v", gvr.Resource, got, names)
			}
		}
	}
}
