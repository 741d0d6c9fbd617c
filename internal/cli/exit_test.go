package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/results"
)

// synthetic writes a warmpool-burst results.json with four repetitions of cell "none" whose
// claim latencies are scaled by f (and a little by repetition), and returns its path.
func synthetic(t *testing.T, dir string, f float64) string {
	t.Helper()
	r := &results.Results{Schema: results.SchemaVersion, Suite: "warmpool-burst", RunID: fmt.Sprintf("r%g", f), Seed: 1,
		StartedAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Versions: map[string]string{"agent-sandbox": "v0.5.5"},
		Cluster: results.Cluster{Provider: "lab"}, Baseline: "none"}
	for rep, k := range []float64{0.98, 1.0, 1.01, 1.03} {
		c := results.Cell{ID: fmt.Sprintf("none#%d", rep+1), Name: "none", Rep: rep + 1}
		for i := 0; i < 100; i++ {
			l := (500 + 5*float64(i)) * f * k
			c.Claims = append(c.Claims, results.Claim{Name: fmt.Sprintf("c%d", i), LatencyMS: &l, LaunchType: "warm"})
		}
		c.Stats.Total, c.Stats.Warm = 100, 100
		r.Cells = append(r.Cells, c)
	}
	r.Summary = analysis.Summarize(r.Cells, []string{"none"}, "none", 1)
	d := filepath.Join(dir, r.RunID)
	p, err := results.Write(d, r)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The exit codes of the commands that need no cluster: 0 ok, 2 bad input (before anything
// runs), 3 a gate or a regression.
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	a, same, slower := synthetic(t, dir, 1), synthetic(t, dir, 1.0001), synthetic(t, dir, 2)
	badGates := filepath.Join(dir, "bad.yaml")
	_ = os.WriteFile(badGates, []byte("gates:\n- expr: cell(none).claim.p99 <= 900\n"), 0o644)
	baseGates := filepath.Join(dir, "base.yaml")
	_ = os.WriteFile(baseGates, []byte("gates:\n- expr: cell(none).claim.p99 <= baseline.cell(none).claim.p99 * 1.5\n"), 0o644)
	out := t.TempDir()
	regular := filepath.Join(dir, "a-file")
	_ = os.WriteFile(regular, []byte("x"), 0o644)
	twoDocs := filepath.Join(dir, "two-docs.yaml")
	_ = os.WriteFile(twoDocs, []byte("workload:\n  claims: 3\n---\nworkload:\n  claims: 0\n"), 0o644)
	unreachable := writeKubeconfig(t, "https://127.0.0.1:1")
	// No row may reach Docker or a cluster: without docker (or anything else) on PATH, a kind
	// row that got that far fails with exit 1 instead; its temporary directory must go too.
	tmp := t.TempDir()
	t.Setenv("PATH", t.TempDir())
	t.Setenv("TMPDIR", tmp)
	defer func() {
		if left, _ := filepath.Glob(filepath.Join(tmp, "brakebench-kind-*")); len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
	}()
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"compare identical runs", []string{"compare", a, same, "--out", out, "--gate"}, 0},
		{"compare --gate with a regression", []string{"compare", a, slower, "--out", out, "--gate"}, ExitGateFailed},
		{"compare a regression without --gate", []string{"compare", a, slower, "--out", out}, 0},
		{"compare a missing file", []string{"compare", a, filepath.Join(dir, "nope.json"), "--out", out}, ExitBadInput},
		{"report against a baseline, no regression", []string{"report", same, "--out", out, "--no-gates", "--baseline", a}, 0},
		{"report against a baseline, a regression", []string{"report", slower, "--out", out, "--no-gates", "--baseline", a}, ExitGateFailed},
		{"report with a baseline gate that fails", []string{"report", slower, "--out", out, "--gates", baseGates, "--baseline", a}, ExitGateFailed},
		{"report with a baseline gate that holds", []string{"report", same, "--out", out, "--gates", baseGates, "--baseline", a}, 0},
		{"report with a baseline gate but no baseline", []string{"report", same, "--out", out, "--gates", baseGates}, ExitBadInput},
		{"report with a missing baseline", []string{"report", same, "--out", out, "--baseline", filepath.Join(dir, "nope.json")}, ExitBadInput},
		{"report with a gate comparing ms to a number", []string{"report", same, "--out", out, "--gates", badGates}, ExitBadInput},
		{"report with --gates and --no-gates", []string{"report", same, "--out", out, "--gates", baseGates, "--no-gates"}, ExitBadInput},
		{"no command: help", []string{}, 0},
		{"unknown command", []string{"rnu"}, ExitBadInput},
		{"unknown subcommand", []string{"lab", "upp"}, ExitBadInput},
		{"unknown flag", []string{"report", same, "--colour"}, ExitBadInput},
		{"missing argument", []string{"report"}, ExitBadInput},
		{"too many arguments", []string{"suites", "a", "b", "c"}, ExitBadInput},
		{"trend of nothing", []string{"trend", filepath.Join(dir, "nope")}, ExitBadInput},
		{"report -f (reads no configuration)", []string{"report", same, "--out", out, "-f", baseGates}, ExitBadInput},
		{"compare --set", []string{"compare", a, same, "--out", out, "--set", "workload.claims=5"}, ExitBadInput},
		{"trend with a bad window", []string{"trend", dir, "--min-window", "0"}, ExitBadInput},
		{"config with a second YAML document", []string{"config", "-f", twoDocs}, ExitBadInput},
		{"config of an unknown suite", []string{"config", "nope"}, ExitBadInput},
		{"plan of an unknown suite", []string{"plan", "nope"}, ExitBadInput},
		// --out is created and probed before planning and before any cluster.
		{"run with --out under a regular file", []string{"run", "gang-quota", "--cluster", "kind", "--out", filepath.Join(regular, "sub")}, ExitBadInput},
		{"run with --out a regular file", []string{"run", "gang-quota", "--cluster", "kind", "--out", regular}, ExitBadInput},
		{"run with --out set to a regular file", []string{"run", "gang-quota", "--cluster", "kind", "--set", "out=" + regular}, ExitBadInput},
		// No Docker engine is the environment's failure, not bad input.
		{"run on kind without Docker", []string{"run", "gang-quota", "--cluster", "kind", "--out", out}, ExitRunError},
		{"run with controller.args kind would ignore", []string{"run", "gang-quota", "--cluster", "kind", "--out", out, "--set", "controller.args=--x=1"}, ExitBadInput},
		{"exporter without a reachable cluster", []string{"exporter", "--kubeconfig", unreachable, "--context", "x", "--listen", "127.0.0.1:0", "--timeout", "2s"}, ExitBadInput},
		{"exporter with a zero --timeout", []string{"exporter", "--kubeconfig", unreachable, "--context", "x", "--timeout", "0s"}, ExitBadInput},
	}
	before, _ := os.ReadFile(same)
	defer func() {
		// report without --out writes report.html and junit.xml beside its input, and leaves the
		// input itself as it was.
		var stdout, stderr bytes.Buffer
		root := NewRoot(&stdout, &stderr)
		root.SetArgs([]string{"report", same, "--no-gates", "--baseline", a})
		if err := root.ExecuteContext(context.Background()); err != nil {
			t.Errorf("report in place: %v", err)
		}
		if after, _ := os.ReadFile(same); !bytes.Equal(before, after) {
			t.Error("report rewrote the results file it read")
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(same), "report.html")); err != nil {
			t.Error(err)
		}
	}()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			root := NewRoot(&stdout, &stderr)
			root.SetArgs(c.args)
			err := root.ExecuteContext(context.Background())
			if code := exitCode(err); code != c.code {
				t.Errorf("exit %d (%v), want %d\nstdout:\n%s\nstderr:\n%s", code, err, c.code, stdout.String(), stderr.String())
			}
		})
	}
}

