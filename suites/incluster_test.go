package suites

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/loadgen"
)

// The runner may create, list and watch SandboxClaims in its cell's namespace, nothing more.
func TestRunnerRBACIsLeast(t *testing.T) {
	objs := RunnerRBAC("ns1", map[string]string{"k": "v"})
	kinds := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		kinds[o.GetKind()] = o
		if o.GetNamespace() != "ns1" || o.GetLabels()["k"] != "v" {
			t.Errorf("%s: namespace %q labels %v", o.GetKind(), o.GetNamespace(), o.GetLabels())
		}
	}
	if len(kinds) != 3 || kinds["ClusterRole"] != nil {
		t.Fatalf("kinds %v", kinds)
	}
	rules, _, _ := unstructured.NestedSlice(kinds["Role"].Object, "rules")
	if len(rules) != 1 {
		t.Fatalf("rules %v", rules)
	}
	r := rules[0].(map[string]any)
	if !reflect.DeepEqual(r["resources"], []any{"sandboxclaims"}) || !reflect.DeepEqual(r["verbs"], []any{"create", "list", "watch"}) {
		t.Errorf("rule %v", r)
	}
}

// The runner is an Indexed Job of N pods (completions = parallelism = N), never retried, each
// with the whole spec; several pods prefer distinct nodes.
func TestRunnerJob(t *testing.T) {
	for _, c := range []struct{ shards, want int }{{0, 1}, {1, 1}, {3, 3}, {64, 64}} {
		spec := loadgen.AgentSpec{Namespace: "ns1", Pool: "p", T0: time.Unix(1000, 0).UTC(), Schedule: loadgen.Burst(3), ClaimTimeout: time.Minute, Shards: c.shards}
		job, err := runnerJob("ns1", "img:1", spec, map[string]string{"k": "v"}, 2*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if job.GetName() != RunnerName {
			t.Errorf("shards %d: Job %s", c.shards, job.GetName())
		}
		pod, _, _ := unstructured.NestedMap(job.Object, "spec", "template", "spec")
		if pod["serviceAccountName"] != RunnerName || pod["restartPolicy"] != "Never" {
			t.Errorf("pod spec %v", pod)
		}
		if b, _, _ := unstructured.NestedInt64(job.Object, "spec", "backoffLimit"); b != 0 {
			t.Errorf("backoffLimit %d: a failed burst must not be fired again", b)
		}
		mode, _, _ := unstructured.NestedString(job.Object, "spec", "completionMode")
		completions, _, _ := unstructured.NestedInt64(job.Object, "spec", "completions")
		parallelism, _, _ := unstructured.NestedInt64(job.Object, "spec", "parallelism")
		if mode != "Indexed" || completions != int64(c.want) || parallelism != int64(c.want) {
			t.Errorf("shards %d: completionMode %q completions %d parallelism %d, want Indexed %d %d", c.shards, mode, completions, parallelism, c.want, c.want)
		}
		if _, spread := pod["affinity"]; spread != (c.want > 1) {
			t.Errorf("shards %d: affinity %v", c.shards, pod["affinity"])
		}
		ctr := pod["containers"].([]any)[0].(map[string]any)
		args := ctr["args"].([]any)
		var back loadgen.AgentSpec
		if len(args) != 3 || args[0] != "agent" || json.Unmarshal([]byte(args[2].(string)), &back) != nil || !back.T0.Equal(spec.T0) || len(back.Schedule) != 3 || back.Shards != c.shards {
			t.Errorf("args %v", args)
		}
	}
}

// agentLog is what shard k's agent prints for spec: every claim of its share sent lag after its
// planned time, Ready 100 ms later, under the names and indices the agent uses.
func agentLog(t *testing.T, spec loadgen.AgentSpec, k int, lag time.Duration, clock loadgen.ClockEstimate) string {
	t.Helper()
	p, err := spec.Plan(k)
	if err != nil {
		t.Fatal(err)
	}
	g := &loadgen.Generator{Prefix: p.Prefix}
	var recs []loadgen.Record
	for j, i := range p.Claims {
		planned := spec.T0.Add(p.Schedule[j])
		recs = append(recs, loadgen.Record{Name: g.ClaimName(j), Index: i, Planned: planned, Intent: planned.Add(lag),
			Acked: planned.Add(lag + 5*time.Millisecond), Ready: planned.Add(lag + 100*time.Millisecond)})
	}
	var buf bytes.Buffer
	buf.WriteString("I1201 a client-go line\n")
	if err := loadgen.WriteShardOutput(&buf, loadgen.ShardHeader{Index: k, Shards: p.Shards, Claims: len(p.Claims), Started: spec.T0.Add(-5 * time.Second), Clock: clock}, recs); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func okClock(off time.Duration) loadgen.ClockEstimate {
	// server - shard = -off: a shard off ahead of the server.
	return loadgen.ClockEstimate{Lo: -off - time.Millisecond, Hi: -off + time.Millisecond, Probes: 30, MinRTT: 500 * time.Microsecond}
}

func shardLogs(t *testing.T, spec loadgen.AgentSpec) []shardLog {
	var logs []shardLog
	for k := 0; k < max(spec.Shards, 1); k++ {
		logs = append(logs, shardLog{Index: k, Pod: fmt.Sprintf("brakebench-runner-%d-x", k), Node: "n", Phase: corev1.PodSucceeded,
			Log: agentLog(t, spec, k, time.Duration(k+1)*time.Millisecond, okClock(0))})
	}
	return logs
}

// N shards' logs merge into the one burst a single runner reports: every claim once, in schedule
// order, with its Ready time, and each shard's send lag.
func TestMergeShards(t *testing.T) {
	t0 := time.Unix(5000, 0).UTC()
	for _, n := range []int{1, 3, 7} {
		spec := loadgen.AgentSpec{Namespace: "ns", Prefix: "claim-", T0: t0, Schedule: loadgen.Steps([]float64{10, 20}, time.Second), Shards: n}
		m, err := mergeShards(spec, shardLogs(t, spec))
		if err != nil {
			t.Fatalf("%d shards: %v", n, err)
		}
		if len(m.sent) != len(spec.Schedule) || len(m.ready) != len(spec.Schedule) || len(m.shards) != n {
			t.Fatalf("%d shards: %d sent, %d ready, %d shard records", n, len(m.sent), len(m.ready), len(m.shards))
		}
		names := map[string]bool{}
		for i, s := range m.sent {
			if s.Index != i || !s.Planned.Equal(t0.Add(spec.Schedule[i])) || names[s.Name] {
				t.Fatalf("%d shards: claim %d is %+v", n, i, s)
			}
			names[s.Name] = true
			if got := m.ready[s.Name].Sub(s.Intent); got != 100*time.Millisecond {
				t.Errorf("%d shards: claim %d Ready %s after intent", n, i, got)
			}
		}
		if n == 1 && m.sent[3].Name != "claim-00003" {
			t.Errorf("one shard renamed the claims: %s", m.sent[3].Name)
		}
		total := 0
		for k, sh := range m.shards {
			total += sh.SendLagMS.N
			if sh.Index != k || sh.SendLagMS.P99 != float64(k+1) || sh.Claims != sh.SendLagMS.N || !sh.StartedAt.Equal(t0.Add(-5*time.Second)) {
				t.Errorf("%d shards: shard record %+v", n, sh)
			}
		}
		if total != len(spec.Schedule) {
			t.Errorf("%d shards: send lag counts %d claims of %d", n, total, len(spec.Schedule))
		}
	}
}

// A shard that failed, printed garbage, was cut short, reported what was not its own or is
// missing makes a clear error naming it, never a crash.
func TestMergeShardsRefusesBadShards(t *testing.T) {
	t0 := time.Unix(5000, 0).UTC()
	spec := loadgen.AgentSpec{Namespace: "ns", Prefix: "claim-", T0: t0, Schedule: loadgen.Burst(12), Shards: 3}
	other := spec
	other.T0 = t0.Add(time.Second)
	cases := []struct {
		name   string
		change func(logs []shardLog) []shardLog
		want   string
	}{
		{"a shard failed", func(l []shardLog) []shardLog {
			l[1].Phase, l[1].Log = corev1.PodFailed, "Error: started 2.1s after T0 2026-12-01T10:00:00Z: give the runner more time to start\n"
			return l
		}, "shard 1 (pod brakebench-runner-1-x) Failed: Error: started 2.1s after T0"},
		{"a failed shard's log unreadable", func(l []shardLog) []shardLog {
			l[1].Phase, l[1].Err = corev1.PodFailed, fmt.Errorf("container not found")
			return l
		}, "shard 1 (pod brakebench-runner-1-x) Failed, and its log could not be read: container not found"},
		{"a shard still running", func(l []shardLog) []shardLog { l[2].Phase, l[2].Log = corev1.PodRunning, ""; return l }, "shard 2 (pod brakebench-runner-2-x) still Running when the Job failed"},
		{"garbage", func(l []shardLog) []shardLog { l[2].Log = "{not json\ndone\n"; return l }, "shard 2 (pod brakebench-runner-2-x): runner output line 1"},
		{"cut short", func(l []shardLog) []shardLog { l[0].Log = strings.TrimSuffix(l[0].Log, "done\n"); return l }, `shard 0 (pod brakebench-runner-0-x): runner output ends after 4 records without its final "done" line`},
		{"empty log", func(l []shardLog) []shardLog { l[0].Log = ""; return l }, "shard 0 (pod brakebench-runner-0-x): runner output ends after 0 records"},
		{"a missing shard", func(l []shardLog) []shardLog { return l[:2] }, "shard 2: no pod"},
		{"two pods of one shard", func(l []shardLog) []shardLog { l[2].Index = 1; return l }, "shard 1 is not one of 3, or has two pods"},
		{"a shard out of range", func(l []shardLog) []shardLog { l[2].Index = 7; return l }, "shard 7 is not one of 3"},
		{"another shard's log", func(l []shardLog) []shardLog { l[1].Log = agentLog(t, spec, 0, 0, okClock(0)); return l }, "shard 1 (pod brakebench-runner-1-x) calls itself shard 0 of 3"},
		{"a different T0", func(l []shardLog) []shardLog { l[1].Log = agentLog(t, other, 1, 0, okClock(0)); return l }, "shard 1 (pod brakebench-runner-1-x): claim 1 planned at"},
		{"a different split", func(l []shardLog) []shardLog {
			two := spec
			two.Shards = 2
			l[0].Log = agentLog(t, two, 0, 0, okClock(0))
			return l
		}, "shard 0 (pod brakebench-runner-0-x) calls itself shard 0 of 2 with 6 claims, not shard 0 of 3 with 4"},
		{"a claim dropped", func(l []shardLog) []shardLog {
			lines := strings.Split(l[2].Log, "\n")
			l[2].Log = strings.Join(append(lines[:2:2], lines[3:]...), "\n")
			return l
		}, "shard 2 (pod brakebench-runner-2-x) reported 3 claims of its 4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := mergeShards(spec, c.change(shardLogs(t, spec)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if m.sent != nil {
				t.Errorf("a refused merge returned %d claims", len(m.sent))
			}
		})
	}
	// Random bytes, and records mangled at random, are errors, never a panic.
	rng := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < 300; i++ {
		logs := shardLogs(t, spec)
		b := []byte(logs[i%3].Log)
		for j := 0; j < 1+rng.IntN(8); j++ {
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		}
		if i%10 == 0 {
			b = b[:rng.IntN(len(b))]
		}
		logs[i%3].Log = string(b)
		_, _ = mergeShards(spec, logs)
	}
}

