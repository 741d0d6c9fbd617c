package kindprovider

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/config"
)

// Without a Docker engine the kind provider must refuse with a clear reason before doing anything.
func TestKindNeedsDocker(t *testing.T) {
	if DockerAvailable(context.Background()) == nil {
		t.Skip("a Docker engine answers here; this test covers machines without one")
	}
	_, err := NewCluster("bb-test", "kindest/node:v1.37.0", t.TempDir()).Create(context.Background())
	if !errors.Is(err, ErrNoDocker) || !strings.Contains(err.Error(), "needs a running Docker engine") {
		t.Fatalf("err = %v", err)
	}
}

// A failed Connect leaves no temporary directory behind (it used to leave its kubeconfig
// directory on every failure). Without docker on PATH, Create fails after the directory exists.
func TestConnectWithoutDockerLeavesNothing(t *testing.T) {
	emptyPath, tmp := t.TempDir(), t.TempDir()
	t.Setenv("PATH", emptyPath)
	t.Setenv("TMPDIR", tmp)
	p, err := Factory(nil, "v0.5.5")(&config.Resolved{Config: config.Default()})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := p.Connect(context.Background())
	if cl != nil || !errors.Is(err, ErrNoDocker) || !strings.Contains(err.Error(), "no docker command on PATH") {
		t.Fatalf("Connect = %v, %v; want ErrNoDocker", cl, err)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left behind: %s", e.Name())
	}
}
