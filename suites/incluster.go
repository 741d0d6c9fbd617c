package suites

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/stats"
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

// runnerJob is the runner's Indexed Job: spec.Shards pods (at least one; completions =
// parallelism) run `brakebench agent` with spec as the runner's ServiceAccount, each finding its
// shard in JOB_COMPLETION_INDEX. With several they prefer distinct nodes: shards on one node share
// its CPUs and network, which is what sharding is meant to spread (on the lab's single real node
// they all run there).
func runnerJob(ns, image string, spec loadgen.AgentSpec, labels map[string]string, deadline time.Duration) (*unstructured.Unstructured, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	n := int64(max(spec.Shards, 1))
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
	if n > 1 {
		podSpec["affinity"] = map[string]any{"podAntiAffinity": map[string]any{
			"preferredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{
				"weight": int64(100),
				"podAffinityTerm": map[string]any{
					"topologyKey":   "kubernetes.io/hostname",
					"labelSelector": map[string]any{"matchLabels": map[string]any{"job-name": RunnerName}},
				},
			}},
		}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": RunnerName, "namespace": ns, "labels": l},
		"spec": map[string]any{
			// backoffLimit 0: a failed shard is not fired again (its claims would be sent twice,
			// late); the Job then fails and the cell with it.
			"backoffLimit": int64(0), "activeDeadlineSeconds": int64(deadline.Seconds()),
			"completionMode": "Indexed", "completions": n, "parallelism": n,
			"template": map[string]any{"metadata": map[string]any{"labels": l}, "spec": podSpec},
		},
	}}, nil
}

// harnessClockMargin is how long before T0 the harness stops estimating its own clock: its
// probes must not add to the burst's load (on the lab it shares the CPUs with the API server).
const harnessClockMargin = 200 * time.Millisecond

// fireInClusterInto runs the cell's burst from an Indexed Job of loadgen.runnerShards pods inside
// the cluster: every pod fires its share of spec's schedule (loadgen.SplitSchedule: the i-th
// claim in time order to shard i mod N) at the shared absolute spec.T0, notes when each of its
// claims turns Ready on its own watch, and prints its records, which come back through the pods'
// logs and are merged into one burst (mergeShards). Meanwhile this process estimates its own clock
// against the API server as each shard does (loadgen.EstimateClock); the shards' clocks must agree
// within loadgen.maxClockSkew (checkShardClocks). It returns the burst as sent and each claim's
// Ready time as its shard saw it, and records in cell.Runner each shard's send lag and clock.
func fireInClusterInto(ctx context.Context, env *Env, spec loadgen.AgentSpec, labels map[string]string, cell *results.Cell) ([]loadgen.Sent, map[string]time.Time, error) {
	c, ns, lg := env.Clients, spec.Namespace, env.Config.Loadgen
	spec.Shards = max(lg.RunnerShards, 1)
	if err := c.Apply(ctx, RunnerRBAC(ns, labels), nil); err != nil {
		return nil, nil, fmt.Errorf("runner RBAC: %w", err)
	}
	deadline := time.Until(spec.T0) + spec.Schedule.End() + spec.ClaimTimeout + time.Minute
	job, err := runnerJob(ns, lg.RunnerImage, spec, labels, deadline)
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
	if spec.Shards > 1 {
		env.Progress.Printf("    in-cluster runner: %d shards (an Indexed Job), the i-th claim in time order fired by shard i mod %d", spec.Shards, spec.Shards)
	}
	local := loadgen.ClockEstimate{Err: "no REST config to probe the API server with"}
	if c.Config != nil {
		if probe, err := loadgen.DateProbe(c.Config, ns); err != nil {
			local.Err = err.Error()
		} else {
			local = loadgen.EstimateClock(ctx, probe, spec.T0.Add(-harnessClockMargin))
		}
	}
	pods, err := waitRunnerPods(ctx, c.Typed.CoreV1().Pods(ns), spec.Shards, deadline+time.Minute)
	if err != nil {
		return nil, nil, err
	}
	logs := make([]shardLog, 0, len(pods))
	for _, p := range pods {
		logs = append(logs, readShardLog(ctx, c.Typed.CoreV1().Pods(ns), p))
	}
	m, err := mergeShards(spec, logs)
	cell.Runner = runnerRecord(spec.Shards, m, local, lg.MaxClockSkew)
	if err != nil {
		return nil, nil, err
	}
	if r := cell.Runner; r.ClockSpreadMS != nil && spec.Shards > 1 {
		env.Progress.Printf("    in-cluster runner: the shards' clocks agree within %.1f ± %.1f ms (loadgen.maxClockSkew %s)", *r.ClockSpreadMS, *r.ClockSpreadErrorMS, lg.MaxClockSkew)
	}
	warn, refuse := checkShardClocks(m.headers, local, lg.MaxClockSkew)
	if warn != "" {
		cell.Runner.ClockWarning = warn
		env.Progress.Printf("    in-cluster runner: %s", warn)
	}
	if refuse != nil {
		return nil, nil, refuse
	}
	return m.sent, m.ready, nil
}

