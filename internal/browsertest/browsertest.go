// Package browsertest loads a self-contained HTML page (report.html, trend.html) in headless
// Chromium for tests: what a reader's browser renders, and every request the page itself made
// (recorded with Chromium's net log), which must stay inside the file.
package browsertest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Chromium returns the browser binary, or skips the test (fails it under CI=true, where .ci/run
// installs Debian's chromium package).
func Chromium(t testing.TB) string {
	t.Helper()
	for _, b := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(b); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH; .ci/run installs Debian's chromium package")
	}
	t.Skip("no chromium on PATH (apt-get install chromium)")
	return ""
}

// Args are the headless flags, with a fresh profile under dir and the net log at netlog.
func Args(dir, netlog string) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
		"--no-first-run", "--disable-sync", "--user-data-dir=" + filepath.Join(dir, "profile"), "--log-net-log=" + netlog}
}

// Load renders page and returns its DOM and the requests it initiated that left the file
// (anything but file: and data: URLs). It also checks that the check can fail: a probe page
// with one external image must be caught.
func Load(t testing.TB, bin, page string) (dom []byte, external []string) {
	t.Helper()
	tmp := t.TempDir()
	netlog := filepath.Join(tmp, "net.json")
	dom, err := exec.Command(bin, append(Args(tmp, netlog), "--dump-dom", "file://"+page)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v", page, err)
	}
	for _, u := range Requests(t, netlog) {
		if !strings.HasPrefix(u, "file://") && !strings.HasPrefix(u, "data:") {
			external = append(external, u)
		}
	}
	probe := filepath.Join(tmp, "probe.html")
	_ = os.WriteFile(probe, []byte(`<html><body><img src="http://127.0.0.1:9/x.png"></body></html>`), 0o644)
	probeLog := filepath.Join(tmp, "probe.json")
	_, _ = exec.Command(bin, append(Args(filepath.Join(tmp, "p"), probeLog), "--dump-dom", "file://"+probe)...).Output()
	if got := Requests(t, probeLog); !strings.Contains(strings.Join(got, " "), "127.0.0.1:9") {
		t.Errorf("the net-log check missed a page request: %v", got)
	}
	return dom, external
}

// Requests lists the URLs of requests a page initiated, from a Chromium net log (the browser's
// own background requests carry the initiator "not an origin" and are not the page's).
func Requests(t testing.TB, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no net log: %v", err)
	}
	var nl struct {
		Events []struct {
			Params map[string]any `json:"params"`
		} `json:"events"`
	}
	if err := json.Unmarshal(raw, &nl); err != nil {
		// Chromium may leave the log's closing brackets off when it exits; the events are still there.
		raw = append(bytes.TrimRight(raw, ",\n "), []byte("]}")...)
		if err := json.Unmarshal(raw, &nl); err != nil {
			t.Fatalf("net log: %v", err)
		}
	}
	var out []string
	for _, ev := range nl.Events {
		u, ok := ev.Params["url"].(string)
		initiator, _ := ev.Params["initiator"].(string)
		if ok && initiator != "" && initiator != "not an origin" {
			out = append(out, u)
		}
	}
	return out
}
