//go:build e2e

package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/browsertest"
)

// TestTrendOfLabRuns runs five small bursts on the lab, then `brakebench trend` over their
// results: trend.html renders in headless Chromium without a network request, says five runs are
// too few to claim a change point, and --gate passes.
func TestTrendOfLabRuns(t *testing.T) {
	runs := t.TempDir()
	for i := 0; i < 5; i++ {
		if _, err := runCLI(t, "run", "warmpool-burst", "--out", runs, "--set", "workload.pool=5", "--set", "workload.claims=5",
			"--set", "matrix.brakes=none", "--set", "matrix.repetitions=1"); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(runs, "warmpool-burst-*", "results.json")); len(m) != 5 {
		t.Fatalf("want 5 results, got %v", m)
	}
	out := t.TempDir()
	stdout, err := runCLI(t, "trend", runs, "--out", out, "--gate")
	if err != nil {
		t.Fatalf("trend --gate: %v", err)
	}
	if !strings.Contains(stdout, "trend of warmpool-burst over 5 runs") || !strings.Contains(stdout, "5 runs: change points need at least 10") {
		t.Errorf("trend output:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(out, "trend.json")); err != nil {
		t.Error(err)
	}
	dom, external := browsertest.Load(t, browsertest.Chromium(t), filepath.Join(out, "trend.html"))
	for _, want := range []string{"brakebench trend: warmpool-burst", "No series' newest run lies after a detected regression", "none: claim.p99_ms"} {
		if !bytes.Contains(dom, []byte(want)) {
			t.Errorf("rendered trend.html lacks %q", want)
		}
	}
	if n := bytes.Count(dom, []byte("<svg")); n < 3 {
		t.Errorf("rendered trend.html has %d charts", n)
	}
	for _, u := range external {
		t.Errorf("trend.html made a request: %s", u)
	}
}