// writeKubeconfig writes a kubeconfig whose context x points at server.
func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	body := "apiVersion: v1\nkind: Config\nclusters:\n- name: x\n  cluster: {server: \"" + server + "\"}\n" +
		"contexts:\n- name: x\n  context: {cluster: x, user: u}\nusers:\n- name: u\n  user: {token: t}\ncurrent-context: x\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// execCLI runs the CLI and returns its exit code, stderr and error.
func execCLI(ctx context.Context, args ...string) (int, string, error) {
	var stdout, stderr bytes.Buffer
	root := NewRoot(&stdout, &stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return exitCode(err), stderr.String(), err
}

// exitCode is the process exit code an error from a command maps to.
func exitCode(err error) int {
	var ee *ExitError
	switch {
	case errors.As(err, &ee):
		return ee.Code
	case err != nil:
		return ExitRunError
	}
	return ExitOK
}

// The exporter gives up on a cluster it cannot use, within --timeout, and names the server (it
// waited silently: a minute, and for ever in watch-list retries of a refused connection).
func TestExporterGivesUp(t *testing.T) {
	// A server that accepts connections and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	for _, server := range []string{"https://127.0.0.1:1", "https://" + ln.Addr().String()} {
		t.Run(server, func(t *testing.T) {
			start := time.Now()
			code, stderr, err := execCLI(context.Background(), "exporter", "--kubeconfig", writeKubeconfig(t, server), "--context", "x", "--listen", "127.0.0.1:0", "--timeout", "1s")
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("gave up after %s with --timeout 1s", took)
			}
			if code != ExitBadInput || err == nil || !strings.Contains(err.Error(), "cannot use the cluster at "+server+" (waited up to 1s, --timeout)") {
				t.Errorf("exit %d, %v; want exit 2 naming %s", code, err, server)
			}
			if !strings.Contains(stderr, "listing SandboxClaims from "+server) {
				t.Errorf("stderr does not say what it waits for: %q", stderr)
			}
		})
	}
}

