package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/provider"
)

// logCluster is a cluster whose controller log is known (every other method: nil, unused).
type logCluster struct {
	provider.Cluster
	log string
}

func (l logCluster) ControllerLog(context.Context) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader(l.log)), nil
}

// The controller's log goes with the run's output: the lab's state directory, where it was
// written, is gone after the run (a v1.0.1 controller that exited at start named a log that no
// longer existed).
func TestRunKeepsTheControllerLog(t *testing.T) {
	dir := t.TempDir()
	var stdout bytes.Buffer
	a := &app{stdout: &stdout, stderr: io.Discard}
	const log = "flag provided but not defined: -enable-webhook\nUsage of agent-sandbox-controller:\n"
	a.keepControllerLog(context.Background(), logCluster{log: log}, dir)
	got, err := os.ReadFile(filepath.Join(dir, "logs", "agent-sandbox-controller.log"))
	if err != nil || string(got) != log {
		t.Fatalf("kept log %q, %v; want %q", got, err, log)
	}
	if !strings.Contains(stdout.String(), "controller log: "+filepath.Join(dir, "logs", "agent-sandbox-controller.log")) {
		t.Errorf("stdout %q does not say where the log is", stdout.String())
	}
	// A cluster without a controller log: nothing written, nothing said.
	stdout.Reset()
	other := t.TempDir()
	a.keepControllerLog(context.Background(), struct{ provider.Cluster }{}, other)
	if entries, _ := os.ReadDir(other); len(entries) != 0 || stdout.Len() != 0 {
		t.Errorf("wrote %v, said %q", entries, stdout.String())
	}
}
