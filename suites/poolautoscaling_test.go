package suites

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/recorder"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/scrape"
)

func TestPoolAutoscalingPlan(t *testing.T) {
	cfg, err := config.Loader{Suite: "pool-autoscaling", Sets: []string{"matrix.seed=5"}}.Load()
	if err != nil {
		t.Fatal(err)
	}
	p, err := PoolAutoscaling().Plan(cfg, PlanContext{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.Names, ",") != "keda@0-3-0,control@0-3-0,keda@0-50-10-0,control@0-50-10-0" || p.Baseline != "control@0-3-0" || len(p.Cells) != 4 {
		t.Fatalf("names %v baseline %s", p.Names, p.Baseline)
	}
	if _, err := (config.Loader{Suite: "pool-autoscaling", Sets: []string{"poolAutoscaling.profiles=0-x"}}).Load(); err == nil || !strings.Contains(err.Error(), "poolAutoscaling.profiles") {
		t.Errorf("a bad profile must name its key: %v", err)
	}
	if _, err := (config.Loader{Suite: "pool-autoscaling", Sets: []string{"cluster.provider=kubeconfig", "cluster.context=x"}}).Load(); err == nil || !strings.Contains(err.Error(), "poolAutoscaling.exporterURL") {
		t.Errorf("a real cluster needs an exporter URL: %v", err)
	}
}

func TestAssembleAutoscale(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	pool := []recorder.PoolSample{
		{At: at(-5), Desired: 1, Replicas: 1, Ready: 1},
		{At: at(12), Desired: 4, Replicas: 1, Ready: 1}, // overshoot past the final 3
		{At: at(13), Desired: 3, Replicas: 3, Ready: 1},
		{At: at(14), Desired: 3, Replicas: 3, Ready: 3},
		{At: at(25), Desired: 1, Replicas: 1, Ready: 1},
	}
	snap := recorder.Snapshot{Pools: map[string][]recorder.PoolSample{PoolName: pool},
		Claims:    map[string]recorder.Claim{"c1": {Sandbox: "s1"}, "c2": {Sandbox: "s2"}},
		Sandboxes: map[string]recorder.Sandbox{"s1": {LaunchType: "warm"}, "s2": {LaunchType: "cold"}}}
	as := &results.Autoscale{Arm: "keda", Profile: []int{0, 3, 0}, Min: 1, Max: 3,
		Steps: []results.AutoscaleStep{{Demand: 0, T: 0}, {Demand: 3, T: 10}, {Demand: 0, T: 20}}}
	hist := []demandPoint{{at(0), 0}, {at(10), 3}, {at(20), 0}}
	assembleAutoscale(as, snap, hist, [][]string{nil, {"c1", "c2"}, nil}, t0, at(30))
	up, down := as.Steps[1], as.Steps[2]
	if up.Decision != 3 || up.DecisionSeconds == nil || *up.DecisionSeconds != 3 || up.CapacitySeconds == nil || *up.CapacitySeconds != 4 || up.Overshoot != 1 {
		t.Errorf("up step %+v", up)
	}
	if down.Decision != 1 || down.Overshoot != 0 || *down.DecisionSeconds != 5 {
		t.Errorf("down step %+v", down)
	}
	if as.Warm != 1 || as.Cold != 1 || as.MaxSpec != 4 || as.EndSpec != 1 || as.ReplicaChanges != 3 {
		t.Errorf("cell warm %d cold %d max %d end %d changes %d", as.Warm, as.Cold, as.MaxSpec, as.EndSpec, as.ReplicaChanges)
	}
	lines := strings.Join(autoscaleAssertions(as), "\n")
	if !strings.Contains(lines, "PASS: with KEDA, spec.replicas rose to 4") || !strings.Contains(lines, "PASS: with KEDA, spec.replicas returned to the floor 1") {
		t.Errorf("assertions:\n%s", lines)
	}
	ctl := &results.Autoscale{Arm: "control", Samples: []results.AutoscaleSample{{Spec: 1}}, MinSpec: 1, MaxSpec: 2, ReplicaChanges: 1}
	if a := autoscaleAssertions(ctl); !strings.HasPrefix(a[0], "FAIL") {
		t.Errorf("a control arm whose spec changed must fail: %v", a)
	}
}

// autoscalerWrites counts the mutating requests on the autoscaler's resources, by resource and
// subresource; reads and dry runs (which write nothing) are not counted.
func TestAutoscalerWrites(t *testing.T) {
	req := func(verb, res, sub, dry string, v float64) scrape.Series {
		return scrape.Series{Name: "apiserver_request_total", Type: "counter", Value: v,
			Labels: map[string]string{"verb": verb, "resource": res, "subresource": sub, "dry_run": dry}}
	}
	got := autoscalerWrites(map[string]results.Scrape{"kube-apiserver": {Series: []scrape.Series{
		req("POST", "scaledobjects", "", "", 1),
		req("POST", "scaledobjects", "", "All", 1),
		req("PATCH", "sandboxwarmpools", "scale", "", 2),
		req("PUT", "horizontalpodautoscalers", "status", "", 3),
		req("GET", "horizontalpodautoscalers", "", "", 5),
		req("PATCH", "pods", "", "", 7),
	}}})
	want := map[string]float64{"scaledobjects": 1, "sandboxwarmpools/scale": 2, "horizontalpodautoscalers/status": 3}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