// waitRunnerPods waits, on a watch, until every shard's pod (by completion index) has finished,
// or until one has failed (the Job, whose backoffLimit is 0, then fails as a whole), and returns
// the pods it saw, one per shard, the latest of each.
func waitRunnerPods(ctx context.Context, pods corev1client.PodInterface, shards int, timeout time.Duration) ([]corev1.Pod, error) {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sel := "job-name=" + RunnerName
	var seen map[int]corev1.Pod
	err := kube.UntilList(wctx,
		func(ctx context.Context) (runtime.Object, error) {
			return pods.List(ctx, metav1.ListOptions{LabelSelector: sel})
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return pods.Watch(ctx, o)
		},
		func(obj runtime.Object) bool {
			seen = map[int]corev1.Pod{}
			for _, p := range obj.(*corev1.PodList).Items {
				i, ok := completionIndex(p, shards)
				if !ok {
					continue
				}
				if prev, dup := seen[i]; !dup || prev.CreationTimestamp.Before(&p.CreationTimestamp) {
					seen[i] = p
				}
			}
			done := 0
			for _, p := range seen {
				switch p.Status.Phase {
				case corev1.PodFailed:
					return true
				case corev1.PodSucceeded:
					done++
				}
			}
			return done == shards
		})
	if err != nil {
		var waiting []string
		for i := 0; i < shards; i++ {
			if p, ok := seen[i]; !ok {
				waiting = append(waiting, fmt.Sprintf("shard %d has no pod", i))
			} else if p.Status.Phase != corev1.PodSucceeded {
				waiting = append(waiting, fmt.Sprintf("shard %d %s", i, p.Status.Phase))
			}
		}
		return nil, fmt.Errorf("in-cluster runner did not finish within %s (%s): %w", timeout.Round(time.Second), strings.Join(waiting, ", "), err)
	}
	out := make([]corev1.Pod, 0, len(seen))
	for i := 0; i < shards; i++ {
		if p, ok := seen[i]; ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// completionIndex is the shard an Indexed Job's pod runs (its completion-index label, or the
// annotation older API servers set); a pod without one is shard 0 of a one-pod runner.
func completionIndex(p corev1.Pod, shards int) (int, bool) {
	v, ok := p.Labels[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		v, ok = p.Annotations[batchv1.JobCompletionIndexAnnotation]
	}
	if !ok {
		return 0, shards == 1
	}
	i, err := strconv.Atoi(v)
	return i, err == nil && i >= 0 && i < shards
}

// shardLog is one runner pod as it ended: its shard, phase and log.
type shardLog struct {
	Index     int
	Pod, Node string
	Phase     corev1.PodPhase
	Log       string
	Err       error // reading the log failed
}

func readShardLog(ctx context.Context, pods corev1client.PodInterface, p corev1.Pod) shardLog {
	i, _ := completionIndex(p, math.MaxInt)
	l := shardLog{Index: i, Pod: p.Name, Node: p.Spec.NodeName, Phase: p.Status.Phase}
	if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
		return l // still running when another shard failed: nothing to read yet
	}
	stream, err := pods.GetLogs(p.Name, &corev1.PodLogOptions{}).Stream(ctx)
	if err != nil {
		l.Err = err
		return l
	}
	defer func() { _ = stream.Close() }()
	raw, err := io.ReadAll(io.LimitReader(stream, 256<<20))
	l.Log, l.Err = string(raw), err
	return l
}

// merged is the shards' records as one burst: the claims as sent in schedule order, each
// claim's Ready time (on its shard's clock), and per shard what it said and how late it sent.
type merged struct {
	sent    []loadgen.Sent
	ready   map[string]time.Time
	headers []*loadgen.ShardHeader // by shard; nil where a shard printed none
	shards  []results.RunnerShard
}

// mergeShards checks each shard's log against its share of spec's schedule and merges them:
// every claim reported exactly once, by the shard it was dealt to, planned at the shared T0 plus
// its offset, under a name no other shard used. A shard that failed, printed no records, printed
// garbage or reported claims not its own makes it an error naming the shard (all of them, in
// shard order); the per-shard figures of the shards that could be read are returned with it.
func mergeShards(spec loadgen.AgentSpec, logs []shardLog) (merged, error) {
	n := max(spec.Shards, 1)
	parts := loadgen.SplitSchedule(spec.Schedule, n)
	m := merged{ready: map[string]time.Time{}, headers: make([]*loadgen.ShardHeader, n)}
	byShard := make([]*shardLog, n)
	var errs []string
	for i := range logs {
		l := &logs[i]
		if l.Index < 0 || l.Index >= n || byShard[l.Index] != nil {
			errs = append(errs, fmt.Sprintf("pod %s: shard %d is not one of %d, or has two pods", l.Pod, l.Index, n))
			continue
		}
		byShard[l.Index] = l
	}
	sent := make([]loadgen.Sent, len(spec.Schedule))
	have := make([]bool, len(spec.Schedule))
	owner := map[string]int{}
	for k, l := range byShard {
		if l == nil {
			errs = append(errs, fmt.Sprintf("shard %d: no pod", k))
			continue
		}
		what := fmt.Sprintf("shard %d (pod %s)", k, l.Pod)
		switch {
		case l.Phase == corev1.PodFailed && l.Err != nil:
			errs = append(errs, fmt.Sprintf("%s Failed, and its log could not be read: %v", what, l.Err))
			continue
		case l.Phase == corev1.PodFailed:
			errs = append(errs, fmt.Sprintf("%s Failed: %s", what, lastLines(l.Log, 5)))
			continue
		case l.Phase != corev1.PodSucceeded:
			errs = append(errs, fmt.Sprintf("%s still %s when the Job failed", what, l.Phase))
			continue
		case l.Err != nil:
			errs = append(errs, fmt.Sprintf("%s log: %v", what, l.Err))
			continue
		}
		out, err := loadgen.ReadShard(strings.NewReader(l.Log))
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", what, err))
			continue
		}
		if h := out.Header; h != nil {
			if h.Index != k || h.Shards != n || h.Claims != len(parts[k]) {
				errs = append(errs, fmt.Sprintf("%s calls itself shard %d of %d with %d claims, not shard %d of %d with %d", what, h.Index, h.Shards, h.Claims, k, n, len(parts[k])))
				continue
			}
			m.headers[k] = h
		}
		if len(out.Records) != len(parts[k]) {
			errs = append(errs, fmt.Sprintf("%s reported %d claims of its %d", what, len(out.Records), len(parts[k])))
			continue
		}
		mine := make(map[int]bool, len(parts[k]))
		for _, i := range parts[k] {
			mine[i] = true
		}
		var lag []float64
		bad := ""
		for _, r := range out.Records {
			switch {
			case !mine[r.Index]:
				bad = fmt.Sprintf("claim %d is not in its share", r.Index)
			case have[r.Index]:
				bad = fmt.Sprintf("claim %d reported twice", r.Index)
			case !r.Planned.Equal(spec.T0.Add(spec.Schedule[r.Index])):
				bad = fmt.Sprintf("claim %d planned at %s, not T0 + %s", r.Index, r.Planned.Format(time.RFC3339Nano), spec.Schedule[r.Index])
			case r.Name == "":
				bad = fmt.Sprintf("claim %d has no name", r.Index)
			}
			if o, dup := owner[r.Name]; bad == "" && dup {
				bad = fmt.Sprintf("claim name %s also used by shard %d", r.Name, o)
			}
			if bad != "" {
				break
			}
			owner[r.Name] = k
			have[r.Index] = true
			sent[r.Index] = r.Sent()
			if !r.Ready.IsZero() {
				m.ready[r.Name] = r.Ready
			}
			if !r.Intent.IsZero() {
				lag = append(lag, float64(r.Intent.Sub(r.Planned))/float64(time.Millisecond))
			}
		}
		if bad != "" {
			errs = append(errs, fmt.Sprintf("%s: %s", what, bad))
			continue
		}
		sh := results.RunnerShard{Index: k, Pod: l.Pod, Node: l.Node, Claims: len(parts[k]), SendLagMS: stats.Summarize(lag)}
		if out.Header != nil {
			sh.StartedAt = out.Header.Started
		}
		m.shards = append(m.shards, sh)
	}
	if len(errs) > 0 {
		return m, errors.New(strings.Join(errs, "; "))
	}
	m.sent = sent
	return m, nil
}

