package suites

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/stats"
)

func TestPlanAxes(t *testing.T) {
	cfg, err := config.Loader{Sets: []string{"controller.versions=v0.5.3,v0.5.5", "matrix.brakes=none,max-refill-rate", "matrix.faults=none,gpu", "lab.nodes.gpus=8", "matrix.repetitions=2", "matrix.seed=11"}}.Load()
	if err != nil {
		t.Fatal(err)
	}
	supports := func(v, flag string) (bool, error) { return v != "v0.5.3", nil }
	p, err := WarmpoolBurst().Plan(cfg, PlanContext{Supports: supports})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"none@v0.5.3", "none@v0.5.3/gpu", "max-refill-rate@v0.5.3", "max-refill-rate@v0.5.3/gpu",
		"none@v0.5.5", "none@v0.5.5/gpu", "max-refill-rate@v0.5.5", "max-refill-rate@v0.5.5/gpu"}
	if !reflect.DeepEqual(p.Names, want) || p.Baseline != "none@v0.5.3" || len(p.Cells) != 16 || p.Seed != 11 {
		t.Fatalf("names %v baseline %s cells %d", p.Names, p.Baseline, len(p.Cells))
	}
	var na []string
	for _, c := range p.Cells {
		if c.NotApplicable != "" {
			na = append(na, c.ID)
		}
		if c.Name == "max-refill-rate@v0.5.5/gpu" && (c.Fault != "gpu" || c.Version != "v0.5.5" || c.Brake.Settings["max-refill-rate"] != "10") {
			t.Errorf("cell %+v", c)
		}
	}
	sort.Strings(na)
	if fmt.Sprint(na) != "[max-refill-rate@v0.5.3#1 max-refill-rate@v0.5.3#2 max-refill-rate@v0.5.3/gpu#1 max-refill-rate@v0.5.3/gpu#2]" {
		t.Errorf("not applicable: %v", na)
	}
	again, _ := WarmpoolBurst().Plan(cfg, PlanContext{Supports: supports})
	for i := range p.Cells {
		if p.Cells[i].ID != again.Cells[i].ID {
			t.Fatal("the same seed must give the same order")
		}
	}
	if _, err := WarmpoolBurst().Plan(cfg, PlanContext{Supports: func(string, string) (bool, error) { return false, fmt.Errorf("v0.5.4 refused") }}); err == nil {
		t.Error("a version that cannot be had must fail the plan")
	}
	// ... also when no cell needs a brake flag from it.
	plain, _ := config.Loader{Sets: []string{"controller.version=v0.5.4", "matrix.brakes=none"}}.Load()
	if _, err := WarmpoolBurst().Plan(plain, PlanContext{Source: func(string) (string, error) { return "", fmt.Errorf("v0.5.4 refused") }}); err == nil {
		t.Error("a version that cannot be had must fail the plan even without brake cells")
	}
}

// Every registered suite has a default config that loads and plans.
func TestEverySuitePlans(t *testing.T) {
	reg := Default()
	if len(reg.Names()) < 4 {
		t.Fatalf("suites %v", reg.Names())
	}
	for _, name := range reg.Names() {
		cfg, err := config.Loader{Suite: name}.Load()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		s, _ := reg.Get(name)
		p, err := s.Plan(cfg, PlanContext{})
		if err != nil || len(p.Cells) == 0 || p.Baseline == "" {
			t.Errorf("%s: plan %+v %v", name, p, err)
		}
	}
	if _, err := reg.Get("nope"); err == nil {
		t.Error("unknown suite")
	}
}

