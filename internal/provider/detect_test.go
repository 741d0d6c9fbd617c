package provider

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name, providerID string, labels, annotations map[string]string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

func TestDetect(t *testing.T) {
	eksLabels := map[string]string{"eks.amazonaws.com/nodegroup": "ng-1", "node.kubernetes.io/instance-type": "m6i.4xlarge",
		"topology.kubernetes.io/region": "us-west-2", "topology.kubernetes.io/zone": "us-west-2a"}
	gkeLabels := map[string]string{"cloud.google.com/gke-nodepool": "default-pool", "node.kubernetes.io/instance-type": "e2-standard-16",
		"topology.kubernetes.io/region": "europe-west4", "topology.kubernetes.io/zone": "europe-west4-b"}
	cases := []struct {
		name    string
		nodes   []corev1.Node
		version string
		dist    string
		types   map[string]int
		regions []string
	}{
		{"EKS", []corev1.Node{node("ip-10-0-1-2", "aws:///us-west-2a/i-0abc", eksLabels, nil), node("ip-10-0-1-3", "aws:///us-west-2a/i-0abd", eksLabels, nil)},
			"v1.34.2-eks-113cf36", "EKS", map[string]int{"m6i.4xlarge": 2}, []string{"us-west-2"}},
		{"GKE", []corev1.Node{node("gke-a-default-pool-1", "gce://proj/europe-west4-b/gke-a-default-pool-1", gkeLabels, nil)},
			"v1.35.1-gke.1234000", "GKE", map[string]int{"e2-standard-16": 1}, []string{"europe-west4"}},
		{"kind", []corev1.Node{node("bb-control-plane", "kind://docker/bb/bb-control-plane", map[string]string{"kubernetes.io/hostname": "bb-control-plane"}, nil)},
			"v1.37.0", "kind", nil, nil},
		{"lab", []corev1.Node{node("kwok-node-0", "", map[string]string{"type": "kwok"}, map[string]string{"kwok.x-k8s.io/node": "fake"})},
			"v1.37.2", "kwok-lab", nil, nil},
		{"lab with its real node", []corev1.Node{node("kwok-node-0", "", nil, map[string]string{"kwok.x-k8s.io/node": "fake"}),
			node("brakebench-real-0", "", map[string]string{"brakebench.dev/real-node": "true"}, nil)},
			"v1.37.2", "kwok-lab", nil, nil},
		{"only a node labelled real is not the lab", []corev1.Node{node("n1", "", map[string]string{"brakebench.dev/real-node": "true"}, nil)},
			"v1.37.2", "other", nil, nil},
		{"AKS", []corev1.Node{node("aks-nodepool1-1", "azure:///subscriptions/x/vm-1", map[string]string{"kubernetes.azure.com/cluster": "MC_rg"}, nil)},
			"v1.33.5", "AKS", nil, nil},
		{"EKS by server version with kwok nodes beside real ones", []corev1.Node{node("kwok-node-0", "", nil, map[string]string{"kwok.x-k8s.io/node": "fake"})},
			"v1.34.2-eks-113cf36", "EKS", nil, nil},
		{"bare kubeadm", []corev1.Node{node("n1", "", map[string]string{"kubernetes.io/hostname": "n1"}, nil)}, "v1.37.2", "other", nil, nil},
	}
	for _, c := range cases {
		m := Detect(c.nodes, c.version)
		if m.Distribution != c.dist || !reflect.DeepEqual(m.InstanceTypes, c.types) || !reflect.DeepEqual(m.Regions, c.regions) ||
			m.Nodes != len(c.nodes) || m.ServerVersion != c.version || m.ControlPlaneTier != "not exposed" {
			t.Errorf("%s: %+v", c.name, m)
		}
	}
}