// runnerRecord is the cell's record of the runner: each shard's send lag and its clock against
// the API server's and this process's (local).
func runnerRecord(shards int, m merged, local loadgen.ClockEstimate, bound time.Duration) *results.Runner {
	r := &results.Runner{Shards: shards, MaxClockSkewMS: ms(bound), PerShard: m.shards}
	if r.PerShard == nil {
		r.PerShard = []results.RunnerShard{}
	}
	for i := range r.PerShard {
		sh := &r.PerShard[i]
		h := m.headers[sh.Index]
		if h == nil || !h.Clock.OK() {
			continue
		}
		// The shard's clock minus the server's is -(server - shard).
		sh.ServerOffsetMS, sh.ServerErrorMS = msPtr(-h.Clock.Offset()), msPtr(h.Clock.HalfWidth())
		if local.OK() {
			lo, hi := shardMinusLocal(h.Clock, local)
			sh.ClockOffsetMS, sh.ClockErrorMS = msPtr(lo+(hi-lo)/2), msPtr((hi-lo+1)/2)
		}
	}
	if lo, hi, ok := shardSpread(m.headers); ok {
		r.ClockSpreadMS, r.ClockSpreadErrorMS = msPtr(lo+(hi-lo)/2), msPtr((hi-lo+1)/2)
	}
	return r
}

