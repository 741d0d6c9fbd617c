package suites

import (
	"context"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/brakebench/brakebench/internal/brakes"
	"github.com/brakebench/brakebench/internal/karpool"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/nodechain"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/stats"
	"github.com/brakebench/brakebench/internal/sut/karpenter"
)

// autoscalePool names the pool-autoscaling suite's Karpenter NodePool (one run at a time on a
// lab) and the taint that keeps every other pod off it.
const (
	autoscalePool  = "bb-autoscale"
	autoscaleTaint = "brakebench.io/autoscale"
)

// startAutoscalePool starts the lab's Karpenter (the CapacityBuffer gate on, for the
// capacity-buffer brake) and the suite's NodePool, empty nodes consolidated away after
// poolAutoscaling.consolidateAfter (WhenEmpty: Karpenter never moves a pod the HPA did not
// remove).
func startAutoscalePool(ctx context.Context, env *Env) (*provider.Karpenter, error) {
	a := env.Config.Autoscale
	labels := map[string]string{kube.ManagedByKey: kube.ManagedByValue, kube.RunIDKey: env.RunID}
	pool := karpenter.PoolSpec{Name: autoscalePool, RegistrationDelay: a.RegistrationDelay, Taint: autoscaleTaint, ConsolidateAfter: a.ConsolidateAfter}
	k, err := karpool.Start(ctx, env.Cluster, env.Clients, env.Journal, env.Reverts, provider.KarpenterOptions{CapacityBuffer: true, TolerationScale: 1}, pool, labels)
	if err != nil {
		return nil, err
	}
	env.Progress.Printf("Karpenter %s: NodePool %s (8-GPU nodes, %d GPU(s) a sandbox, empty nodes consolidated after %s)", k.Version, autoscalePool, a.GPUsPerSandbox, a.ConsolidateAfter)
	if env.Versions != nil {
		env.Versions["karpenter"] = k.Version
	}
	return k, nil
}

// headroomOf is the CapacityBuffer chunks a cell's brakes ask for (0 without the
// capacity-buffer brake).
func headroomOf(br results.Brake) int {
	n := 0
	for _, p := range brakes.FromResult(br).Parts {
		if _, ok := p.Brake.(brakes.PodShaped); ok {
			n, _ = strconv.Atoi(p.Value) // a value the brake's own Setting checked
		}
	}
	return n
}

// nodesFor is how many nodes of the lab's 8-GPU type hold pods of gpus each.
func nodesFor(pods, gpus int) int {
	per := 8 / gpus
	return (pods + per - 1) / per
}

// nodeSteps measures each step's node chain: the pods created during the step (from the step's
// start to the next one's; the last step's to lastEnd where that is later, the tail the suite
// watched for consolidation) traced to their node and its NodeClaim, and what the NodePool did.
func nodeSteps(tl nodechain.Timeline, t0 time.Time, step time.Duration, n int, lastEnd time.Time) []*results.AutoscaleNodeStep {
	claimOf := map[string]nodechain.ClaimTimes{}
	for _, c := range tl.Claims {
		if c.Node != "" {
			claimOf[c.Node] = c
		}
	}
	med := func(xs []float64) *float64 {
		if len(xs) == 0 {
			return nil
		}
		v := stats.Median(xs)
		return &v
	}
	out := make([]*results.AutoscaleNodeStep, n)
	for i := range out {
		from, to := t0.Add(time.Duration(i)*step), t0.Add(time.Duration(i+1)*step)
		if i == n-1 && lastEnd.After(to) {
			to = lastEnd
		}
		in := func(t time.Time) bool { return !t.IsZero() && !t.Before(from) && t.Before(to) }
		s := &results.AutoscaleNodeStep{}
		var claimS, nodeS, podS []float64
		for _, p := range tl.Pods {
			if !in(p.Created) || p.Ready.IsZero() || p.Node == "" {
				continue
			}
			nd, ok := tl.Nodes[p.Node]
			if !ok {
				continue
			}
			s.Pods++
			podS = append(podS, p.Ready.Sub(p.Created).Seconds())
			if !nd.Ready.IsZero() && nd.Ready.Before(p.Created) {
				s.OnExistingNodes++
				continue
			}
			if c, ok := claimOf[p.Node]; ok {
				claimS = append(claimS, c.Created.Sub(p.Created).Seconds())
			}
			if !nd.Ready.IsZero() {
				nodeS = append(nodeS, nd.Ready.Sub(p.Created).Seconds())
			}
		}
		s.NodeClaimS, s.NodeReadyS, s.PodReadyS = med(claimS), med(nodeS), med(podS)
		for _, c := range tl.Claims {
			if in(c.Created) {
				s.ClaimsCreated++
			}
		}
		var last time.Time
		for _, nd := range tl.Nodes {
			if in(nd.Deleted) {
				s.NodesDeleted++
				if nd.Deleted.After(last) {
					last = nd.Deleted
				}
			}
			if !nd.Ready.IsZero() && nd.Ready.Before(to) && (nd.Deleted.IsZero() || !nd.Deleted.Before(to)) {
				s.ReadyNodes++
			}
		}
		if !last.IsZero() {
			v := last.Sub(from).Seconds()
			s.ConsolidatedS = &v
		}
		out[i] = s
	}
	return out
}

// removeEmptyPoolNodes deletes the NodeClaims of the pool's Ready nodes that run no pod (the
// pool's taint keeps every pod but the suite's off them), and returns how many.
func removeEmptyPoolNodes(ctx context.Context, c *kube.Clients, tl nodechain.Timeline) (int, error) {
	n := 0
	for _, cl := range tl.Claims {
		if cl.Node == "" || !cl.Deleting.IsZero() {
			continue
		}
		pods, err := c.Typed.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + cl.Node})
		if err != nil {
			return n, fmt.Errorf("list pods on %s: %w", cl.Node, err)
		}
		busy := false
		for _, p := range pods.Items {
			busy = busy || p.DeletionTimestamp == nil
		}
		if busy {
			continue
		}
		if err := c.Dynamic.Resource(karpenter.NodeClaimGVR).Delete(ctx, cl.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return n, fmt.Errorf("delete NodeClaim %s: %w", cl.Name, err)
		}
		n++
	}
	return n, nil
}

// settleNodes watches the pool after the profile's last step until its Ready nodes are no more
// than its Ready pods and headroom need (the scale-down's empty nodes consolidated away), for at
// most timeout, and records in nodes how long it watched and whether the pool got there.
// Karpenter's consolidation of an emptied node took 21-29 s on the lab with consolidateAfter 5 s:
// about a short step, so a step's end alone would cut the measurement at random.
func settleNodes(ctx context.Context, tracker *nodechain.Tracker, nodes *results.AutoscaleNodes, gpus int, timeout time.Duration) {
	start := time.Now()
	_, err := tracker.WaitFor(ctx, "the pool's nodes consolidated to what its pods and headroom need", timeout, func(tl nodechain.Timeline) bool {
		claims, ready, pods := tl.Live()
		need := nodesFor(pods+nodes.Headroom, gpus)
		return ready <= need && claims <= need
	})
	nodes.TailS, nodes.Settled = time.Since(start).Seconds(), err == nil
}