func hdr(clock loadgen.ClockEstimate) *loadgen.ShardHeader { return &loadgen.ShardHeader{Clock: clock} }

// The clock rule: shards certainly further apart than the bound are refused, an estimate that
// cannot rule it out is warned about, and so is a shard without an estimate or far from this
// process's clock.
func TestCheckShardClocks(t *testing.T) {
	bound := 50 * time.Millisecond
	wide := func(off, half time.Duration) loadgen.ClockEstimate {
		return loadgen.ClockEstimate{Lo: -off - half, Hi: -off + half, Probes: 3, MinRTT: time.Millisecond}
	}
	local := okClock(0)
	cases := []struct {
		name       string
		headers    []*loadgen.ShardHeader
		local      loadgen.ClockEstimate
		refuse     string
		warn       string
		spreadMS   float64 // -1: none
		spreadErrs float64
	}{
		{"one shard", []*loadgen.ShardHeader{hdr(okClock(3 * time.Millisecond))}, local, "", "", 0, 0},
		{"three shards within a few ms", []*loadgen.ShardHeader{hdr(okClock(0)), hdr(okClock(2 * time.Millisecond)), hdr(okClock(-3 * time.Millisecond))}, local, "", "", 5, 2},
		{"80 ms apart", []*loadgen.ShardHeader{hdr(okClock(0)), hdr(okClock(80 * time.Millisecond)), hdr(okClock(10 * time.Millisecond))}, local,
			"the runner shards' clocks disagree by 78.0 to 82.0 ms, more than loadgen.maxClockSkew 50ms (shard 0 +0.0±1.0 ms, shard 1 +80.0±1.0 ms, shard 2 +10.0±1.0 ms against the API server)", "", 80, 2},
		{"just past the bound, certainly", []*loadgen.ShardHeader{hdr(okClock(0)), hdr(okClock(53 * time.Millisecond))}, local, "disagree by 51.0 to 55.0 ms", "", 53, 2},
		{"40 ms apart, too wide to tell", []*loadgen.ShardHeader{hdr(wide(0, 10*time.Millisecond)), hdr(wide(40*time.Millisecond, 10*time.Millisecond))}, local,
			"", "the runner shards' clocks disagree by 20.0 to 60.0 ms, which may be more than loadgen.maxClockSkew 50ms", 40, 20},
		{"a shard without an estimate", []*loadgen.ShardHeader{hdr(okClock(0)), hdr(loadgen.ClockEstimate{Err: "clock probe: connection refused"})}, local,
			"", "shard 1 could not estimate its clock (clock probe: connection refused): the shards' clocks are not known to agree within 50ms", -1, 0},
		{"a shard that printed no header", []*loadgen.ShardHeader{hdr(okClock(0)), nil}, local, "", "shard 1 reported no clock estimate", -1, 0},
		{"both shards far from the harness", []*loadgen.ShardHeader{hdr(okClock(200 * time.Millisecond)), hdr(okClock(201 * time.Millisecond))}, local,
			"", "shard 0's clock is +198.0 to +202.0 ms from this process's, more than 50ms", 1.5, 1.5},
		{"the harness without an estimate", []*loadgen.ShardHeader{hdr(okClock(200 * time.Millisecond)), hdr(okClock(201 * time.Millisecond))}, loadgen.ClockEstimate{Err: "x"}, "", "", 1.5, 1.5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			warn, refuse := checkShardClocks(c.headers, c.local, bound)
			if (c.refuse == "") != (refuse == nil) || (refuse != nil && !strings.Contains(refuse.Error(), c.refuse)) {
				t.Errorf("refused %v, want %q", refuse, c.refuse)
			}
			if (c.warn == "") != (warn == "") || !strings.Contains(warn, c.warn) {
				t.Errorf("warning %q, want %q", warn, c.warn)
			}
			var shards []results.RunnerShard
			for k := range c.headers {
				shards = append(shards, results.RunnerShard{Index: k})
			}
			r := runnerRecord(len(c.headers), merged{headers: c.headers, shards: shards}, c.local, bound)
			switch {
			case c.spreadMS < 0 && r.ClockSpreadMS != nil:
				t.Errorf("spread %v without every shard's estimate", *r.ClockSpreadMS)
			case c.spreadMS >= 0 && (r.ClockSpreadMS == nil || *r.ClockSpreadMS != c.spreadMS || *r.ClockSpreadErrorMS != c.spreadErrs):
				t.Errorf("spread %v ± %v, want %v ± %v", deref(r.ClockSpreadMS), deref(r.ClockSpreadErrorMS), c.spreadMS, c.spreadErrs)
			}
			if r.MaxClockSkewMS != 50 {
				t.Errorf("bound %v ms", r.MaxClockSkewMS)
			}
		})
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// Each shard's clock is recorded against the API server's and this process's, with the bound.
func TestRunnerRecordOffsets(t *testing.T) {
	headers := []*loadgen.ShardHeader{hdr(okClock(4 * time.Millisecond)), hdr(loadgen.ClockEstimate{Err: "x"})}
	local := loadgen.ClockEstimate{Lo: -3 * time.Millisecond, Hi: -1 * time.Millisecond, Probes: 20} // server 2 ms behind this process
	r := runnerRecord(2, merged{headers: headers, shards: []results.RunnerShard{{Index: 0}, {Index: 1}}}, local, 50*time.Millisecond)
	s0, s1 := r.PerShard[0], r.PerShard[1]
	if deref(s0.ServerOffsetMS) != 4.0 || deref(s0.ServerErrorMS) != 1.0 || deref(s0.ClockOffsetMS) != 2.0 || deref(s0.ClockErrorMS) != 2.0 {
		t.Errorf("shard 0: server %v±%v, harness %v±%v", deref(s0.ServerOffsetMS), deref(s0.ServerErrorMS), deref(s0.ClockOffsetMS), deref(s0.ClockErrorMS))
	}
	if s1.ServerOffsetMS != nil || s1.ClockOffsetMS != nil || r.ClockSpreadMS != nil {
		t.Errorf("a shard without an estimate has offsets: %+v, spread %v", s1, r.ClockSpreadMS)
	}
}

func runnerPod(name string, index int, phase corev1.PodPhase, created time.Time) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(created),
		Labels: map[string]string{"job-name": RunnerName, batchv1.JobCompletionIndexAnnotation: fmt.Sprint(index)}},
		Status: corev1.PodStatus{Phase: phase}}
}

