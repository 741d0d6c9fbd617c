//go:build e2e

// Package e2e holds the end-to-end tests on the embedded lab. One lab serves the whole test
// binary (TestMain brings it up once and takes it down at the end, then fails the binary if any
// process or state of it is left); run this package alone (-p 1): two labs on 2 cores distort
// every number and compete for ports.
package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/lab"
	"github.com/brakebench/brakebench/internal/labbuild"
	"github.com/brakebench/brakebench/internal/progress"
)

const labName = "bb-e2e"

var (
	testenv  env.Environment
	theLab   *lab.Lab
	labState *lab.State
	stateDir string
	// optional is TestMain's background build of Kueue, LWS and KEDA; nil when none was started.
	optional *optionalBuild
)

// labConfig is the test lab's configuration (BRAKEBENCH_* overrides apply, e.g. the cache dir).
func labConfig(name, dir string) (*config.Resolved, error) {
	// GPU capacity on every node lets the gpu-faults tests run on the same lab.
	// One real node (containerd, runc, kubelet) for the in-cluster paths (realnode_test.go).
	return config.Loader{Env: os.Environ(), Sets: []string{"lab.name=" + name, "lab.stateDir=" + dir, "lab.nodes.gpus=8", "lab.realNode=true"}}.Load()
}

func newLab(name, dir string) (*lab.Lab, error) {
	cfg, err := labConfig(name, dir)
	if err != nil {
		return nil, err
	}
	v, err := labbuild.LoadVersions()
	if err != nil {
		return nil, err
	}
	return lab.New(cfg.Lab, v, progress.New(os.Stderr))
}

