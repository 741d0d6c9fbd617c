package provider

import (
	"context"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/results"
)

// Detect classifies a cluster from its nodes and server version (a pure function): distribution
// (kwok-lab, kind, EKS, GKE, AKS, other), instance types, regions and zones. ControlPlaneTier is
// what the provider exposes about the control plane's size; none of the detected distributions
// publishes it through the Kubernetes API, so it is "not exposed". Who the cluster is (provider,
// server, context) and the round trip are left to Describe.
func Detect(nodes []corev1.Node, serverVersion string) results.Cluster {
	m := results.Cluster{ServerVersion: serverVersion, Nodes: len(nodes), InstanceTypes: map[string]int{}, ControlPlaneTier: "not exposed"}
	regions, zones := map[string]bool{}, map[string]bool{}
	votes := map[string]int{}
	fake, labReal := 0, 0
	for _, n := range nodes {
		l := n.Labels
		if t := l["node.kubernetes.io/instance-type"]; t != "" {
			m.InstanceTypes[t]++
		} else if t := l["beta.kubernetes.io/instance-type"]; t != "" {
			m.InstanceTypes[t]++
		}
		if r := l["topology.kubernetes.io/region"]; r != "" {
			regions[r] = true
		}
		if z := l["topology.kubernetes.io/zone"]; z != "" {
			zones[z] = true
		}
		pid := n.Spec.ProviderID
		switch {
		case n.Annotations["kwok.x-k8s.io/node"] == "fake":
			fake++
		case l[kube.RealNodeKey] == "true": // the lab's real node, beside its kwok nodes
			labReal++
		case strings.HasPrefix(pid, "aws://") || l["eks.amazonaws.com/nodegroup"] != "" || l["eks.amazonaws.com/compute-type"] != "":
			votes["EKS"]++
		case strings.HasPrefix(pid, "gce://") || l["cloud.google.com/gke-nodepool"] != "":
			votes["GKE"]++
		case strings.HasPrefix(pid, "azure://") || l["kubernetes.azure.com/cluster"] != "":
			votes["AKS"]++
		case strings.HasPrefix(pid, "kind://"):
			votes["kind"]++
		}
	}
	switch {
	case strings.Contains(serverVersion, "-eks-"):
		votes["EKS"] += len(nodes) + 1
	case strings.Contains(serverVersion, "-gke."):
		votes["GKE"] += len(nodes) + 1
	}
	best, bestN := "", 0
	for d, n := range votes {
		if n > bestN || (n == bestN && d < best) {
			best, bestN = d, n
		}
	}
	switch {
	case best != "":
		m.Distribution = best
	case fake > 0 && fake+labReal == len(nodes):
		m.Distribution = "kwok-lab"
	default:
		m.Distribution = "other"
	}
	m.Regions, m.Zones = keys(regions), keys(zones)
	if len(m.InstanceTypes) == 0 {
		m.InstanceTypes = nil
	}
	return m
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Describe is where a run happens, for results and vendor comparisons: the connected cluster
// (info), what Detect reads from its nodes and version, and the median round trip of a cheap GET
// (/version) from the harness (a remote client inflates every client-side latency by about this
// much).
func Describe(ctx context.Context, c kubernetes.Interface, info Info) results.Cluster {
	var nodes []corev1.Node
	if list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		nodes = list.Items
	}
	version := ""
	if v, err := c.Discovery().ServerVersion(); err == nil {
		version = v.GitVersion
	}
	m := Detect(nodes, version)
	m.Provider, m.Server, m.Context = info.Provider, info.Server, info.Context
	var rtts []float64
	for i := 0; i < 7; i++ {
		start := time.Now()
		if _, err := c.Discovery().RESTClient().Get().AbsPath("/version").DoRaw(ctx); err != nil {
			continue
		}
		rtts = append(rtts, float64(time.Since(start))/float64(time.Millisecond))
	}
	if len(rtts) > 0 {
		sort.Float64s(rtts)
		m.RTTms = rtts[len(rtts)/2]
	}
	return m
}
