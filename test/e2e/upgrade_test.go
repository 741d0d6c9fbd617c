//go:build e2e

package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/cli"
	"github.com/brakebench/brakebench/internal/results"
)

// TestUpgradePreset runs a reduced warmpool-burst at two versions the proxy serves (v0.5.3, which
// has no refill brakes, and v0.5.5): one results file holds both, every cell has its over-creation
// ratio, the brake cell of v0.5.3 is "not applicable", and the compare view is written. Its gates
// select cells by axis: one written once holds per version, one deliberately fails for v0.5.3,
// and the run exits 3 for it.
func TestUpgradePreset(t *testing.T) {
	out := t.TempDir()
	gateFile := filepath.Join(out, "gates.yaml")
	if err := os.WriteFile(gateFile, []byte(`gates:
- name: every claim of the none cell becomes Ready, per version
  expr: cell(none).claims.failed == 0
- name: deliberately failing for v0.5.3
  expr: cell(brake=none, version=v0.5.3).claims.failed >= 1
`), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, err := runCLI(t, "run", "warmpool-burst", "--preset", "upgrade", "--from", "v0.5.3", "--to", "v0.5.5", "--out", out,
		"--set", "workload.pool=30", "--set", "workload.claims=30", "--set", "matrix.repetitions=1",
		"--set", "matrix.brakes=none,max-refill-rate", "--set", "brakes.maxRefillRate=3", "--gates", gateFile)
	var exit *cli.ExitError
	if !errors.As(err, &exit) || exit.Code != cli.ExitGateFailed {
		t.Fatalf("want exit %d (a gate failed), got %v", cli.ExitGateFailed, err)
	}
	r, dir := readRun(t, out, "warmpool-burst")
	byName := map[string]results.Cell{}
	for _, c := range r.Cells {
		byName[c.Name] = c
	}
	if len(byName) != 4 {
		t.Fatalf("cells %v", byName)
	}
	na := byName["max-refill-rate@v0.5.3"]
	if !strings.Contains(na.NotApplicable, "has no --sandbox-warm-pool-max-refill-rate") || len(na.Claims) != 0 {
		t.Errorf("v0.5.3 brake cell: %+v", na.NotApplicable)
	}
	for _, name := range []string{"none@v0.5.3", "none@v0.5.5", "max-refill-rate@v0.5.5"} {
		c := byName[name]
		if c.Error != "" || c.NotApplicable != "" {
			t.Fatalf("%s: %s %s", name, c.Error, c.NotApplicable)
		}
		if c.Controller.Version != strings.SplitN(name, "@", 2)[1] {
			t.Errorf("%s ran controller %s", name, c.Controller.Version)
		}
		cr := c.Stats.Correctness
		// The ratios must be measured; whether the refill completed within the window is the
		// warmpool tests' assertion (a stalled refill shows here as a ratio below 1).
		if cr.RefillCreatesPerSlot == nil || cr.PodCreatesPerSandbox == nil || cr.FillCreatesPerSlot == nil ||
			cr.FillAPICreatesPerSlot == nil || cr.FillAPIDeletes == nil || cr.RefillAPICreatesPerSlot == nil || cr.RefillAPIDeletes == nil {
			t.Errorf("%s: over-creation ratios missing: %+v", name, cr)
		} else {
			t.Logf("%s: fill: %.2f pool creates per slot seen, %.2f sandbox POSTs per slot and %.0f DELETEs counted; refill: %.2f creates per slot seen, %.2f POSTs per slot and %.0f DELETEs counted; pod creates per sandbox %.2f",
				name, *cr.FillCreatesPerSlot, *cr.FillAPICreatesPerSlot, *cr.FillAPIDeletes, *cr.RefillCreatesPerSlot, *cr.RefillAPICreatesPerSlot, *cr.RefillAPIDeletes, *cr.PodCreatesPerSandbox)
		}
		if c.Stats.Failed != 0 || c.Stats.Total != 30 {
			t.Errorf("%s: %d/%d failed", name, c.Stats.Failed, c.Stats.Total)
		}
	}
	// The file's two gates, then the built-in invariant gate over every version's cells: it fails
	// exactly when some repetition of some cell violated an invariant (v0.5.3's over-fill), and the
	// summary says which, per repetition.
	violated := false
	for _, s := range r.Summary {
		for _, iv := range s.Invariants {
			if iv.Violated > 0 {
				violated = true
				t.Logf("%s %s: %s", s.Name, iv.Key, iv.Text)
				if !strings.Contains(iv.Text, "violated in ") {
					t.Errorf("%s %s: text %q", s.Name, iv.Key, iv.Text)
				}
			}
		}
	}
	if len(r.Gates) != 3 || !r.Gates[0].Passed || r.Gates[1].Passed || !strings.Contains(r.Gates[1].Message, "0 >= 1 is false") ||
		r.Gates[2].Name != analysis.InvariantGateName || r.Gates[2].Passed == violated {
		t.Errorf("gates (an invariant violated: %v): %+v", violated, r.Gates)
	} else {
		t.Logf("invariants: %s", r.Gates[2].Message)
	}
	if r.CellAxes["none@v0.5.3"]["version"] != "v0.5.3" || r.AxisPrimary != "brake" {
		t.Errorf("cell axes not recorded: %v %q", r.CellAxes, r.AxisPrimary)
	}
	if r.Cluster.Distribution != "kwok-lab" || r.Cluster.RTTms <= 0 {
		t.Errorf("provider metadata %+v", r.Cluster)
	}
	if _, err := os.Stat(filepath.Join(dir, "compare.html")); err != nil {
		t.Errorf("compare view: %v", err)
	}
	if !strings.Contains(stdout, "before you upgrade: v0.5.3 (A) -> v0.5.5 (B)") || !strings.Contains(stdout, "correctness.refill_creates_per_slot") {
		t.Errorf("compare view not printed")
	}
}
