package cli

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/tune"
	"github.com/brakebench/brakebench/suites"
)

// fakeController is a module directory whose controller main.go defines flags (all but the
// ones in without).
func fakeController(t *testing.T, without ...string) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("package main\nfunc main() {\n")
	for _, f := range []string{"sandbox-warm-pool-max-refill-rate", "sandbox-warm-pool-replenish-delay", "sandbox-warm-pool-max-batch-size", "kube-api-qps", "kube-api-burst", "disable-claim-events"} {
		if !slices.Contains(without, f) {
			b.WriteString("\tflag.String(\"" + f + "\", \"\", \"\")\n")
		}
	}
	b.WriteString("}\n")
	p := filepath.Join(dir, "cmd", "agent-sandbox-controller")
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "main.go"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runTune(t *testing.T, module string, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	root := newRoot(&app{stdout: &stdout, stderr: &stderr, moduleDir: func(context.Context, string, string) (string, error) {
		if module == "" {
			return "", errors.New("offline")
		}
		return module, nil
	}})
	root.SetArgs(append([]string{"tune"}, args...))
	err := root.ExecuteContext(context.Background())
	return stdout.String() + stderr.String(), err
}

// Bad tune input is exit 2 before any cluster is touched (--cluster kind with an empty PATH: a
// tune that got as far as the cluster would fail with exit 1, no Docker).
func TestTuneBadInput(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	module := fakeController(t)
	out := t.TempDir()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown suite", []string{"warmpool-bust"}, `no suite named "warmpool-bust"`},
		{"budget", []string{"warmpool-burst", "--set", "tune.budget=1"}, `--set: key "tune.budget": expected 2 to 10000 cells`},
		{"not tunable", []string{"warmpool-burst", "--set", "tune.brakes=apf-insulation"}, `key "tune.brakes": expected tunable brakes`},
		{"range", []string{"warmpool-burst", "--set", "tune.ranges=max-refill-rate=0..9"}, `key "tune.ranges"`},
		{"objective", []string{"warmpool-burst", "--set", "tune.objective=claims.cold"}, `key "tune.objective"`},
		{"constraint", []string{"warmpool-burst", "--set", "tune.constraints=pool.refill_s~60"}, `key "tune.constraints": item 0`},
		{"gang-quota has no such brakes", []string{"gang-quota"}, `expected brakes suite gang-quota takes (gate-on, gate-off), got "max-refill-rate"`},
		{"pool-autoscaling has no brake cells", []string{"pool-autoscaling", "--set", "tune.brakes=max-refill-rate", "--set", "poolAutoscaling.exporterURL=http://127.0.0.1:9/x"}, `suite pool-autoscaling cannot be tuned: tune needs one cell per brake setting with claim latencies (the warm-pool suites); its plan has 12 cells named by arm`},
		{"a flag the version lacks", []string{"warmpool-burst", "--set", "tune.brakes=kube-api-qps,separate-watch-connection"}, `separate-watch-connection`},
		{"unwritable out", []string{"warmpool-burst", "--out", filepath.Join(module, "cmd", "agent-sandbox-controller", "main.go", "x")}, `key "out": expected a directory brakebench can write results to`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--cluster", "kind"}, tc.args...)
			if !slices.Contains(args, "--out") {
				args = append(args, "--out", out)
			}
			text, err := runTune(t, module, args...)
			var ee *ExitError
			if !errors.As(err, &ee) || ee.Code != ExitBadInput || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v (exit %v); want exit 2 containing %q\n%s", err, code(err), tc.want, text)
			}
		})
	}
	// The controller version cannot be had: bad input too, before any cluster.
	if _, err := runTune(t, "", "warmpool-burst", "--cluster", "kind", "--out", out); code(err) != ExitBadInput || !strings.Contains(err.Error(), "offline") {
		t.Errorf("offline: %v", err)
	}
}

func code(err error) int {
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if err != nil {
		return ExitRunError
	}
	return ExitOK
}

// --dry-run prints the space, the schedule within the budget and the first round's settings
// with their flags, and touches nothing.
func TestTuneDryRun(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	text, err := runTune(t, fakeController(t), "warmpool-burst", "--cluster", "kind", "--dry-run", "--set", "tune.seed=4",
		"--set", "tune.constraints=pool.refill_s<=60", "--set", "tune.ranges=max-refill-rate=5..80")
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	for _, w := range []string{"tune warmpool-burst on cluster provider \"kind\", seed 4", "searches max-refill-rate", "brakes.maxRefillRate 5..80, log scale (controller default: no limit)",
		"minimises claim.p99_ms subject to pool.refill_s <= 60", "budget: 40 search cells", "at most 20 cells", "iteration 1:", "--sandbox-warm-pool-max-refill-rate=",
		"--sandbox-warm-pool-replenish-delay="} {
		if !strings.Contains(text, w) {
			t.Errorf("dry run lacks %q:\n%s", w, text)
		}
	}
}

// The evaluator runs a round in rounds (repetition r of every setting together) and reads the
// objective and constraint metrics of each measured cell: a failed claim makes p99 +Inf, a cell
// without a refill time has none (NaN), a failed cell is no observation.
func TestByRoundsAndObserve(t *testing.T) {
	var cells []suites.PlannedCell
	for _, n := range []string{"none", "a", "b"} {
		for r := 1; r <= 3; r++ {
			cells = append(cells, suites.PlannedCell{Name: n, Rep: r})
		}
	}
	got := byRounds(cells, rand.New(rand.NewPCG(1, 2)))
	for i, c := range got {
		if c.Rep != i/3+1 {
			t.Fatalf("order %v", got)
		}
	}
	sp, err := tune.FromConfig(mustLoad(t, "tune.brakes=max-refill-rate", "tune.constraints=pool.refill_s<=60"))
	if err != nil {
		t.Fatal(err)
	}
	ms := func(v float64) *float64 { return &v }
	refill := 12.5
	res := &results.Results{Cells: []results.Cell{
		{Name: "none", Rep: 1, Claims: []results.Claim{{LatencyMS: ms(100)}, {LatencyMS: ms(300)}}},
		{Name: "max-refill-rate=20", Rep: 1, Claims: []results.Claim{{LatencyMS: ms(100)}, {Failed: true}}},
		{Name: "max-refill-rate=20", Rep: 2, Error: "boom"},
		{Name: "max-refill-rate=40", Rep: 1, Claims: []results.Claim{{LatencyMS: ms(200)}}},
	}}
	res.Cells[0].Stats.RefillSeconds = &refill
	e := &clusterEval{sp: sp}
	obs := e.observe(res, []tune.Setting{{Item: "max-refill-rate=20"}, {Item: "max-refill-rate=40"}})
	if len(obs) != 3 {
		t.Fatalf("observations %+v", obs)
	}
	if o := obs[0]; o.Candidate != tune.Baseline || o.Objective != 300 || o.Metrics["pool.refill_s"] != 12.5 {
		t.Errorf("baseline %+v", o)
	}
	if o := obs[1]; o.Candidate != 0 || !math.IsInf(o.Objective, 1) || !math.IsNaN(o.Metrics["pool.refill_s"]) {
		t.Errorf("failed claim %+v", o)
	}
	if o := obs[2]; o.Candidate != 1 || o.Objective != 200 {
		t.Errorf("second setting %+v", o)
	}
}

func mustLoad(t *testing.T, sets ...string) *config.Resolved {
	t.Helper()
	cfg, err := config.Loader{Suite: "warmpool-burst", Sets: sets}.Load()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
