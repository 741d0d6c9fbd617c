//go:build e2e

package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/cli"
)

// TestUpgradeToV101OnTheLab runs the upgrade preset between v0.5.5 and v1.0.1 on the lab's
// controller process, in both directions: every cell runs at its version (v1.0.1 has no webhook
// and no --enable-webhook, which brakebench passed to every version before and which made v1.0.1
// exit at start), and the controller's log is kept with the run's output.
func TestUpgradeToV101OnTheLab(t *testing.T) {
	for _, dir := range [][2]string{{"v0.5.5", "v1.0.1"}, {"v1.0.1", "v0.5.5"}} {
		t.Run(dir[0]+"->"+dir[1], func(t *testing.T) {
			out := t.TempDir()
			args := []string{"run", "warmpool-burst", "--preset", "upgrade", "--from", dir[0], "--to", dir[1], "--out", out}
			for _, s := range []string{"workload.pool=10", "workload.claims=10", "matrix.repetitions=1", "matrix.brakes=none,replenish-delay", "brakes.replenishDelay=2s"} {
				args = append(args, "--set", s)
			}
			_, err := runCLI(t, args...)
			var exit *cli.ExitError
			if err != nil && !(errors.As(err, &exit) && exit.Code == cli.ExitGateFailed) {
				t.Fatalf("upgrade %s -> %s: %v", dir[0], dir[1], err)
			}
			r, rdir := readRun(t, out, "warmpool-burst")
			if len(r.Cells) != 4 {
				t.Fatalf("%d cells, want 4", len(r.Cells))
			}
			for _, c := range r.Cells {
				if c.Error != "" || c.NotApplicable != "" {
					t.Errorf("%s: error %q, not applicable %q", c.Name, c.Error, c.NotApplicable)
					continue
				}
				if want := strings.SplitN(c.Name, "@", 2)[1]; c.Controller.Version != want {
					t.Errorf("%s ran controller %s", c.Name, c.Controller.Version)
				}
				if c.Stats.Failed != 0 || c.Stats.Total != 10 {
					t.Errorf("%s: %d/%d claims failed", c.Name, c.Stats.Failed, c.Stats.Total)
				}
				// Write accounting from the API server's counters: the generator's one claim POST
				// each (none refused here), and the controller's own writes on top.
				if w := c.Stats.Writes; w == nil || w.PerClaim["sandboxclaims.post"] != 1 || w.TotalPerClaim <= 1 || w.AllReadySeconds == nil {
					t.Errorf("%s: write accounting %+v", c.Name, w)
				} else {
					t.Logf("%s: %.2f writes/claim (claims %v), 409/claim %.2f, all Ready at %.1f s", c.Name, w.TotalPerClaim, w.PerClaim, w.ConflictsPerClaim, *w.AllReadySeconds)
				}
			}
			if err != nil {
				t.Logf("gates failed (an invariant of a version, not a crash): %v", err)
			}
			if fi, err := os.Stat(filepath.Join(rdir, "logs", "agent-sandbox-controller.log")); err != nil || fi.Size() == 0 {
				t.Errorf("controller log not kept with the run: %v", err)
			}
		})
	}
}

// TestControllerExitAtStartIsDiagnosed gives the controller an argument it defines but cannot
// start with (a health probe port out of range): the cell's error names the cause from the
// controller's own log, not its usage or "did not become ready" alone, the run still writes its
// report, and the log is in the run's output directory. The run's end restores the controller.
func TestControllerExitAtStartIsDiagnosed(t *testing.T) {
	out := t.TempDir()
	args := []string{"run", "warmpool-burst", "--out", out}
	for _, s := range []string{"workload.pool=4", "workload.claims=4", "matrix.repetitions=1", "matrix.brakes=none", "matrix.warmup=0",
		"matrix.controllerArgs=--health-probe-bind-address=127.0.0.1:70000"} {
		args = append(args, "--set", s)
	}
	_, err := runCLI(t, args...)
	if err == nil {
		t.Fatal("a run whose controller cannot start succeeded")
	}
	r, rdir := readRun(t, out, "warmpool-burst")
	if len(r.Cells) != 1 {
		t.Fatalf("%d cells", len(r.Cells))
	}
	msg := r.Cells[0].Error
	if !strings.Contains(msg, "did not become ready: ") || !strings.Contains(msg, "70000") || strings.Contains(msg, "Usage of") {
		t.Errorf("cell error does not name the cause: %q", msg)
	}
	if _, err := os.Stat(filepath.Join(rdir, "report.html")); err != nil {
		t.Errorf("no report: %v", err)
	}
	log, err := os.ReadFile(filepath.Join(rdir, "logs", "agent-sandbox-controller.log"))
	if err != nil || !strings.Contains(string(log), "70000") {
		t.Errorf("kept log lacks the cause (%v)", err)
	}
	// The lab's controller runs again with its own flags: the next test needs it.
	if st, err := theLab.Load(); err != nil || st.Controller == nil {
		t.Fatalf("controller not restored: %v", err)
	} else if strings.Contains(strings.Join(st.Controller.Extra, " "), "70000") {
		t.Errorf("controller restored with the cell's args: %v", st.Controller.Extra)
	}
}
