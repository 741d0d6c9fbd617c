//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/brakebench/brakebench/faults"
	"github.com/brakebench/brakebench/internal/browsertest"
	"github.com/brakebench/brakebench/internal/kube"
)

func labelledLeft(t *testing.T) []string {
	t.Helper()
	c := clients(t)
	sel := metav1.ListOptions{LabelSelector: kube.RunSelector("")}
	var left []string
	if l, err := c.Typed.FlowcontrolV1().FlowSchemas().List(context.Background(), sel); err == nil {
		for _, o := range l.Items {
			left = append(left, "flowschema/"+o.Name)
		}
	}
	if l, err := c.Typed.FlowcontrolV1().PriorityLevelConfigurations().List(context.Background(), sel); err == nil {
		for _, o := range l.Items {
			left = append(left, "prioritylevel/"+o.Name)
		}
	}
	if l, err := c.Typed.CoreV1().Namespaces().List(context.Background(), sel); err == nil {
		for _, o := range l.Items {
			left = append(left, "namespace/"+o.Name)
		}
	}
	if l, err := c.Typed.CoreV1().Events("default").List(context.Background(), sel); err == nil {
		for _, o := range l.Items {
			left = append(left, "event/"+o.Name)
		}
	}
	return left
}

func nodeStates(t *testing.T) map[string]string {
	t.Helper()
	l, err := clients(t).Typed.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i := range l.Items {
		out[l.Items[i].Name] = faults.NodeState(&l.Items[i])
	}
	return out
}

// TestAPFThrottleRaisesWaitAndIsRemoved: the controller squeezed into ~3 seats waits in APF (the
// level's wait histogram fills) and claims get slower than without the throttle; afterwards no
// FlowSchema or priority level of the run is left.
func TestAPFThrottleRaisesWaitAndIsRemoved(t *testing.T) {
	r, dir, stdout := runSuiteOut(t, "apf-throttle", "workload.pool=40", "workload.claims=40", "matrix.repetitions=1", "matrix.seed=7")
	var none, throttled float64
	for _, c := range r.Cells {
		if c.Error != "" {
			t.Fatalf("%s: %s", c.ID, c.Error)
		}
		switch c.Name {
		case "none":
			none = c.Stats.Latency.All.P99
		case "none/apf-throttle":
			throttled = c.Stats.Latency.All.P99
			fs := c.Stats.Fault
			if fs == nil || fs.APFLevel == "" || fs.APFWaitP99S == nil || *fs.APFWaitP99S <= 0 {
				t.Errorf("no APF wait recorded for the throttled level: %+v", fs)
			} else {
				t.Logf("APF wait p99 of %s: %.3fs, rejected %v", fs.APFLevel, *fs.APFWaitP99S, fs.APFRejected)
			}
			events := map[string]bool{}
			for _, e := range c.FaultLog {
				events[e.Event] = true
			}
			if !events["armed"] || !events["reverted"] {
				t.Errorf("fault timeline %+v", c.FaultLog)
			}
		}
	}
	if !(throttled > none) {
		t.Errorf("claim p99 with the controller throttled (%.0f ms) should exceed the unthrottled one (%.0f ms)", throttled, none)
	}
	t.Logf("claim p99: %.0f ms unthrottled, %.0f ms throttled (x%.2f)", none, throttled, throttled/none)
	faultReport(t, dir, stdout, "none/apf-throttle#1", "apf-throttle", "priority level brakebench-throttle-", "APF wait p99 in that level")
	if left := labelledLeft(t); len(left) > 0 {
		t.Errorf("left after the run: %v", left)
	}
}