// The harness waits for every shard's pod, or for the first that failed, and times out naming
// the shards still going.
func TestWaitRunnerPods(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cases := []struct {
		name    string
		pods    []*corev1.Pod
		shards  int
		want    []string
		wantErr string
	}{
		{"one pod (no index label needed)", []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", Labels: map[string]string{"job-name": RunnerName}}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}}, 1, []string{"r"}, ""},
		{"three finished", []*corev1.Pod{runnerPod("r2", 2, corev1.PodSucceeded, t0), runnerPod("r0", 0, corev1.PodSucceeded, t0), runnerPod("r1", 1, corev1.PodSucceeded, t0)}, 3, []string{"r0", "r1", "r2"}, ""},
		{"one failed, one running", []*corev1.Pod{runnerPod("r0", 0, corev1.PodSucceeded, t0), runnerPod("r1", 1, corev1.PodFailed, t0), runnerPod("r2", 2, corev1.PodRunning, t0)}, 3, []string{"r0", "r1", "r2"}, ""},
		{"the latest pod of a shard", []*corev1.Pod{runnerPod("old", 0, corev1.PodSucceeded, t0), runnerPod("new", 0, corev1.PodSucceeded, t0.Add(time.Second)), runnerPod("other", 1, corev1.PodSucceeded, t0)}, 2, []string{"new", "other"}, ""},
		{"still running", []*corev1.Pod{runnerPod("r0", 0, corev1.PodSucceeded, t0), runnerPod("r1", 1, corev1.PodRunning, t0)}, 3, nil, "shard 1 Running, shard 2 has no pod"},
		{"another Job's pod", []*corev1.Pod{runnerPod("r0", 0, corev1.PodSucceeded, t0), runnerPod("stray", 5, corev1.PodFailed, t0)}, 2, nil, "shard 1 has no pod"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs := fake.NewClientset()
			for _, p := range c.pods {
				if _, err := cs.CoreV1().Pods("ns").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			pods, err := waitRunnerPods(context.Background(), cs.CoreV1().Pods("ns"), c.shards, 200*time.Millisecond)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range pods {
				names = append(names, p.Name)
			}
			if !reflect.DeepEqual(names, c.want) {
				t.Errorf("pods %v, want %v", names, c.want)
			}
		})
	}
}
