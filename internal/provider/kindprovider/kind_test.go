package kindprovider

import (
	"context"
	"errors"
	"strings"
	"testing"
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