func TestMain(m *testing.M) {
	var err error
	stateDir, err = os.MkdirTemp("", "brakebench-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	theLab, err = newLab(labName, stateDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	// Building is part of setup: on a fresh machine it takes ~20 minutes, cached seconds.
	labState, err = theLab.Up(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lab up:", err)
		_ = theLab.Down(context.Background())
		os.Exit(1)
	}
	testenv = env.NewWithConfig(envconf.NewWithKubeConfig(labState.Kubeconfig))
	// Lab up needs only the core components and the real node's; the ones only some tests need
	// build in the background, at the lowest CPU priority, while the other tests run.
	flag.Parse()
	var watchdog *time.Timer
	if names, why := optionalToBuild(); len(names) == 0 {
		fmt.Fprintf(os.Stderr, "no background build of %s: %s\n", strings.Join(optionalComponents(), ","), why)
	} else if optional, err = startOptionalBuild(names, filepath.Join(stateDir, "optional-build.log")); err != nil {
		// The tests that need them build them themselves (under the same per-component lock).
		fmt.Fprintf(os.Stderr, "no background build of %s: %v\n", strings.Join(names, ","), err)
		optional = nil
	} else if timeout, ok := flag.Lookup("test.timeout").Value.(flag.Getter).Get().(time.Duration); ok && timeout > time.Minute {
		// go test's timeout kills this binary without running the code after m.Run; end the
		// build a minute before that, so no compiler outlives the test binary.
		watchdog = time.AfterFunc(timeout-time.Minute, func() { _, _ = optional.stop() })
	}
	code := testenv.Run(m)

	// The background build ends with the tests: a build the tests did not wait for is killed.
	if optional != nil {
		if watchdog != nil {
			watchdog.Stop()
		}
		killed, err := optional.stop()
		switch {
		case err != nil:
			fmt.Fprintln(os.Stderr, "FAIL: background build:", err)
			code = 1
		case killed:
			fmt.Printf("background build of %s: stopped after %s, unfinished (log %s)\n", strings.Join(optional.names, ","), optional.took().Round(time.Second), optional.log)
		default:
			fmt.Printf("background build of %s: %s after %s\n", strings.Join(optional.names, ","), optional.outcome(), optional.took().Round(time.Second))
		}
	}

	// Lab down must leave no process and no state directory, and nothing of the real node: no
	// process, mount, cgroup, container, veth, bridge or iptables rule, no changed sysctl.
	realNode := labState.RealNode
	if err := theLab.Down(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: lab down:", err)
		code = 1
	}
	if left := theLab.Leftovers(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: lab down left processes running: %v\n", left)
		code = 1
	}
	if _, err := os.Stat(filepath.Join(stateDir, labName)); !os.IsNotExist(err) {
		fmt.Fprintf(os.Stderr, "FAIL: lab down left its state directory %s\n", filepath.Join(stateDir, labName))
		code = 1
	}
	if realNode == nil {
		fmt.Fprintln(os.Stderr, "FAIL: the test lab had no real node")
		code = 1
	} else if left := realNode.Leftovers(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: lab down left of the real node: %v\n", left)
		code = 1
	}
	if code == 0 {
		fmt.Println("lab down: no process and no state directory left, nothing of the real node (processes, mounts, cgroups, links, iptables rules, sysctls)")
	}
	_ = os.RemoveAll(stateDir)
	// The brakebench binaries the tests built (~100 MB each) go too.
	if cliPath != "" {
		_ = os.RemoveAll(filepath.Dir(cliPath))
	}
	if staticPath != "" {
		_ = os.Remove(staticPath)
	}
	os.Exit(code)
}

func clients(t testing.TB) *kube.Clients {
	t.Helper()
	rc, err := kube.RESTConfig(labState.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS, rc.Burst = -1, 0 // like the harness: no client-side limiter (the loadgen benchmark's plain loop uses this)
	c, err := kube.NewClients(rc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// optionalComponents are the lab components only some tests need, in the order the background
// build builds them: KEDA first, for the first zz_ file's tests (zz_autoscale_test.go); every
// test that needs one of them is in a zz_ file, so it runs after all the others.
func optionalComponents() []string { return []string{"keda", "kueue", "lws", "karpenter"} }

// optionalNeeds maps each test that uses optional components to them (the zz_ files' tests call
// waitOptionalBuild; the real-node one waits for the component's build lock instead).
func optionalNeeds() map[string][]string {
	return map[string][]string{
		"TestKubeconfigPathOnTheRealNode":       {"keda"},
		"TestGangQuotaGateOnOff":                {"kueue", "lws"},
		"TestGangQuotaSIGKILLThenCleanup":       {"kueue", "lws"},
		"TestPoolAutoscalingKEDAvsControl":      {"keda"},
		"TestPoolAutoscalingSIGKILLThenCleanup": {"keda"},
		"TestZZKarpenterRepairBreaker":          {"karpenter"},
		"TestZZKarpenterProvisioningAndBuffer":  {"karpenter"},
		"TestZZNodeRepairCells":                 {"karpenter"},
		"TestZZNodeRepairSIGKILLThenCleanup":    {"karpenter"},
		"TestZZAutoscaleOnKarpenterNodes":       {"karpenter", "keda"},
	}
}

// optionalToBuild returns the optional components to build in the background: those a test
// selected by -run needs that are not cached yet; why says why there are none.
func optionalToBuild() (names []string, why string) {
	run := flag.Lookup("test.run").Value.String()
	needed := map[string]bool{}
	for test, comps := range optionalNeeds() {
		if runSelectsAny(run, []string{test}) {
			for _, c := range comps {
				needed[c] = true
			}
		}
	}
	if len(needed) == 0 {
		return nil, "no test selected by -run needs them"
	}
	cfg, err := labConfig(labName, stateDir)
	if err != nil {
		return nil, err.Error()
	}
	cache, err := lab.CacheDir(cfg.Lab)
	if err != nil {
		return nil, err.Error()
	}
	v, err := labbuild.LoadVersions()
	if err != nil {
		return nil, err.Error()
	}
	b, addons := &labbuild.Builder{CacheDir: cache}, labbuild.Addons(v)
	for _, n := range optionalComponents() {
		if needed[n] && !b.Cached(addons[n]) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil, "all that the selected tests need is cached"
	}
	return names, ""
}

// runSelectsAny reports whether go test's -run pattern selects one of tests; a pattern it does
// not read (subtest patterns with a slash, an invalid one) counts as selecting them.
func runSelectsAny(run string, tests []string) bool {
	if run == "" || strings.Contains(run, "/") {
		return true
	}
	re, err := regexp.Compile(run)
	if err != nil {
		return true
	}
	for _, name := range tests {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

// optionalBuild is a `brakebench lab build --with ...` running under nice -n 19 in its own process
// group, so stopping it reaches go build's compilers and linkers too.
type optionalBuild struct {
	names []string
	log   string
	cmd   *exec.Cmd
	start time.Time
	done  chan struct{} // closed when the process has exited; err and end are set then
	err   error
	end   time.Time
}

// startOptionalBuild starts the build of the named components, its output going to logPath.
func startOptionalBuild(names []string, logPath string) (*optionalBuild, error) {
	cli, err := cliBinary()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create the build log: %w", err)
	}
	cmd := exec.Command("nice", "-n", "19", cli, "lab", "build", "--with", strings.Join(names, ","))
	cmd.Env = os.Environ() // the same lab cache as the test lab (BRAKEBENCH_LAB_CACHEDIR)
	cmd.Stdout, cmd.Stderr = logf, logf
	// If this test binary dies without stopping it (a panic), the CLI gets SIGTERM and kills its
	// go command.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start %s: %w", cmd, err)
	}
	o := &optionalBuild{names: names, log: logPath, cmd: cmd, start: time.Now(), done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		_ = logf.Close()
		o.err, o.end = err, time.Now()
		close(o.done)
	}()
	fmt.Fprintf(os.Stderr, "background build of %s started: pid %d, nice 19, log %s\n", strings.Join(names, ","), cmd.Process.Pid, logPath)
	return o, nil
}

// took is how long the build ran (so far).
func (o *optionalBuild) took() time.Duration {
	select {
	case <-o.done:
		return o.end.Sub(o.start)
	default:
		return time.Since(o.start)
	}
}

// outcome describes a finished build.
func (o *optionalBuild) outcome() string {
	if o.err != nil {
		return "FAILED (" + o.err.Error() + ")"
	}
	return "built"
}

// stop ends the build if it still runs (SIGTERM to its process group, SIGKILL 5 s later) and
// checks that no process of its group is left; killed says whether it had to end it.
func (o *optionalBuild) stop() (killed bool, err error) {
	pgid := o.cmd.Process.Pid
	select {
	case <-o.done:
	default:
		killed = true
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-o.done:
		case <-time.After(5 * time.Second):
		}
	}
	// Whatever the CLI did, nothing of its group may outlive it (go build's compilers, linkers).
	if len(groupMembers(pgid)) > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	<-o.done
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := groupMembers(pgid)
		if len(left) == 0 {
			return killed, nil
		}
		if time.Now().After(deadline) {
			return killed, fmt.Errorf("processes %v of the background build (process group %d) are still running", left, pgid)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// groupMembers lists the live (not zombie) processes of process group pgid.
func groupMembers(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(raw, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(raw[i+1:]))
		if len(f) > 2 && f[0] != "Z" && f[0] != "X" && f[2] == strconv.Itoa(pgid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitOptionalBuild waits for TestMain's background build of Kueue, LWS and KEDA (call it first
// in a test that needs them) and fails the test with the end of the build's log if it failed.
// Without a background build (all cached, or it could not start) it returns at once: the suite
// builds what it needs itself.
func waitOptionalBuild(t *testing.T) {
	t.Helper()
	if optional == nil {
		return
	}
	start := time.Now()
	<-optional.done
	if w := time.Since(start); w > time.Second {
		t.Logf("waited %s for the background build of %s", w.Round(time.Second), strings.Join(optional.names, ","))
	}
	if optional.err != nil {
		raw, _ := os.ReadFile(optional.log)
		if len(raw) > 4000 {
			raw = raw[len(raw)-4000:]
		}
		t.Fatalf("background build of %s failed (%v); the end of its log %s:\n%s", strings.Join(optional.names, ","), optional.err, optional.log, raw)
	}
}