// shardMinusLocal bounds a shard's clock minus this process's from both sides' estimates
// against the one API server: (server - local) - (server - shard).
func shardMinusLocal(shard, local loadgen.ClockEstimate) (lo, hi time.Duration) {
	return local.Lo - shard.Hi, local.Hi - shard.Lo
}

// shardSpread bounds the largest disagreement between two shards' clocks, [lo, hi]: shard k's
// clock minus the server's lies in [a_k, b_k] = [-Hi, -Lo] of its estimate, so the spread is at
// least max(a) - min(b) (0 when every interval shares a point) and at most the largest b_j - a_i
// of two different shards. 0 with one shard; false when a shard has no estimate.
func shardSpread(headers []*loadgen.ShardHeader) (lo, hi time.Duration, ok bool) {
	a := make([]time.Duration, len(headers))
	b := make([]time.Duration, len(headers))
	for k, h := range headers {
		if h == nil || !h.Clock.OK() {
			return 0, 0, false
		}
		a[k], b[k] = -h.Clock.Hi, -h.Clock.Lo
	}
	if len(headers) < 2 {
		return 0, 0, len(headers) == 1
	}
	lo = slices.Max(a) - slices.Min(b)
	for i := range a {
		for j := range b {
			if i != j {
				hi = max(hi, b[j]-a[i])
			}
		}
	}
	return max(lo, 0), hi, true
}

