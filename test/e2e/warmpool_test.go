//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/brakes"
	"github.com/brakebench/brakebench/internal/cli"
	"github.com/brakebench/brakebench/internal/results"
)

// runCLI runs brakebench in-process against the test lab (its output goes to the test log) and
// returns what it printed on stdout.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	switch args[0] {
	case "report", "compare", "trend", "suites": // they read no configuration (and refuse --set)
	default:
		args = append(args, "--set", "lab.name="+labName, "--set", "lab.stateDir="+stateDir)
	}
	args = withoutWarmup(args)
	var stdout, stderr bytes.Buffer
	root := cli.NewRoot(&stdout, &stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	t.Logf("brakebench %v\n%s\n%s", args, stderr.String(), stdout.String())
	return stdout.String(), err
}

// withoutWarmup adds matrix.warmup=0 to a run or tune that does not set matrix.warmup itself.
// The warm-up cell exists because a fresh lab serves its first cell faster than the rest; the
// test binary's one lab is fresh only for its first test, and the tests check what a run does,
// not its numbers against a baseline measured on a cold lab. The tests of the warm-up itself
// (TestAAOnTheLab, TestSIGKILLThenCleanup) set it. Runs the tests start as a subprocess
// (killRunWhen) do not pass through here and keep their suite's default.
func withoutWarmup(args []string) []string {
	if len(args) == 0 || (args[0] != "run" && args[0] != "tune") {
		return args
	}
	for _, a := range args {
		if strings.HasPrefix(a, "matrix.warmup=") {
			return args
		}
	}
	return append(args, "--set", "matrix.warmup=0")
}

// runSuite runs a suite on the test lab and returns the results it wrote.
func runSuite(t *testing.T, suite string, sets ...string) *results.Results {
	t.Helper()
	r, _, _ := runSuiteOut(t, suite, sets...)
	return r
}

// runSuiteOut runs a suite on the test lab and returns the results, their directory (report.html,
// junit.xml) and what the run printed on stdout (the terminal table).
func runSuiteOut(t *testing.T, suite string, sets ...string) (*results.Results, string, string) {
	t.Helper()
	out := t.TempDir()
	args := []string{"run", suite, "--out", out}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	stdout, err := runCLI(t, args...)
	r, dir := readRunAllowing(t, out, suite, overCreation, err)
	return r, dir, stdout
}

// overCreation are the invariants of a controller that created pool members too many. The
// controllers under test do so intermittently on this lab (v0.5.3 often, as issue 22 measured;
// v0.5.5 one member now and then: README "Sustained ceiling per brake cell"), so a test that is
// not about them accepts their violation, reported and logged, and nothing else: any other
// failed gate, any other violated invariant (double binding, orphans, a brake that did not
// engage, a fault's) and any error still fail it. The upgrade test checks the gate itself.
var overCreation = []string{"correctness.pool_excess_max", "correctness.fill_creates_per_slot", "correctness.refill_creates_per_slot"}

// readRunAllowing reads the run as readRun does, after runErr (the CLI's error): nil, or exit 3
// from the invariant gate alone on allowed invariants only (each violation logged).
func readRunAllowing(t *testing.T, out, suite string, allowed []string, runErr error) (*results.Results, string) {
	t.Helper()
	var exit *cli.ExitError
	if runErr != nil && !(errors.As(runErr, &exit) && exit.Code == cli.ExitGateFailed) {
		t.Fatalf("run %s: %v", suite, runErr)
	}
	r, dir := readRun(t, out, suite)
	if runErr == nil {
		return r, dir
	}
	for _, g := range r.Gates {
		if !g.Passed && g.Name != analysis.InvariantGateName {
			t.Fatalf("run %s: gate %q failed: %s", suite, g.Name, g.Message)
		}
	}
	seen := 0
	for _, s := range r.Summary {
		for _, iv := range s.Invariants {
			if iv.Violated == 0 {
				continue
			}
			seen++
			if !slices.Contains(allowed, iv.Key) {
				t.Fatalf("run %s: cell %s: invariant %s %s", suite, s.Name, iv.Key, iv.Text)
			}
			t.Logf("allowed, reported: cell %s: %s %s", s.Name, iv.Key, iv.Text)
		}
	}
	if seen == 0 {
		t.Fatalf("run %s: exit 3 but no invariant violated: %v", suite, runErr)
	}
	return r, dir
}

// readRun reads the one run of suite written under out, and returns it with its directory.
func readRun(t *testing.T, out, suite string) (*results.Results, string) {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(out, suite+"-*", "results.json"))
	if len(matches) != 1 {
		t.Fatalf("want one results.json under %s, found %v", out, matches)
	}
	r, err := results.Read(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	return r, filepath.Dir(matches[0])
}