// TestGPUFaultOnOneOfFourNodes: an XID 79 on one of four GPU nodes sets the EKS-style condition,
// is served as DCGM_FI_DEV_XID_ERRORS, evicts the warm sandboxes on that node through the taint,
// and the revert leaves every node exactly as before.
func TestGPUFaultOnOneOfFourNodes(t *testing.T) {
	before := nodeStates(t)
	r, dir, stdout := runSuiteOut(t, "gpu-faults", "workload.pool=40", "workload.claims=40", "matrix.repetitions=1", "matrix.brakes=none", "matrix.seed=3")
	var cell = -1
	for i, c := range r.Cells {
		if c.Error != "" {
			t.Fatalf("%s: %s", c.ID, c.Error)
		}
		if c.Name == "none/gpu" {
			cell = i
		}
	}
	if cell < 0 {
		t.Fatal("no gpu cell")
	}
	c := r.Cells[cell]
	fs := c.Stats.Fault
	if fs == nil || len(fs.Nodes) != 1 || fs.Condition != "NvidiaXID79Error" {
		t.Fatalf("fault stats %+v", fs)
	}
	if fs.DCGMXID == nil || *fs.DCGMXID != 79 {
		t.Errorf("DCGM_FI_DEV_XID_ERRORS for %s = %v, want 79", fs.Nodes[0], fs.DCGMXID)
	}
	if fs.TimeToUnavailableS == nil || fs.SandboxesLost == 0 {
		t.Errorf("the tainted node should lose its warm sandboxes: time to unavailable %v, lost %d; timeline %+v", ptrStr(fs.TimeToUnavailableS), fs.SandboxesLost, c.FaultLog)
	}
	for _, inv := range fs.Invariants {
		if !inv.Held {
			t.Errorf("invariant broken: %s (%s)", inv.Name, inv.Detail)
		}
	}
	events := map[string]bool{}
	for _, e := range c.FaultLog {
		events[e.Event] = true
	}
	if !events["armed"] || !events["effective"] || !events["reverted"] {
		t.Errorf("fault timeline %+v", c.FaultLog)
	}
	faultReport(t, dir, stdout, "none/gpu#1", "gpu", "NvidiaXID79Error", "warm sandboxes lost", "GPU nodes unavailable at once (most)", "held: most unavailable at once")
	if v := metric(t, r, "none/gpu", "fault.invariants_violated"); v != 0 {
		t.Errorf("gateable fault.invariants_violated = %v, want 0", v)
	}
	after := nodeStates(t)
	for n, s := range before {
		if after[n] != s {
			t.Errorf("node %s not restored:\nbefore %s\nafter  %s", n, s, after[n])
		}
	}
	if left := labelledLeft(t); len(left) > 0 {
		t.Errorf("left after the run: %v", left)
	}
}

// TestSIGKILLThenCleanup kills the harness with SIGKILL while an APF throttle is armed in the
// measured cell, after the warm-up cell left its emptied namespace for the run's end (deferred
// deletion), then `brakebench cleanup --all` must delete every labelled object, that namespace
// included, and restore the controller.
func TestSIGKILLThenCleanup(t *testing.T) {
	bin := buildCLI(t)
	cmd := exec.Command(bin, "run", "apf-throttle", "--out", t.TempDir(), "--set", "lab.name="+labName, "--set", "lab.stateDir="+stateDir,
		"--set", "matrix.faults=apf-throttle", "--set", "matrix.repetitions=1", "--set", "matrix.warmup=1", "--set", "workload.pool=20", "--set", "workload.claims=20",
		"--set", "controller.args=--sandbox-warm-pool-max-batch-size=300")
	cmd.Env = os.Environ()
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		// Two namespaces: the warm-up's, emptied and left, and the measured cell's.
		if left := strings.Join(labelledLeft(t), " "); strings.Contains(left, "flowschema/") && strings.Count(left, "namespace/") >= 2 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the throttle was never armed in the measured cell:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if len(labelledLeft(t)) == 0 {
		t.Fatal("nothing was left to clean up: the test did not exercise cleanup")
	}
	st, err := theLab.Load()
	if err != nil || st.Controller == nil || len(st.Controller.Extra) == 0 {
		t.Fatalf("the killed run should have left the controller with its cell flags: %+v %v", st.Controller, err)
	}
	stdout, err := runCLI(t, "cleanup", "--all")
	if err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	if left := labelledLeft(t); len(left) > 0 {
		t.Errorf("left after cleanup: %v", left)
	}
	st, _ = theLab.Load()
	if st.Controller == nil || len(st.Controller.Extra) != 0 {
		t.Errorf("controller not restored to its original flags: %+v", st.Controller)
	}
	if !strings.Contains(stdout, "restore agent-sandbox controller flags") {
		t.Errorf("cleanup did not report restoring the controller")
	}
}