// Ctrl-C or SIGTERM while planning (which may download the controller's module) ends the command
// promptly with exit 130: planning used to run under context.Background and ignore the signal.
func TestPlanningHonoursInterrupt(t *testing.T) {
	fetching := make(chan struct{})
	a := &app{stdout: io.Discard, stderr: io.Discard, moduleDir: func(ctx context.Context, _, _ string) (string, error) {
		close(fetching)
		<-ctx.Done() // a slow module proxy
		return "", ctx.Err()
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, _, _, err := a.prepare(ctx, "warmpool-burst", false)
		done <- err
	}()
	select {
	case <-fetching:
	case err := <-done:
		t.Fatalf("planning fetched nothing: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("planning never fetched the module")
	}
	cancel()
	select {
	case err := <-done:
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != ExitInterrupted {
			t.Errorf("prepare = %v, want exit 130", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("planning ignored the cancelled context")
	}
	// A signal that came before planning stops it before any download.
	if _, _, _, err := a.prepare(ctx, "warmpool-burst", false); err == nil || !strings.Contains(err.Error(), "interrupted before planning") {
		t.Errorf("prepare after the signal = %v", err)
	}
}

// --out is created and probed before planning: a run that cannot write its results fails
// before downloading anything, naming where the value came from.
func TestOutCheckedBeforePlanning(t *testing.T) {
	regular := filepath.Join(t.TempDir(), "f")
	_ = os.WriteFile(regular, nil, 0o644)
	a := &app{stdout: io.Discard, stderr: io.Discard, moduleDir: func(context.Context, string, string) (string, error) {
		t.Error("planning ran although --out cannot be written")
		return "", errors.New("no")
	}}
	a.g.out = filepath.Join(regular, "sub")
	_, _, _, err := a.prepare(context.Background(), "warmpool-burst", true)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitBadInput || !strings.HasPrefix(err.Error(), `--out: key "out": expected a directory brakebench can write results to: mkdir `) {
		t.Errorf("prepare = %v", err)
	}
	good := filepath.Join(t.TempDir(), "new", "out")
	a.g.out = good
	a.moduleDir = func(context.Context, string, string) (string, error) { return "", errors.New("offline") }
	if _, _, _, err := a.prepare(context.Background(), "warmpool-burst", true); err == nil || !strings.Contains(err.Error(), "offline") {
		t.Errorf("prepare = %v, want the planning error", err)
	}
	if entries, err := os.ReadDir(good); err != nil || len(entries) != 0 {
		t.Errorf("out %s: %v %v; want it created, without the probe file", good, entries, err)
	}
}
