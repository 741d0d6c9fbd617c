package kueuelws

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Quota is the ClusterQueue's nominal quota.
type Quota struct {
	GPUs   int
	CPU    string
	Memory string
}

// Queues returns a ResourceFlavor, a ClusterQueue with quota (matching every namespace) and a
// LocalQueue in ns pointing at it; every name starts with prefix.
func Queues(prefix, ns string, q Quota) (flavor, cq, lq *unstructured.Unstructured) {
	flavor = obj("kueue.x-k8s.io/v1beta2", "ResourceFlavor", "", prefix+"-flavor", map[string]any{})
	cq = obj("kueue.x-k8s.io/v1beta2", "ClusterQueue", "", prefix+"-cq", map[string]any{
		"namespaceSelector": map[string]any{},
		"resourceGroups": []any{map[string]any{
			"coveredResources": []any{"cpu", "memory", GPUResource},
			"flavors": []any{map[string]any{
				"name": prefix + "-flavor",
				"resources": []any{
					map[string]any{"name": "cpu", "nominalQuota": q.CPU},
					map[string]any{"name": "memory", "nominalQuota": q.Memory},
					map[string]any{"name": GPUResource, "nominalQuota": fmt.Sprint(q.GPUs)},
				},
			}},
		}},
	})
	lq = obj("kueue.x-k8s.io/v1beta2", "LocalQueue", ns, prefix+"-lq", map[string]any{"clusterQueue": prefix + "-cq"})
	return flavor, cq, lq
}

// Group is the shape of a LeaderWorkerSet.
type Group struct {
	Replicas   int
	Size       int
	GPUsPerPod int
	Image      string
}

// LeaderWorkerSet is a Kueue-managed (queue-labelled) LWS with a leader and workers, each pod
// requesting GPUsPerPod GPUs.
func LeaderWorkerSet(ns, name, localQueue string, g Group) *unstructured.Unstructured {
	pod := func() map[string]any {
		gpus := fmt.Sprint(g.GPUsPerPod)
		return map[string]any{"spec": map[string]any{
			"terminationGracePeriodSeconds": int64(0),
			"containers": []any{map[string]any{
				"name": "c", "image": g.Image,
				"resources": map[string]any{
					"requests": map[string]any{"cpu": "100m", "memory": "64Mi", GPUResource: gpus},
					"limits":   map[string]any{GPUResource: gpus},
				},
			}},
		}}
	}
	u := obj("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", ns, name, map[string]any{
		"replicas": int64(g.Replicas),
		"leaderWorkerTemplate": map[string]any{
			"size":           int64(g.Size),
			"leaderTemplate": pod(),
			"workerTemplate": pod(),
		},
	})
	u.SetLabels(map[string]string{QueueLabel: localQueue})
	return u
}

// KueueConfig is the Kueue manager's Configuration for the lab: pod and LeaderWorkerSet
// integrations, internal certificate management and leader election off, every listener on
// 127.0.0.1, webhook certificates from certDir, and the per-resource ClusterQueue metrics
// (kueue_cluster_queue_resource_usage) on.
func KueueConfig(webhookPort, metricsPort, healthPort int, certDir string) string {
	return strings.TrimLeft(fmt.Sprintf(`
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: 127.0.0.1:%d
  enableClusterQueueResources: true
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
clientConnection:
  qps: 300
  burst: 500
integrations:
  frameworks:
  - pod
  - leaderworkerset.x-k8s.io/leaderworkerset
`, KueueNamespace, healthPort, metricsPort, webhookPort, certDir), "\n")
}

// LWSConfig is the LeaderWorkerSet controller's Configuration for the lab.
func LWSConfig(webhookPort, metricsPort, healthPort int, certDir string) string {
	return strings.TrimLeft(fmt.Sprintf(`
apiVersion: config.lws.x-k8s.io/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
metrics:
  bindAddress: 127.0.0.1:%d
health:
  healthProbeBindAddress: 127.0.0.1:%d
`, webhookPort, certDir, metricsPort, healthPort), "\n")
}
