package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/stats"
)

// Bad input is exit 2 with a message naming the input (file, key or flag) and what was expected,
// before anything touches a cluster; no input crashes the tool. Rows that would reach a cluster
// if the input were accepted use --cluster kind with an empty PATH: one that got that far fails
// with exit 1 (no Docker), never 2.
func TestBadInputs(t *testing.T) {
	dir := t.TempDir()
	res := synthetic(t, dir, 1)
	write := func(name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	out := t.TempDir()
	deepGates := write("deep.yaml", "gates:\n- name: deep\n  expr: 1 <= "+strings.Repeat("(", 100000)+"1"+strings.Repeat(")", 100000)+"\n")
	nestedGates := write("nested.yaml", "gates:\n- name: nested\n  expr: 1 <= "+strings.Repeat("(", 200)+"1"+strings.Repeat(")", 200)+"\n")
	regular := write("a-file", "x")
	empty := write("empty.json", `{"schema":"brakebench.results/v1","suite":"warmpool-burst","runID":"e"}`)
	stopped := write("stopped.json", `{"schema":"brakebench.results/v1","suite":"warmpool-burst","runID":"s","cells":[],"incomplete":"interrupted after 0 of 12 cells"}`)
	raw, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	copied := write("copy.json", string(raw))
	imageFile := write("image.yaml", "workload:\n  image: \"registry.k8s.io/pause:3.10\\n\"\n")
	second := synthetic(t, dir, 1.0001)
	// A cluster that refuses connections: the exporter gives up on it after --timeout.
	unreachable := writeKubeconfig(t, "https://127.0.0.1:1")
	exporter := func(flags ...string) []string {
		return append([]string{"exporter", "--kubeconfig", unreachable, "--context", "x", "--listen", "127.0.0.1:0", "--timeout", "1s"}, flags...)
	}
	seriesDir := t.TempDir()
	flat := series(t, filepath.Join(seriesDir, "flat"), func(int) float64 { return 1000 })
	rounding := series(t, filepath.Join(seriesDir, "rounding"), func(i int) float64 { return 1000 * (1 + 1e-12*float64(i/10)) })
	stepped := series(t, filepath.Join(seriesDir, "stepped"), func(i int) float64 { return 1000 * (1 + 0.2*float64(i/10)) })
	small := series(t, filepath.Join(seriesDir, "small"), func(i int) float64 { return 1000 * (1 + 0.01*float64(i/10)) })
	t.Setenv("PATH", t.TempDir())
	t.Setenv("TMPDIR", t.TempDir())
	cases := []struct {
		name string
		args []string
		code int
		msg  string // a substring of the error
	}{
		// Gate expressions: the parser's recursion is bounded (100000 '(' was a Go fatal error).
		{"report, gates nested 100000 deep", []string{"report", res, "--out", out, "--gates", deepGates}, ExitBadInput,
			deepGates + `:3: gate "deep": expression is 200006 bytes long; expected at most 4096`},
		{"report, gates nested 200 deep", []string{"report", res, "--out", out, "--gates", nestedGates}, ExitBadInput,
			nestedGates + `:3: gate "nested": right of <=: parentheses nest more than 100 deep`},
		{"run, gates nested 100000 deep", []string{"run", "gang-quota", "--cluster", "kind", "--out", out, "--gates", deepGates}, ExitBadInput,
			deepGates + `:3: gate "deep": expression is`},
		{"run, gates nested 200 deep", []string{"run", "gang-quota", "--cluster", "kind", "--out", out, "--gates", nestedGates}, ExitBadInput,
			nestedGates + `:3: gate "nested": right of <=: parentheses nest more than 100 deep`},
		// An output directory that cannot be written: exit 2 before any work (report, compare and
		// trend exited 1 once they had done it; run already exited 2).
		{"report, --out a regular file", []string{"report", res, "--out", regular, "--no-gates"}, ExitBadInput,
			"--out " + regular + ": expected a directory brakebench can write to: mkdir " + regular + ": not a directory"},
		{"report, --out under a regular file", []string{"report", res, "--out", filepath.Join(regular, "sub"), "--no-gates"}, ExitBadInput,
			"--out " + filepath.Join(regular, "sub") + ": expected a directory brakebench can write to: mkdir " + regular + ": not a directory"},
		{"compare, --out a regular file", []string{"compare", res, second, "--out", regular}, ExitBadInput,
			"--out " + regular + ": expected a directory brakebench can write to"},
		{"trend, --out a regular file", []string{"trend", res, second, "--out", regular}, ExitBadInput,
			"--out " + regular + ": expected a directory brakebench can write to"},
		{"trend, --out under a regular file", []string{"trend", dir, "--out", filepath.Join(regular, "sub")}, ExitBadInput,
			"--out " + filepath.Join(regular, "sub") + ": expected a directory brakebench can write to"},
		{"run, --out a regular file", []string{"run", "gang-quota", "--cluster", "kind", "--out", regular}, ExitBadInput,
			`--out: key "out": expected a directory brakebench can write results to: mkdir ` + regular + ": not a directory"},
		// An unknown command is exit 2 also with --help, after help and below a group (cobra
		// checked --help first and printed the group's help with exit 0).
		{"unknown command with --help", []string{"rnu", "--help"}, ExitBadInput, `unknown command "rnu" for "brakebench"`},
		{"--help before an unknown command", []string{"--help", "rnu"}, ExitBadInput, `unknown command "rnu" for "brakebench"`},
		{"unknown subcommand with -h", []string{"lab", "upp", "-h"}, ExitBadInput, `unknown command "upp" for "brakebench lab"`},
		{"help for an unknown command", []string{"help", "rnu"}, ExitBadInput, `help: unknown command "rnu" for "brakebench"`},
		{"help for an unknown subcommand", []string{"help", "lab", "upp"}, ExitBadInput, `help: unknown command "upp" for "brakebench lab"`},
		{"completion for an unknown shell", []string{"completion", "tcsh"}, ExitBadInput, `unknown command "tcsh" for "brakebench completion"`},
		{"completion with an extra argument", []string{"completion", "bash", "x"}, ExitBadInput, `unknown command "x" for "brakebench completion bash"`},
		{"--help", []string{"--help"}, ExitOK, ""},
		{"-h", []string{"-h"}, ExitOK, ""},
		{"run --help", []string{"run", "--help"}, ExitOK, ""},
		{"run SUITE --help", []string{"run", "gang-quota", "--help"}, ExitOK, ""},
		{"lab --help", []string{"lab", "--help"}, ExitOK, ""},
		{"help run", []string{"help", "run"}, ExitOK, ""},
		{"help lab up", []string{"help", "lab", "up"}, ExitOK, ""},
		{"completion bash", []string{"completion", "bash"}, ExitOK, ""},
		// Free text with a grammar: image references, names, namespaces, label values.
		{"run, an image with a tab", []string{"run", "gang-quota", "--cluster", "kind", "--out", out, "--set", "workload.image=pause\t3"}, ExitBadInput,
			`--set: key "workload.image": expected an image reference like registry.k8s.io/pause:3.10 (repository can only contain the characters`},
		{"run, an image with a newline, from a file", []string{"run", "gang-quota", "--cluster", "kind", "--out", out, "-f", imageFile}, ExitBadInput,
			imageFile + `:2: key "workload.image": expected an image reference like registry.k8s.io/pause:3.10 (tag can only contain the characters`},
		{"run, a 100000-character image", []string{"run", "gang-quota", "--cluster", "kind", "--out", out, "--set", "workload.image=" + strings.Repeat("a", 100000)}, ExitBadInput,
			`(repository must be between 1 and 255 characters in length), got "aaaa`},
		{"run, a Kueue namespace with capitals", []string{"run", "gang-quota", "--cluster", "kind", "--out", out, "--set", "gangQuota.kueueNamespace=Kueue"}, ExitBadInput,
			`--set: key "gangQuota.kueueNamespace": expected a namespace (a lower-case DNS-1123 label)`},
		{"lab karpenter start, a toleration scale above 1", []string{"lab", "karpenter", "start", "--toleration-scale", "2"}, ExitBadInput,
			`--toleration-scale: toleration scale 2: want a factor in (0, 1] (1 = EKS's published tolerations)`},
		{"lab import-image, a reference with a space", []string{"lab", "import-image", "--ref", "brakebench :dev", filepath.Join(dir, "nope")}, ExitBadInput,
			`--ref "brakebench :dev": expected an image reference like brakebench.local/brakebench:dev: repository can only contain the characters`},
		// The exporter's flags are checked before it contacts the cluster (an unreachable one here:
		// they failed only there, after --timeout, or at the API server).
		{"exporter, a namespace with capitals", exporter("--namespace", "Sandbox_NS"), ExitBadInput,
			`--namespace "Sandbox_NS": expected a namespace (a lower-case DNS-1123 label): a lowercase RFC 1123 label must consist of`},
		{"exporter, a namespace of 64 characters", exporter("--namespace", strings.Repeat("n", 64)), ExitBadInput,
			`: expected a namespace (a lower-case DNS-1123 label): must be no more than 63 characters`},
		{"exporter, a selector that does not parse", exporter("--selector", "app=,,x"), ExitBadInput,
			`--selector "app=,,x": expected a label selector like app.kubernetes.io/managed-by=brakebench: found ','`},
		{"exporter, a port over 65535", exporter("--listen", ":99999"), ExitBadInput,
			`--listen ":99999": expected HOST:PORT or :PORT with a port from 0 to 65535: port "99999" is not a number from 0 to 65535`},
		{"exporter, a listen address without a port", exporter("--listen", "8080"), ExitBadInput,
			`--listen "8080": expected HOST:PORT or :PORT with a port from 0 to 65535: address 8080: missing port in address`},
		{"exporter, a listen host with a space", exporter("--listen", "local host:80"), ExitBadInput,
			`--listen "local host:80": expected HOST:PORT or :PORT with a port from 0 to 65535: host "local host" is neither an IP address nor a DNS name`},
		{"exporter --print-manifests, a bad namespace", []string{"exporter", "--print-manifests", "--image", "ghcr.io/x/brakebench:dev", "--namespace", "a b"}, ExitBadInput,
			`--namespace "a b": expected a namespace`},
		{"exporter --print-manifests, a bad install namespace", []string{"exporter", "--print-manifests", "--image", "ghcr.io/x/brakebench:dev", "--install-namespace", "Brakebench"}, ExitBadInput,
			`--install-namespace "Brakebench": expected a namespace`},
		{"exporter --print-manifests, an image with a tab", []string{"exporter", "--print-manifests", "--image", "ghcr.io/x/brakebench:dev\t"}, ExitBadInput,
			`--image "ghcr.io/x/brakebench:dev\t": expected an image reference like ghcr.io/you/brakebench:dev: tag can only contain the characters`},
		{"exporter --print-manifests, good flags", []string{"exporter", "--print-manifests", "--image", "ghcr.io/x/brakebench:dev", "--namespace", "sandboxes", "--listen", "[::1]:0"}, ExitOK, ""},
		// cleanup's run id is a label value (and a journal's name); a cluster that refuses
		// connections stands behind it (exit 4 once reached).
		{"cleanup, a run id with a space", []string{"cleanup", "--run", "3f9a 1c2e", "--cluster", "kubeconfig", "--kubeconfig", unreachable, "--context", "x"}, ExitBadInput,
			`--run "3f9a 1c2e": expected a run id like 3f9a1c2e (a label value): a valid label must be`},
		{"cleanup, a run id of 100000 characters", []string{"cleanup", "--run", strings.Repeat("f", 100000), "--cluster", "kubeconfig", "--kubeconfig", unreachable, "--context", "x"}, ExitBadInput,
			`... (100000 bytes): expected a run id like 3f9a1c2e (a label value): must be no more than 63 bytes`},
		// A results file without cells renders an empty report (and, as a baseline, fails every
		// comparison; in a trend it was a run without values).
		{"report, results of only a schema", []string{"report", empty, "--out", out}, ExitBadInput, empty + ": holds no cells, so no results"},
		{"report, a run stopped before its first cell", []string{"report", stopped, "--out", out}, ExitBadInput,
			stopped + ": holds no cells, so no results (the run stopped first: interrupted after 0 of 12 cells)"},
		{"report --baseline, results of only a schema", []string{"report", res, "--out", out, "--no-gates", "--baseline", empty}, ExitBadInput, "--baseline: " + empty + ": holds no cells"},
		// A run reported against itself shows no regression by construction.
		{"report --baseline, the run itself", []string{"report", res, "--out", out, "--no-gates", "--baseline", res}, ExitBadInput,
			"--baseline " + res + ": expected an earlier run, got the run being reported (run r1)"},
		{"report --baseline, a copy of the run", []string{"report", res, "--out", out, "--no-gates", "--baseline", copied}, ExitBadInput,
			"--baseline " + copied + ": expected an earlier run, got the run being reported (run r1)"},
		{"compare, results of only a schema", []string{"compare", res, empty, "--out", out}, ExitBadInput, empty + ": holds no cells"},
		{"trend, results of only a schema", []string{"trend", res, empty, "--out", out}, ExitBadInput, empty + ": holds no cells"},
		{"plan --from, results of only a schema", []string{"plan", "gang-quota", "--from", empty}, ExitBadInput, "--from: " + empty + ": holds no cells"},
		// One run given twice counted as two runs in a trend, and compared with itself.
		{"trend, one file twice", []string{"trend", res, second, res, "--out", out}, ExitBadInput,
			res + " is given twice, by argument 1 (" + res + ") and argument 3 (" + res + "): a run counts once in a trend"},
		{"trend, a directory and a file in it", []string{"trend", dir, res, "--out", out}, ExitBadInput,
			res + " is given twice, by argument 1 (" + dir + ") and argument 2 (" + res + ")"},
		{"trend, a file and its copy", []string{"trend", res, copied, "--out", out}, ExitBadInput, res + " and " + copied + " hold the same run (id r1, started "},
		{"compare, one file twice", []string{"compare", res, res, "--out", out}, ExitBadInput, res + " is given twice, as argument 1 and argument 2: compare needs different runs"},
		{"compare, a file and its copy", []string{"compare", res, second, copied, "--out", out}, ExitBadInput, res + " and " + copied + " hold the same run (id r1): compare needs different runs"},
		// trend --gate flagged a +0.0% step of a series that does not vary (a rounding error makes
		// Student's t infinite); a change below --min-effect (5%) is no change point.
		{"trend --gate, a series that does not vary", []string{"trend", flat, "--out", out, "--gate"}, ExitOK, ""},
		{"trend --gate, a rounding error in a series that does not vary", []string{"trend", rounding, "--out", out, "--gate"}, ExitOK, ""},
		{"trend --gate, a 20% step in a series that does not vary", []string{"trend", stepped, "--out", out, "--gate"}, ExitGateFailed, "none claim.p99_ms: +20.0% since run run10"},
		{"trend --gate, a 1% step with --min-effect 0", []string{"trend", small, "--out", out, "--gate", "--min-effect", "0"}, ExitGateFailed, "none claim.p99_ms: +1.0% since run run10"},
		{"trend, a negative --min-effect", []string{"trend", flat, "--out", out, "--min-effect", "-1"}, ExitBadInput, "--min-effect: expected a change in percent from 0 to under 1000, got -1"},
		{"trend, --min-effect NaN", []string{"trend", flat, "--out", out, "--min-effect", "NaN"}, ExitBadInput, "--min-effect: expected a change in percent from 0 to under 1000, got NaN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stderr, err := execCLI(context.Background(), c.args...)
			if code != c.code || (c.msg != "" && (err == nil || !strings.Contains(err.Error(), c.msg))) {
				t.Errorf("exit %d (%v)\nwant exit %d with %q\nstderr:\n%s", code, err, c.code, c.msg, stderr)
			}
		})
	}
}

// series writes 20 warmpool-burst runs, a day apart, under dir whose cell none has claim.p99_ms
// p99(i) in run i (without spread), and returns dir.
func series(t *testing.T, dir string, p99 func(i int) float64) string {
	t.Helper()
	for i := 0; i < 20; i++ {
		v := stats.Num(p99(i))
		r := &results.Results{Schema: results.SchemaVersion, Suite: "warmpool-burst", RunID: fmt.Sprintf("run%02d", i),
			StartedAt: time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC).AddDate(0, 0, i),
			Cells:     []results.Cell{{ID: "none#1", Name: "none", Rep: 1}},
			Summary:   []results.Summary{{Name: "none", Reps: 3, Metrics: []results.Metric{{Key: "claim.p99_ms", Unit: "ms", Value: v, CI: stats.CI{Lo: v, Hi: v}}}}}}
		if _, err := results.Write(filepath.Join(dir, r.RunID), r); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
