package suites

import (
	"fmt"
	"math"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/brakebench/brakebench/internal/images"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/recorder"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/scrape"
	"github.com/brakebench/brakebench/loadgen"
)

// A hand-made cell: 4 claims at T0, three warm (Ready after 100/200/300 ms), one that never gets
// Ready; 3 refill sandboxes in the 2nd second, 1 in the 3rd; the pool drops and refills at 2.5 s.
func handMadeCell(brake results.Brake) cellInput {
	t0 := time.Unix(1_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	snap := recorder.Snapshot{Claims: map[string]recorder.Claim{}, Sandboxes: map[string]recorder.Sandbox{}, Pods: map[string]recorder.Pod{}, Pools: map[string][]recorder.PoolSample{}}
	in := cellInput{t0: t0, end: at(5000), pool: "p", poolSize: 4, claimTimeout: time.Second,
		cell: results.Cell{ID: "x#1", Name: "x", Brake: brake}}
	for i := 0; i < 4; i++ {
		name := fmt.Sprintf("c%d", i)
		in.sent = append(in.sent, loadgen.Sent{Index: i, Name: name, Planned: t0, Intent: at(i), Acked: at(i + 20)})
		snap.Sandboxes["warm"+name] = recorder.Sandbox{Created: at(-10000), Observed: at(-9000), FromPool: true, LaunchType: "warm", Owner: "SandboxClaim/" + name}
		if i < 3 {
			snap.Claims[name] = recorder.Claim{Bound: at(50), Ready: at(i + 100*(i+1)), Sandbox: "warm" + name}
		} else {
			snap.Claims[name] = recorder.Claim{LastReason: "SandboxNotReady"}
		}
	}
	for i, ms := range []int{1100, 1200, 1300, 2100} {
		snap.Sandboxes[fmt.Sprintf("r%d", i)] = recorder.Sandbox{Created: at(ms), Observed: at(ms + 10), FromPool: true, LaunchType: "warm", Owner: "SandboxWarmPool/p"}
		snap.Pods[fmt.Sprintf("uid-r%d", i)] = recorder.Pod{Name: fmt.Sprintf("r%d", i), Created: at(ms), Observed: at(ms + 10), Scheduled: at(ms + 5), Ready: at(ms + 300)}
	}
	snap.Sandboxes["orphan"] = recorder.Sandbox{Created: at(-20000), Observed: at(-19000)}
	snap.Sandboxes["gone"] = recorder.Sandbox{Created: at(-20000), Observed: at(-19000), Deleted: true}
	snap.MaxPoolMembers = map[string]int{"p": 5}
	snap.Pools["p"] = []recorder.PoolSample{
		{At: at(-5000), Desired: 4, Replicas: 4, Ready: 4},
		{At: at(60), Desired: 4, Replicas: 1, Ready: 1},
		{At: at(2500), Desired: 4, Replicas: 4, Ready: 4},
	}
	in.snap = snap
	return in
}

// snapOf is the hand-made cell's snapshot, to change (its maps are the cell's).
func snapOf(in cellInput) recorder.Snapshot { return in.snap.(recorder.Snapshot) }

func TestAssembleKnownCell(t *testing.T) {
	c := assemble(handMadeCell(results.Brake{}))
	st := c.Stats
	if st.Total != 4 || st.Warm != 3 || st.Cold != 0 || st.Failed != 1 {
		t.Fatalf("counts %+v", st)
	}
	// Latencies 100, 200, 300 ms and one +Inf (the failed claim stays in the denominator).
	if st.Latency.All.P50 != 200 || !math.IsInf(st.Latency.All.P90, 1) || st.Latency.Warm.P50 != 200 || st.Latency.Warm.Max != 300 {
		t.Errorf("latency %+v warm %+v", st.Latency.All, st.Latency.Warm)
	}
	if !c.Claims[3].Failed || c.Claims[3].Reason == "" || c.Claims[3].LatencyMS != nil {
		t.Errorf("failed claim %+v", c.Claims[3])
	}
	// Refill creates: bins [0,3,1]; 1 s ceiling 3, 5 s ceiling 4/5.
	if got := c.Timeline.RefillCreates; len(got) != 3 || got[1] != 3 || got[2] != 1 {
		t.Errorf("refill timeline %v", got)
	}
	if st.Ceilings.RefillCreate1s != 3 || st.Ceilings.RefillCreate5s != 0.8 || st.Ceilings.PodSchedule1s != 3 {
		t.Errorf("ceilings %+v", st.Ceilings)
	}
	if st.RefillSeconds == nil || *st.RefillSeconds != 2.5 {
		t.Errorf("refill seconds %v", st.RefillSeconds)
	}
	if st.RefillStartSeconds == nil || math.Abs(*st.RefillStartSeconds-1.11) > 1e-9 {
		t.Errorf("refill start %v", st.RefillStartSeconds)
	}
	if st.SendLagMS.Max != 3 || st.AckMS.P50 != 20 {
		t.Errorf("lag %+v ack %+v", st.SendLagMS, st.AckMS)
	}
	if st.BrakeEngaged != nil {
		t.Error("no brake, no verdict")
	}
	cr := st.Correctness
	// 4 refill creates for 3 vacated slots; one pod per sandbox; 5 live members for 4 replicas.
	if cr.RefillCreatesPerSlot == nil || math.Abs(*cr.RefillCreatesPerSlot-4.0/3) > 1e-9 || cr.PodCreatesPerSandbox == nil || *cr.PodCreatesPerSandbox != 1 ||
		cr.PoolExcessMax != 1 || cr.Orphans != 1 || cr.DoubleBound != 0 {
		t.Errorf("correctness %+v (per slot %v, per sandbox %v)", cr, *cr.RefillCreatesPerSlot, *cr.PodCreatesPerSandbox)
	}
	// A claim that took a warm member and never turned Ready (timed out, or deleted first as a
	// ceiling probe's are) still emptied a slot: 4 refill creates for 4 slots, not over-creation.
	inBound := handMadeCell(results.Brake{})
	snapOf(inBound).Claims["c3"] = recorder.Claim{Bound: inBound.t0.Add(50 * time.Millisecond), Sandbox: "warmc3", LastReason: "SandboxNotReady"}
	if got := assemble(inBound).Stats.Correctness.RefillCreatesPerSlot; got == nil || *got != 1 {
		t.Errorf("a bound claim that failed is not counted as a slot: creates per slot %v, want 1", got)
	}
	in := handMadeCell(results.Brake{})
	c2 := snapOf(in).Claims["c1"]
	c2.Sandbox = "warmc0"
	snapOf(in).Claims["c1"] = c2
	if got := assemble(in).Stats.Correctness.DoubleBound; got != 1 {
		t.Errorf("two claims on one sandbox: double bound %d", got)
	}
}

// Over-creation through the whole cell: the fill's pool sandboxes per slot from the informers,
// and sandbox POST/DELETE requests from the API server's counters in the fill and the refill.
func TestAssembleWholeCellCorrectness(t *testing.T) {
	in := handMadeCell(results.Brake{})
	req := func(verb string, n float64) scrape.Series {
		return scrape.Series{Name: "apiserver_request_total", Type: "counter", Value: n,
			Labels: map[string]string{"resource": "sandboxes", "verb": verb, "group": "agents.x-k8s.io", "code": "201"}}
	}
	other := scrape.Series{Name: "apiserver_request_total", Type: "counter", Value: 99, Labels: map[string]string{"resource": "pods", "verb": "POST"}}
	in.fillMetrics = map[string]results.Scrape{"kube-apiserver": {Series: []scrape.Series{req("POST", 5), req("DELETE", 1), other}}}
	in.metrics = map[string]results.Scrape{"kube-apiserver": {Series: []scrape.Series{req("POST", 6), other}}}
	cr := assemble(in).Stats.Correctness
	// Pool sandboxes seen before T0: the four warm members (the orphan and the deleted one are
	// not the pool's; the refills came after T0): 4 for a pool of 4.
	if cr.FillCreatesPerSlot == nil || *cr.FillCreatesPerSlot != 1 {
		t.Errorf("fill creates per slot %v", ptrStr(cr.FillCreatesPerSlot))
	}
	if cr.FillAPICreatesPerSlot == nil || *cr.FillAPICreatesPerSlot != 1.25 || cr.FillAPIDeletes == nil || *cr.FillAPIDeletes != 1 {
		t.Errorf("fill API creates per slot %v, deletes %v", cr.FillAPICreatesPerSlot, cr.FillAPIDeletes)
	}
	// 6 POSTs after T0 for 3 warm adoptions; no DELETE counted.
	if cr.RefillAPICreatesPerSlot == nil || *cr.RefillAPICreatesPerSlot != 2 || cr.RefillAPIDeletes == nil || *cr.RefillAPIDeletes != 0 {
		t.Errorf("refill API creates per slot %v, deletes %v", cr.RefillAPICreatesPerSlot, cr.RefillAPIDeletes)
	}
	// Without the API server's counters the API figures are absent, not zero.
	in.fillMetrics, in.metrics = nil, map[string]results.Scrape{"kube-apiserver": {Error: "unreachable"}}
	if cr := assemble(in).Stats.Correctness; cr.FillAPICreatesPerSlot != nil || cr.RefillAPIDeletes != nil {
		t.Errorf("API figures without counters: %+v", cr)
	}
}

func TestBrakeEvidence(t *testing.T) {
	cases := []struct {
		name  string
		brake results.Brake
		want  bool
	}{
		{"cap of 1/s is exceeded by 3 creates in a second over 5 s? no: 0.8/s held", results.Brake{MaxRefillRate: 1}, true},
		{"cap of 0.5/s is broken by 0.8/s", results.Brake{MaxRefillRate: 0.5}, false},
		{"cap that never binds (10/s, only 4 refills) measures nothing", results.Brake{MaxRefillRate: 10}, false},
		{"delay of 1 s: first refill at 1.11 s", results.Brake{ReplenishDelay: "1s"}, true},
		{"delay of 5 s: refill started too early", results.Brake{ReplenishDelay: "5s"}, false},
	}
	for _, c := range cases {
		got := assemble(handMadeCell(c.brake)).Stats
		if got.BrakeEngaged == nil || *got.BrakeEngaged != c.want {
			t.Errorf("%s: engaged %v, want %v (%s)", c.name, got.BrakeEngaged, c.want, got.BrakeEvidence)
		}
	}
}

func ptrStr(p *float64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// The in-cluster runner's own Ready times (readyAt) replace those of the claims the recorder saw;
// a claim it did not see stays not Ready, and a seen claim missing from readyAt is not Ready.
func TestAssembleReadyAt(t *testing.T) {
	ms := func(in cellInput, v int) time.Time { return in.t0.Add(time.Duration(v) * time.Millisecond) }
	cases := []struct {
		name    string
		readyAt func(in cellInput) map[string]time.Time
		unseen  string // a claim the recorder did not see
		want    []float64
	}{
		{"none: the recorder's", func(cellInput) map[string]time.Time { return nil }, "", []float64{100, 200, 300, -1}},
		{"replaced, missing ones not Ready", func(in cellInput) map[string]time.Time {
			return map[string]time.Time{"c0": ms(in, 50), "c3": ms(in, 73)}
		}, "", []float64{50, -1, -1, 70}},
		{"an unseen claim stays not Ready", func(in cellInput) map[string]time.Time {
			return map[string]time.Time{"c0": ms(in, 50), "c3": ms(in, 73)}
		}, "c3", []float64{50, -1, -1, -1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := handMadeCell(results.Brake{})
			in.readyAt = tc.readyAt(in)
			if tc.unseen != "" {
				delete(snapOf(in).Claims, tc.unseen)
			}
			c := assemble(in)
			for i, cl := range c.Claims {
				got := -1.0
				if cl.LatencyMS != nil {
					got = *cl.LatencyMS
				}
				if got != tc.want[i] || cl.Failed != (tc.want[i] < 0) {
					t.Errorf("claim %s: latency %v (failed %v), want %v", cl.Name, got, cl.Failed, tc.want[i])
				}
			}
		})
	}
}

// Pod start steps are measured on the harness's clock for pods first seen after T0 only (the
// fill's pods are not a cold start), step by step.
func TestPodStartSteps(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	pods := map[string]recorder.Pod{
		"fill": {Observed: at(-5000), SeenScheduled: at(-4990), SeenRunning: at(-4000), SeenReady: at(-3900), Node: "real"},
		"a":    {Observed: at(100), SeenScheduled: at(110), SeenRunning: at(610), SeenReady: at(700), Node: "real"},
		"b":    {Observed: at(200), SeenScheduled: at(230), SeenRunning: at(930), SeenReady: at(1000), Node: "real"},
		"c":    {Observed: at(300), SeenScheduled: at(320), Node: "real"}, // never started
	}
	ps := podStart(recorder.Snapshot{Pods: pods}, t0)
	if ps == nil || ps.Node != "real" {
		t.Fatalf("podStart = %+v", ps)
	}
	if ps.Schedule.N != 3 || ps.Run.N != 2 || ps.Ready.N != 2 || ps.CreateToReady.N != 2 {
		t.Fatalf("counts: schedule %d run %d ready %d total %d", ps.Schedule.N, ps.Run.N, ps.Ready.N, ps.CreateToReady.N)
	}
	if ps.Run.Max != 700 || ps.Ready.Max != 90 || ps.CreateToReady.Max != 800 {
		t.Errorf("run max %v ready max %v total max %v", ps.Run.Max, ps.Ready.Max, ps.CreateToReady.Max)
	}
	if podStart(recorder.Snapshot{Pods: map[string]recorder.Pod{"fill": pods["fill"]}}, t0) != nil {
		t.Error("no pod after T0: no pod start figures")
	}
}

func TestBenchObjectsRealNodePlacement(t *testing.T) {
	objs := BenchObjects("ns", 0, images.RealNodeWorkload, true)
	spec, _, _ := unstructured.NestedMap(objs[0].Object, "spec", "podTemplate", "spec")
	sel, _ := spec["nodeSelector"].(map[string]any)
	if sel[kube.RealNodeKey] != "true" || len(spec["tolerations"].([]any)) != 1 {
		t.Fatalf("real-node placement: %v", spec)
	}
	c := spec["containers"].([]any)[0].(map[string]any)
	if c["imagePullPolicy"] != "Never" || c["image"] != images.RealNodeWorkload {
		t.Errorf("container %v", c)
	}
	plain, _, _ := unstructured.NestedMap(BenchObjects("ns", 0, "img", false)[0].Object, "spec", "podTemplate", "spec")
	if _, ok := plain["nodeSelector"]; ok {
		t.Error("simulated placement must not select a node")
	}
}
