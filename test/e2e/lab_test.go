//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/brakebench/brakebench/internal/recorder"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
	"github.com/brakebench/brakebench/suites"
)

func TestLabWarmClaim(t *testing.T) {
	const ns, pool = "e2e-warm-claim", suites.PoolName
	var rec *recorder.Recorder
	f := features.New("warm claim on the lab").
		Setup(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			c := clients(t)
			if _, err := c.Typed.CoreV1().Namespaces().Create(ctx, nsObject(ns), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			var err error
			if rec, err = recorder.Start(ctx, c, ns); err != nil {
				t.Fatal(err)
			}
			if err := c.Apply(ctx, suites.BenchObjects(ns, 10, "registry.k8s.io/pause:3.10", false), nil); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("the pool fills to 10 Ready", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if !rec.WaitFor(ctx, 2*time.Minute, func() bool { r, _ := rec.PoolReady(pool); return r == 10 }) {
				r, _ := rec.PoolReady(pool)
				t.Fatalf("pool Ready %d/10", r)
			}
			return ctx
		}).
		Assess("a claim becomes Ready on a warm sandbox", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			claim := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
				"metadata": map[string]any{"name": "one", "namespace": ns},
				"spec":     map[string]any{"warmPoolRef": map[string]any{"name": pool}},
			}}
			if _, err := clients(t).Dynamic.Resource(agentsandbox.ClaimGVR).Namespace(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if !rec.WaitFor(ctx, time.Minute, func() bool { return rec.ClaimReady("one") }) {
				t.Fatal("claim not Ready within a minute")
			}
			snap := rec.Snapshot()
			sb := snap.Sandboxes[snap.Claims["one"].Sandbox]
			if sb.LaunchType != "warm" || !sb.FromPool {
				t.Fatalf("claim bound sandbox %q with launch-type %q (from pool: %v), want a warm pool member", snap.Claims["one"].Sandbox, sb.LaunchType, sb.FromPool)
			}
			return ctx
		}).
		Assess("the pool refills to 10", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			refilled := rec.WaitFor(ctx, 2*time.Minute, func() bool {
				snap := rec.Snapshot()
				members := 0
				for _, s := range snap.Sandboxes {
					if s.FromPool {
						members++
					}
				}
				r, n := rec.PoolReady(pool)
				return members == 11 && r == 10 && n == 10 // 10 original + 1 refill
			})
			if !refilled {
				r, n := rec.PoolReady(pool)
				t.Fatalf("pool did not refill: replicas %d ready %d", n, r)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if rec != nil {
				rec.Stop()
			}
			_ = clients(t).Typed.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestLabUpTwiceIsSafe(t *testing.T) {
	before, err := theLab.Load() // other tests restart the controller: compare with now
	if err != nil {
		t.Fatal(err)
	}
	again, err := theLab.Up(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Server != before.Server || again.Controller == nil || before.Controller == nil || again.Controller.PID != before.Controller.PID {
		t.Fatalf("second up changed the lab: server %s -> %s, controller %+v -> %+v", before.Server, again.Server, before.Controller, again.Controller)
	}
}

// TestInterruptedUpLeavesNothing sends SIGINT (Ctrl-C) to `brakebench lab up` once the control
// plane is starting, and checks that nothing of that lab is left.
func TestInterruptedUpLeavesNothing(t *testing.T) {
	bin := buildCLI(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "lab", "up", "--set", "lab.name=bb-interrupt", "--set", "lab.stateDir="+dir)
	cmd.Env = os.Environ()
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the lab's kube-apiserver runs (its command line names the state dir).
	deadline := time.Now().Add(2 * time.Minute)
	for !apiserverRunningUnder(dir) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("kube-apiserver of the interrupted lab never started:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit code %d (%v), want 130 (interrupted)\n%s", code, err, out)
	}
	l, lerr := newLab("bb-interrupt", dir)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if left := l.Leftovers(); len(left) > 0 {
		t.Errorf("processes left after Ctrl-C during up: %v\n%s", left, out)
		_ = l.Down(context.Background())
	}
	if _, err := os.Stat(filepath.Join(dir, "bb-interrupt")); !os.IsNotExist(err) {
		t.Errorf("state dir left after Ctrl-C during up")
	}
}

// apiserverRunningUnder reports whether a kube-apiserver process (by its executable, not a
// command line that merely mentions it, as kwokctl's does) runs for the lab in dir.
func apiserverRunningUnder(dir string) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || filepath.Base(exe) != "kube-apiserver" {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(raw), dir) {
			return true
		}
	}
	return false
}
