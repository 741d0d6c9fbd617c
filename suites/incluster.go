package suites

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/loadgen"
)

// RunnerName names the in-cluster runner's Job, ServiceAccount, Role and RoleBinding in a cell's
// namespace (deleted with it).
const RunnerName = "brakebench-runner"

// RunnerRBAC is the least the in-cluster runner needs: create SandboxClaims (the burst) and list
// and watch them (when each turns Ready), in the cell's namespace only.
func RunnerRBAC(ns string, labels map[string]string) []*unstructured.Unstructured {
	meta := func() map[string]any {
		l := map[string]any{}
		for k, v := range labels {
			l[k] = v
		}
		return map[string]any{"name": RunnerName, "namespace": ns, "labels": l}
	}
	return []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta()}},
		{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta(),
			"rules": []any{map[string]any{"apiGroups": []any{"extensions.agents.x-k8s.io"}, "resources": []any{"sandboxclaims"}, "verbs": []any{"create", "list", "watch"}}}}},
		{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta(),
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": RunnerName},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": RunnerName, "namespace": ns}}}},
	}
}

// runnerJob is the Job that runs `brakebench agent` with spec, as the runner's ServiceAccount.
func runnerJob(ns, image string, spec loadgen.AgentSpec, labels map[string]string, deadline time.Duration) (*unstructured.Unstructured, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	l := map[string]any{}
	for k, v := range labels {
		l[k] = v
	}
	podSpec := map[string]any{
		"serviceAccountName": RunnerName,
		"restartPolicy":      "Never",
		"containers": []any{map[string]any{
			"name": "runner", "image": image,
			"args": []any{"agent", "--spec", string(raw)},
		}},
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": RunnerName, "namespace": ns, "labels": l},
		"spec": map[string]any{
			"backoffLimit": int64(0), "activeDeadlineSeconds": int64(deadline.Seconds()),
			"template": map[string]any{"metadata": map[string]any{"labels": l}, "spec": podSpec},
		},
	}}, nil
}

// fireInCluster runs the cell's burst from a Job inside the cluster (loadgen.runner in-cluster):
// the Job fires at spec.T0, notes when each claim turns Ready on its own watch, and prints the
// records, which come back through the pod's log. It returns the burst as sent and each claim's
// Ready time as the runner saw it.
func fireInCluster(ctx context.Context, env *Env, spec loadgen.AgentSpec, labels map[string]string) ([]loadgen.Sent, map[string]time.Time, error) {
	c, ns := env.Clients, spec.Namespace
	if err := c.Apply(ctx, RunnerRBAC(ns, labels), nil); err != nil {
		return nil, nil, fmt.Errorf("runner RBAC: %w", err)
	}
	deadline := time.Until(spec.T0) + spec.Schedule.End() + spec.ClaimTimeout + time.Minute
	job, err := runnerJob(ns, env.Config.Loadgen.RunnerImage, spec, labels, deadline)
	if err != nil {
		return nil, nil, err
	}
	if p, ok := env.Cluster.(provider.PodPlacer); ok {
		podSpec, _, _ := unstructured.NestedMap(job.Object, "spec", "template", "spec")
		if err := p.PlacePod(podSpec); err != nil {
			return nil, nil, err
		}
		_ = unstructured.SetNestedMap(job.Object, podSpec, "spec", "template", "spec")
	}
	if err := c.Apply(ctx, []*unstructured.Unstructured{job}, nil); err != nil {
		return nil, nil, fmt.Errorf("runner Job: %w", err)
	}
	pod, err := waitRunnerPod(ctx, env, ns, deadline+time.Minute)
	if err != nil {
		return nil, nil, err
	}
	logs, err := c.Typed.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).Stream(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("runner log: %w", err)
	}
	defer func() { _ = logs.Close() }()
	raw, err := io.ReadAll(io.LimitReader(logs, 256<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("runner log: %w", err)
	}
	if pod.Status.Phase != corev1.PodSucceeded {
		return nil, nil, fmt.Errorf("runner pod %s %s: %s", pod.Name, pod.Status.Phase, lastLines(string(raw), 5))
	}
	recs, err := loadgen.ReadRecords(strings.NewReader(string(raw)))
	if err != nil {
		return nil, nil, err
	}
	sent := make([]loadgen.Sent, 0, len(recs))
	ready := map[string]time.Time{}
	for _, r := range recs {
		sent = append(sent, r.Sent())
		if !r.Ready.IsZero() {
			ready[r.Name] = r.Ready
		}
	}
	if len(sent) != len(spec.Schedule) {
		return nil, nil, fmt.Errorf("runner reported %d claims of %d", len(sent), len(spec.Schedule))
	}
	return sent, ready, nil
}

// waitRunnerPod waits, on a watch, until the runner Job's pod has finished.
func waitRunnerPod(ctx context.Context, env *Env, ns string, timeout time.Duration) (*corev1.Pod, error) {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pods := env.Clients.Typed.CoreV1().Pods(ns)
	sel := "job-name=" + RunnerName
	var done *corev1.Pod
	err := kube.UntilList(wctx,
		func(ctx context.Context) (runtime.Object, error) {
			return pods.List(ctx, metav1.ListOptions{LabelSelector: sel})
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return pods.Watch(ctx, o)
		},
		func(obj runtime.Object) bool {
			for _, p := range obj.(*corev1.PodList).Items {
				if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
					done = p.DeepCopy()
					return true
				}
			}
			return false
		})
	if err != nil {
		return nil, fmt.Errorf("in-cluster runner did not finish within %s: %w", timeout.Round(time.Second), err)
	}
	return done, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
