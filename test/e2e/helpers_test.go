//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/brakebench/brakebench/internal/kube"
)

var (
	cliOnce sync.Once
	cliPath string
	cliErr  error
	cliOut  []byte
)

// cliBinary builds cmd/brakebench once per test binary (TestMain's background build runs it too).
func cliBinary() (string, error) {
	cliOnce.Do(func() {
		dir, err := exec.Command("mktemp", "-d").Output()
		if err != nil {
			cliErr = err
			return
		}
		cliPath = filepath.Join(string(dir[:len(dir)-1]), "brakebench")
		cliOut, cliErr = exec.Command("go", "build", "-o", cliPath, "../../cmd/brakebench").CombinedOutput()
	})
	if cliErr != nil {
		return "", fmt.Errorf("build brakebench: %w\n%s", cliErr, cliOut)
	}
	return cliPath, nil
}

// buildCLI is cliBinary for a test: it fails the test if the build failed.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin, err := cliBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

var (
	staticOnce sync.Once
	staticPath string
	staticErr  error
)

// buildStaticCLI builds cmd/brakebench without cgo (a static binary, for an image with an empty
// base) once per test binary.
func buildStaticCLI(t *testing.T) string {
	t.Helper()
	staticOnce.Do(func() {
		staticPath = filepath.Join(os.TempDir(), fmt.Sprintf("brakebench-static-%d", os.Getpid()))
		cmd := exec.Command("go", "build", "-o", staticPath, "../../cmd/brakebench")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			staticErr = fmt.Errorf("%w\n%s", err, out)
		}
	})
	if staticErr != nil {
		t.Fatalf("build a static brakebench: %v", staticErr)
	}
	return staticPath
}

// freePort asks the kernel for an unused port.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func nsObject(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kube.ManagedByKey: kube.ManagedByValue}}}
}

// killRunWhen starts `brakebench run` with args on the test lab, waits (up to timeout) until
// armed reports the run has changed the cluster, SIGKILLs it, checks something was left behind
// (left), runs `brakebench cleanup --all`, checks its output names restored, and that left is
// empty afterwards.
func killRunWhen(t *testing.T, args []string, armed func() bool, timeout time.Duration, left func(*testing.T) []string, restored string) {
	t.Helper()
	killRunWhenThenCleanup(t, args, armed, timeout, left, []string{"cleanup", "--all"}, restored)
}

// killRunWhenThenCleanup is killRunWhen with the cleanup command's arguments given (another
// cluster than the lab's default provider).
func killRunWhenThenCleanup(t *testing.T, args []string, armed func() bool, timeout time.Duration, left func(*testing.T) []string, cleanupArgs []string, restored string) {
	t.Helper()
	bin := buildCLI(t)
	cmd := exec.Command(bin, append(append([]string{"run"}, args...), "--out", t.TempDir(), "--set", "lab.name="+labName, "--set", "lab.stateDir="+stateDir)...)
	cmd.Env = os.Environ()
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(timeout)
	for !armed() {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the run never reached the point to kill it at:\n%s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if len(left(t)) == 0 {
		t.Fatal("nothing was left to clean up: the test did not exercise cleanup")
	}
	stdout, err := runCLI(t, cleanupArgs...)
	if err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	if !strings.Contains(stdout, restored) {
		t.Errorf("cleanup did not report %q", restored)
	}
	if l := left(t); len(l) > 0 {
		t.Errorf("left after cleanup: %v", l)
	}
}
