package lab

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	toolswatch "k8s.io/client-go/tools/watch"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/kube"
)

func kubeRESTConfig(path string) (*rest.Config, error) {
	cfg, err := kube.RESTConfig(path, "")
	if err != nil {
		return nil, err
	}
	// The harness's own admin client: never the throttled party.
	cfg.QPS, cfg.Burst = -1, 0
	return cfg, nil
}

func kubeClients(cfg *rest.Config) (*kube.Clients, error) { return kube.NewClients(cfg) }

// NodeName is the name of simulated node i.
func NodeName(i int) string { return fmt.Sprintf("kwok-node-%d", i) }

// GPUResource is the extended resource name of NVIDIA GPUs.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// createNodes creates the simulated nodes (kwok manages nodes annotated kwok.x-k8s.io/node=fake)
// and waits, on a watch, until all of them are Ready.
func createNodes(ctx context.Context, c *kube.Clients, n config.Nodes, timeout time.Duration) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(n.CPU),
		corev1.ResourceMemory: resource.MustParse(n.Memory),
		corev1.ResourcePods:   *resource.NewQuantity(int64(n.Pods), resource.DecimalSI),
	}
	if n.GPUs > 0 {
		capacity[GPUResource] = *resource.NewQuantity(int64(n.GPUs), resource.DecimalSI)
	}
	for i := 0; i < n.Count; i++ {
		labels := map[string]string{
			"type":                   "kwok",
			"kubernetes.io/hostname": NodeName(i),
			"kubernetes.io/os":       "linux",
			"kubernetes.io/arch":     "amd64",
			kube.ManagedByKey:        kube.ManagedByValue,
		}
		for _, kv := range n.Labels {
			k, v, _ := strings.Cut(kv, "=")
			labels[k] = v
		}
		cidr := fmt.Sprintf("10.%d.0.0/16", 64+i%128)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: NodeName(i), Labels: labels,
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
			// Each node gets its own pod CIDR so kwok never runs out of pod IPs in a 300+ burst.
			Spec:   corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr}},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}
		if _, err := c.Typed.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", node.Name, err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ready := map[string]bool{}
	lw := cache.NewListWatchFromClient(c.Typed.CoreV1().RESTClient(), "nodes", "", fields.Everything())
	_, err := toolswatch.UntilWithSync(wctx, lw, &corev1.Node{}, nil, func(ev watch.Event) (bool, error) {
		node, ok := ev.Object.(*corev1.Node)
		if !ok {
			return false, nil
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				ready[node.Name] = cond.Status == corev1.ConditionTrue
			}
		}
		count := 0
		for _, r := range ready {
			if r {
				count++
			}
		}
		return count >= n.Count, nil
	})
	if err != nil {
		return fmt.Errorf("simulated nodes not Ready within %s: %w", timeout, err)
	}
	return nil
}

// clients connects to the lab as its admin.
func (s *State) clients() (*kube.Clients, error) {
	if s.Kubeconfig == "" {
		// An empty path would load the user's default kubeconfig: another cluster.
		return nil, errors.New("lab state has no kubeconfig")
	}
	rc, err := kubeRESTConfig(s.Kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubeClients(rc)
}