// checkShardClocks is the clock rule. Every shard fires at the same absolute T0 on its own clock,
// so shards whose clocks disagree fire one burst as several, offset by the disagreement; a
// claim's own latency is unaffected (its intent and Ready are on one clock). The cell is refused
// when the shards' clocks certainly disagree by more than bound (the lower end of shardSpread),
// and warned about when the estimate cannot rule it out (its upper end), when a shard has no
// estimate, or when a shard's clock is certainly more than bound from this process's (the
// harness's informers time the claims' binding, the pods and the refill, the shards the claims).
func checkShardClocks(headers []*loadgen.ShardHeader, local loadgen.ClockEstimate, bound time.Duration) (warn string, refuse error) {
	var warns []string
	if len(headers) > 1 {
		lo, hi, ok := shardSpread(headers)
		switch {
		case !ok:
			for k, h := range headers {
				if h == nil {
					warns = append(warns, fmt.Sprintf("shard %d reported no clock estimate: the shards' clocks are not known to agree within %s", k, bound))
					break
				}
				if !h.Clock.OK() {
					warns = append(warns, fmt.Sprintf("shard %d could not estimate its clock (%s): the shards' clocks are not known to agree within %s", k, h.Clock.Err, bound))
					break
				}
			}
		case lo > bound:
			return "", fmt.Errorf("the runner shards' clocks disagree by %.1f to %.1f ms, more than loadgen.maxClockSkew %s (%s): their claims were not fired at one T0; sync the nodes' clocks (NTP)",
				ms(lo), ms(hi), bound, shardOffsets(headers))
		case hi > bound:
			warns = append(warns, fmt.Sprintf("the runner shards' clocks disagree by %.1f to %.1f ms, which may be more than loadgen.maxClockSkew %s (%s): the estimate is too wide to tell",
				ms(lo), ms(hi), bound, shardOffsets(headers)))
		}
	}
	for k, h := range headers {
		if h == nil || !h.Clock.OK() || !local.OK() {
			continue
		}
		lo, hi := shardMinusLocal(h.Clock, local)
		if lo > bound || hi < -bound {
			warns = append(warns, fmt.Sprintf("shard %d's clock is %+.1f to %+.1f ms from this process's, more than %s: the claims' times (the shard's) and their binding, pods and refill (this process's) are compared across it", k, ms(lo), ms(hi), bound))
		}
	}
	return strings.Join(warns, "; "), nil
}

// shardOffsets says each shard's clock against the API server's, as "shard 0 +1.2±0.8 ms, ...".
func shardOffsets(headers []*loadgen.ShardHeader) string {
	var parts []string
	for k, h := range headers {
		if h != nil && h.Clock.OK() {
			parts = append(parts, fmt.Sprintf("shard %d %+.1f±%.1f ms", k, ms(-h.Clock.Offset()), ms(h.Clock.HalfWidth())))
		}
	}
	return strings.Join(parts, ", ") + " against the API server"
}

// msPtr is d in milliseconds, as results' optional fields hold it.
func msPtr(d time.Duration) *float64 {
	v := ms(d)
	return &v
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