// A brake listed twice is an A/A pair: identical cells under distinct names, the first copy the
// baseline, the copies run with the same flags.
func TestPlanAA(t *testing.T) {
	cfg, err := config.Loader{Sets: []string{"matrix.brakes=none,none,max-refill-rate,max-refill-rate", "matrix.repetitions=2"}}.Load()
	if err != nil {
		t.Fatal(err)
	}
	p, err := WarmpoolBurst().Plan(cfg, PlanContext{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"none", "none_2", "max-refill-rate", "max-refill-rate_2"}; !reflect.DeepEqual(p.Names, want) || p.Baseline != "none" || len(p.Cells) != 8 {
		t.Fatalf("names %v baseline %s cells %d", p.Names, p.Baseline, len(p.Cells))
	}
	flags := map[string]string{}
	for _, c := range p.Cells {
		flags[c.Name] = fmt.Sprint(c.Flags, c.Brake)
	}
	if flags["none"] != flags["none_2"] || flags["max-refill-rate"] != flags["max-refill-rate_2"] || flags["none"] == flags["max-refill-rate"] {
		t.Errorf("copies must be identical: %v", flags)
	}
}

// matrix.brakes is checked by the brake registry when a suite plans: bad items are config errors
// (exit 2) naming the key, before a cluster is touched.
func TestPlanBrakeErrors(t *testing.T) {
	cases := []struct {
		name  string
		suite Suite
		sets  []string
		want  string
	}{
		{"unknown brake", WarmpoolBurst(), []string{"matrix.brakes=none,turbo"}, `key "matrix.brakes": expected items from none, apf-insulation, `},
		{"brake without value", WarmpoolBurst(), []string{"matrix.brakes=max-refill-rate", "brakes.maxRefillRate=0"}, `key "brakes.maxRefillRate": expected a positive rate in sandboxes/s, at most 100000 because matrix.brakes has "max-refill-rate"`},
		{"combination part without value", WarmpoolBurst(), []string{"matrix.brakes=replenish-delay+max-refill-rate", "brakes.replenishDelay=0s"}, `key "brakes.replenishDelay": expected a positive duration up to 24h because matrix.brakes has "replenish-delay+max-refill-rate"`},
		{"batch size out of range", WarmpoolBurst(), []string{"matrix.brakes=max-batch-size", "brakes.maxBatchSize=1000000"}, `key "brakes.maxBatchSize": expected a batch size of 1 to 100000 sandboxes`},
		{"delay of a week", WarmpoolBurst(), []string{"matrix.brakes=replenish-delay", "brakes.replenishDelay=168h"}, `expected a positive duration up to 24h`},
		{"brake twice in a combination", WarmpoolBurst(), []string{"matrix.brakes=max-refill-rate+max-refill-rate"}, `names max-refill-rate twice`},
		{"gang arm in a warm-pool suite", WarmpoolBurst(), []string{"matrix.brakes=gate-on"}, `got "gate-on"`},
		{"object brake under the autoscaler", PoolAutoscaling(), []string{"matrix.brakes=apf-insulation"}, `got "apf-insulation"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Loader{Suite: tc.suite.Name(), Sets: tc.sets}.Load()
			if err != nil {
				t.Fatal(err)
			}
			_, err = tc.suite.Plan(cfg, PlanContext{})
			var ce *config.Error
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a config error containing %q", err, tc.want)
			}
		})
	}
}

// A combination is one cell with every part's flags; "both" is a name for the refill pair.
func TestPlanBrakeCombinations(t *testing.T) {
	cfg, err := config.Loader{Sets: []string{"matrix.brakes=both,max-refill-rate+replenish-delay", "matrix.seed=3", "brakes.maxRefillRate=4", "brakes.replenishDelay=7s"}}.Load()
	if err != nil {
		t.Fatal(err)
	}
	p, err := WarmpoolBurst().Plan(cfg, PlanContext{})
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string]string{}
	for _, c := range p.Cells {
		flags[c.Name] = fmt.Sprint(c.Flags, c.Brake.Settings)
	}
	want := "[--sandbox-warm-pool-max-refill-rate=4 --sandbox-warm-pool-replenish-delay=7s] map[max-refill-rate:4 replenish-delay:7s]"
	if flags["both"] != want || flags["max-refill-rate+replenish-delay"] != want {
		t.Fatalf("cells %v, want both = %s", flags, want)
	}
}

// matrix.faults is checked by the fault registry when a suite plans, with each fault's checks
// that need no cluster (its settings among them).
func TestPlanFaultErrors(t *testing.T) {
	cases := []struct {
		sets []string
		want string
	}{
		{[]string{"matrix.faults=none,earthquake"}, `key "matrix.faults": expected items from none, apf-throttle, apiserver-inflight, gpu, node-repair, node-repair-blocked, scheduler-qps; got "earthquake"`},
		{[]string{"matrix.faults=none,gpu", "lab.nodes.gpus=0"}, `key "lab.nodes.gpus": expected GPU capacity on the lab's nodes`},
		{[]string{"matrix.faults=apf-throttle", "faults.apf.target=loadgen", "loadgen.identity=exempt"}, `key "faults.apf.target": expected controller, or loadgen with loadgen.identity=serviceaccount`},
		// Each fault type checks its own settings (faults.*) here, before any cluster is touched.
		{[]string{"matrix.faults=none,gpu", "lab.nodes.gpus=8", "faults.gpu.kind=plasma"}, `--set: key "faults.gpu.kind": expected one of xid, ecc, nvlink, device-count, kernel, networking, runtime, storage, got plasma`},
		{[]string{"matrix.faults=none,scheduler-qps", "faults.controlPlane.schedulerQPS=0"}, `--set: key "faults.controlPlane.schedulerQPS": expected 1 to 100000, got 0`},
		{[]string{"matrix.faults=node-repair", "faults.nodeRepair.tolerationScale=2"}, `--set: key "faults.nodeRepair.tolerationScale": expected a factor in (0, 1], got 2`},
	}
	for _, tc := range cases {
		cfg, err := config.Loader{Sets: tc.sets}.Load()
		if err != nil {
			t.Fatal(err)
		}
		_, err = WarmpoolBurst().Plan(cfg, PlanContext{})
		var ce *config.Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want a config error containing %q", tc.sets, err, tc.want)
		}
	}
	// On a cluster brakebench does not run, control-plane fault cells are planned as not applicable.
	cfg, err := config.Loader{Sets: []string{"matrix.faults=none,scheduler-qps", "cluster.provider=kubeconfig", "cluster.context=x", "cluster.allowContext=x"}}.Load()
	if err != nil {
		t.Fatal(err)
	}
	p, err := WarmpoolBurst().Plan(cfg, PlanContext{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Cells {
		if (c.Fault == "scheduler-qps") != strings.Contains(c.NotApplicable, "only the lab can do") {
			t.Errorf("cell %s: not applicable %q", c.ID, c.NotApplicable)
		}
	}
	// Node repair needs the lab's Karpenter: not applicable elsewhere.
	cfg, err = config.Loader{Sets: []string{"matrix.faults=none,node-repair", "cluster.provider=kubeconfig", "cluster.context=x", "cluster.allowContext=x"}}.Load()
	if err != nil {
		t.Fatal(err)
	}
	if p, err = WarmpoolBurst().Plan(cfg, PlanContext{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Cells {
		if (c.Fault == "node-repair") != strings.Contains(c.NotApplicable, "which only the lab runs") {
			t.Errorf("cell %s: not applicable %q", c.ID, c.NotApplicable)
		}
	}
}

// The main job runs enough repetitions to find a 20% p99 shift 80% of the time (stats.PowerReps,
// proved by simulation in the stats package): a default below it would make "~" mean "not looked".
func TestMainJobHasPower(t *testing.T) {
	cfg, err := config.Loader{Suite: "warmpool-burst"}.Load()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Matrix.Repetitions < stats.PowerReps {
		t.Fatalf("warmpool-burst runs %d repetitions by default; a 20%% p99 shift needs %d for 80%% power", cfg.Matrix.Repetitions, stats.PowerReps)
	}
}

// A controllerArgs item or a controller.args flag the version does not define makes the cell not
// applicable at plan time (v1.0.1 exits at start on v0.5.5's --enable-webhook), never a cell
// whose controller crashes.
func TestPlanArgsAgainstTheVersion(t *testing.T) {
	defined := map[string]map[string]bool{
		"v0.5.5": {"enable-webhook": true, "kube-api-qps": true},
		"v1.0.1": {"kube-api-qps": true},
	}
	supports := func(v, flag string) (bool, error) { return defined[v][flag], nil }
	tests := []struct {
		name string
		sets []string
		want map[string]string // cell name -> not applicable reason ("" applicable)
	}{
		{"matrix.controllerArgs", []string{"controller.versions=v0.5.5,v1.0.1", "matrix.controllerArgs=--kube-api-qps=5,--enable-webhook=false"},
			map[string]string{
				"none@v0.5.5+kube-api-qps=5": "", "none@v0.5.5+enable-webhook=false": "",
				"none@v1.0.1+kube-api-qps=5": "", "none@v1.0.1+enable-webhook=false": "agent-sandbox v1.0.1 has no --enable-webhook (matrix.controllerArgs)",
			}},
		{"controller.args", []string{"controller.versions=v0.5.5,v1.0.1", "controller.args=--enable-webhook=false"},
			map[string]string{"none@v0.5.5": "", "none@v1.0.1": "agent-sandbox v1.0.1 has no --enable-webhook (controller.args)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Loader{Sets: append([]string{"matrix.brakes=none", "matrix.repetitions=1", "matrix.sequential=false"}, tc.sets...)}.Load()
			if err != nil {
				t.Fatal(err)
			}
			p, err := WarmpoolBurst().Plan(cfg, PlanContext{Supports: supports})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, c := range p.Cells {
				got[c.Name] = c.NotApplicable
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("not applicable\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A controller arg whose value the flag's kind cannot parse fails the plan (exit 2): the
// controller would exit at start whatever the version.
func TestPlanRejectsArgValues(t *testing.T) {
	pc := PlanContext{
		Supports: func(string, string) (bool, error) { return true, nil },
		CheckArg: func(_, arg string) (string, error) {
			if arg == "--kube-api-qps=fast" {
				return "--kube-api-qps=fast is not a valid float64", nil
			}
			return "", nil
		},
	}
	for _, sets := range [][]string{{"matrix.controllerArgs=--kube-api-qps=fast"}, {"controller.args=--kube-api-qps=fast"}} {
		cfg, err := config.Loader{Sets: append([]string{"matrix.brakes=none", "matrix.repetitions=1"}, sets...)}.Load()
		if err != nil {
			t.Fatal(err)
		}
		_, err = WarmpoolBurst().Plan(cfg, pc)
		if err == nil || !strings.Contains(err.Error(), "--kube-api-qps=fast is not a valid float64") {
			t.Errorf("%v: err %v", sets, err)
		}
	}
}

// Headroom shaped like the pool's pods only means something where the pool needs Karpenter
// nodes: capacity-buffer cells without a node-repair fault are planned as not applicable.
func TestPlanCapacityBufferNeedsKarpenterPool(t *testing.T) {
	cfg, err := config.Loader{Sets: []string{"matrix.brakes=none,capacity-buffer", "matrix.faults=none,node-repair"}}.Load()
	if err != nil {
		t.Fatal(err)
	}
	p, err := WarmpoolBurst().Plan(cfg, PlanContext{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range p.Cells {
		want := c.Fault == "none" && strings.HasPrefix(c.Name, "capacity-buffer")
		if got := strings.Contains(c.NotApplicable, "headroom on a Karpenter NodePool"); got != want {
			t.Errorf("cell %s (fault %s): not applicable %q", c.ID, c.Fault, c.NotApplicable)
		}
		if want {
			n++
		}
	}
	if n == 0 {
		t.Error("no capacity-buffer cell without a fault was planned")
	}
}