// TestControlPlaneFlagsAndInsulationCells runs the kube-scheduler QPS experiment (50 vs 200) and
// the APF insulation overlay as cells, and checks both are undone afterwards.
func TestControlPlaneFlagsAndInsulationCells(t *testing.T) {
	schedBefore, err := theLab.ComponentArgs("kube-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	r := runSuite(t, "warmpool-burst", "workload.pool=30", "workload.claims=30", "matrix.repetitions=1", "matrix.seed=5",
		"matrix.brakes=none,apf-insulation", "matrix.faults=none,scheduler-qps")
	if len(r.Cells) != 4 {
		t.Fatalf("%d cells", len(r.Cells))
	}
	for _, c := range r.Cells {
		if c.Error != "" || c.NotApplicable != "" {
			t.Fatalf("%s: %s%s", c.ID, c.Error, c.NotApplicable)
		}
		events := map[string]bool{}
		for _, e := range c.FaultLog {
			events[e.Fault+":"+e.Event] = true
		}
		if c.Fault == "scheduler-qps" && (!events["scheduler-qps:armed"] || !events["scheduler-qps:reverted"]) {
			t.Errorf("%s: timeline %+v", c.ID, c.FaultLog)
		}
		if c.Brake.APFInsulation && !events["apf-insulation:armed"] {
			t.Errorf("%s: timeline %+v", c.ID, c.FaultLog)
		}
		t.Logf("%s: pod schedule ceiling %.1f/s (1 s), %.1f/s (5 s)", c.ID, c.Stats.Ceilings.PodSchedule1s, c.Stats.Ceilings.PodSchedule5s)
	}
	schedAfter, _ := theLab.ComponentArgs("kube-scheduler")
	if strings.Join(schedAfter, " ") != strings.Join(schedBefore, " ") {
		t.Errorf("kube-scheduler flags not restored:\nbefore %v\nafter  %v", schedBefore, schedAfter)
	}
	if _, err := clients(t).Typed.FlowcontrolV1().FlowSchemas().Get(context.Background(), "agent-sandbox-critical", metav1.GetOptions{}); err == nil {
		t.Error("the insulation overlay was left installed")
	}
}

func ptrStr(p *float64) string {
	if p == nil {
		return "nil"
	}
	return strconv.FormatFloat(*p, 'f', 3, 64)
}

// faultReport checks that a fault run's report.html, rendered in headless Chromium, and its
// terminal output show the cell's fault timeline and statistics (wants: texts of the section).
func faultReport(t *testing.T, dir, stdout, cell, fault string, wants ...string) {
	t.Helper()
	if !strings.Contains(stdout, fmt.Sprintf("fault %s (%s):", cell, fault)) || !strings.Contains(stdout, "armed") {
		t.Errorf("the terminal output shows no fault timeline for %s", cell)
	}
	dom, external := browsertest.Load(t, browsertest.Chromium(t), filepath.Join(dir, "report.html"))
	i := bytes.Index(dom, []byte(`id="faults"`))
	j := bytes.Index(dom, []byte(`id="crosscheck"`))
	if i < 0 || j < i {
		t.Fatalf("rendered report has no fault section")
	}
	section := string(dom[i:j])
	if strings.Contains(section, "injected no faults") {
		t.Errorf("the report says the run injected no faults")
	}
	for _, want := range append([]string{cell + ": " + fault, "armed", "reverted"}, wants...) {
		if !strings.Contains(section, want) {
			t.Errorf("the rendered fault section lacks %q:\n%s", want, section)
		}
	}
	for _, u := range external {
		t.Errorf("report.html made a request: %s", u)
	}
}