func metric(t *testing.T, r *results.Results, cell, key string) float64 {
	t.Helper()
	m, ok := r.Find(cell, key)
	if !ok {
		t.Fatalf("results have no %s for cell %s", key, cell)
	}
	return float64(m.Value)
}

// TestWarmpoolBurstRefillCap runs the suite at a reduced size (60 claims, none vs
// max-refill-rate vs max-batch-size, 1 repetition): every claim is Ready, the table's numbers
// exist, the refill create ceiling respects the rate cap while the unbraked refill exceeds it,
// and the batch-size cap shows in the controller's own create passes.
func TestWarmpoolBurstRefillCap(t *testing.T) {
	const rate = 3.0
	r := runSuite(t, "warmpool-burst",
		"workload.pool=60", "workload.claims=60", "matrix.repetitions=1",
		"matrix.brakes=none,max-refill-rate,max-batch-size", "brakes.maxRefillRate=3", "brakes.maxBatchSize=5", "matrix.seed=42")
	if len(r.Cells) != 3 || r.Seed != 42 || len(r.Summary) != 3 {
		t.Fatalf("cells %d summary %d seed %d", len(r.Cells), len(r.Summary), r.Seed)
	}
	for _, c := range r.Cells {
		if c.Error != "" {
			t.Fatalf("cell %s: %s", c.ID, c.Error)
		}
		st := c.Stats
		if st.Total != 60 || st.Failed != 0 || st.Warm+st.Cold != 60 || len(c.Claims) != 60 {
			t.Errorf("%s: total %d failed %d warm %d cold %d", c.ID, st.Total, st.Failed, st.Warm, st.Cold)
		}
		for _, q := range []float64{st.Latency.All.P50, st.Latency.All.P90, st.Latency.All.P99} {
			if math.IsNaN(q) || math.IsInf(q, 0) || q <= 0 {
				t.Errorf("%s: latency quantile %v", c.ID, q)
			}
		}
		if !(st.Latency.All.P50 <= st.Latency.All.P90 && st.Latency.All.P90 <= st.Latency.All.P99) {
			t.Errorf("%s: quantiles out of order %+v", c.ID, st.Latency.All)
		}
		if st.Ceilings.SandboxCreate1s <= 0 || st.Ceilings.PodSchedule1s <= 0 || st.RefillSeconds == nil {
			t.Errorf("%s: ceilings %+v refill %v", c.ID, st.Ceilings, st.RefillSeconds)
		}
		if _, ok := c.Metrics["kube-apiserver"]; !ok || st.CPUSeconds["kube-apiserver"] <= 0 {
			t.Errorf("%s: no apiserver scrape / CPU seconds: %v", c.ID, st.CPUSeconds)
		}
		if st.ControllerLatencyMS == nil || st.ControllerLatencyMS.N != 60 {
			t.Errorf("%s: controller histogram cross-check missing or wrong count: %+v", c.ID, st.ControllerLatencyMS)
		}
	}
	capped := metric(t, r, "max-refill-rate", "ceiling.refill_create_5s")
	if capped > brakes.RateTolerance*rate {
		t.Errorf("refill create ceiling with max-refill-rate=%v is %.2f/s over 5 s, above %.2f", rate, capped, brakes.RateTolerance*rate)
	}
	free := metric(t, r, "none", "ceiling.refill_create_1s")
	if free <= brakes.RateTolerance*rate {
		t.Errorf("without a brake the refill create ceiling (%.2f/s over 1 s) should exceed the cap %.2f", free, brakes.RateTolerance*rate)
	}
	for _, c := range r.Cells {
		if c.Name != "none" && (c.Stats.BrakeEngaged == nil || !*c.Stats.BrakeEngaged) {
			t.Errorf("%s: brake not engaged: %s", c.Name, c.Stats.BrakeEvidence)
		}
		// The lab's controller log is read in every cell: the passes refill every warm slot taken
		// (all 60 when every claim is served warm; a claim served cold takes no pool slot).
		total := 0
		for _, n := range c.Stats.CreatePasses {
			total += n
		}
		if total < c.Stats.Warm || c.Stats.Warm == 0 {
			t.Errorf("%s: create passes %v after the burst add up to %d, want the %d warm slots refilled", c.Name, c.Stats.CreatePasses, total, c.Stats.Warm)
		}
	}
	if largest := metric(t, r, "max-batch-size", "controller.create_pass_max"); largest > 5 {
		t.Errorf("max-batch-size=5: largest create pass %v", largest)
	}
	if m, _ := r.Find("max-refill-rate", "pool.refill_s"); m.Delta == nil || float64(m.Delta.Abs) <= 0 {
		t.Errorf("capped refill should take longer than the unbraked one: %+v", m)
	}
}
