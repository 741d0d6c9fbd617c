package lab

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/results"
)

// fakeEtcdGateway answers the three gateway calls housekeeping makes, the way etcd's gRPC
// gateway does (int64 as strings, errors as {"error","code","message"}).
type fakeEtcdGateway struct {
	mu         sync.Mutex
	calls      []string
	compacted  string // revision the compaction request named
	dbSize     int
	compactErr string
	defragErr  string
}

func (f *fakeEtcdGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, r.URL.Path)
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	fail := func(msg string) {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": msg, "code": 11, "message": msg})
	}
	switch r.URL.Path {
	case "/v3/maintenance/status":
		_ = json.NewEncoder(w).Encode(map[string]any{"header": map[string]any{"revision": "4321", "raft_term": "2"},
			"version": "3.7.0", "dbSize": itoa(f.dbSize), "dbSizeInUse": "1000"})
	case "/v3/kv/compaction":
		if f.compactErr != "" {
			fail(f.compactErr)
			return
		}
		f.compacted, _ = body["revision"].(string)
		if body["physical"] != true {
			fail("not physical")
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"header": map[string]any{"revision": "4321"}})
	case "/v3/maintenance/defragment":
		if f.defragErr != "" {
			fail(f.defragErr)
			return
		}
		f.dbSize = 2000
		_ = json.NewEncoder(w).Encode(map[string]any{"header": map[string]any{}})
	default:
		http.NotFound(w, r)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestHousekeepEtcd(t *testing.T) {
	for _, tc := range []struct {
		name, compactErr, defragErr, wantErr string
		wantCalls                            string
	}{
		{name: "compacts to the current revision and defragments", wantCalls: "status,compaction,defragment,status"},
		// The API server compacts on its own schedule: a revision already compacted is fine.
		{name: "already compacted", compactErr: "etcdserver: mvcc: required revision has been compacted", wantCalls: "status,compaction,defragment,status"},
		{name: "compaction fails", compactErr: "etcdserver: permission denied", wantErr: "etcd compaction to revision 4321", wantCalls: "status,compaction"},
		{name: "defragment fails", defragErr: "etcdserver: too many requests", wantErr: "etcd defragment: /v3/maintenance/defragment: HTTP 400: etcdserver: too many requests", wantCalls: "status,compaction,defragment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEtcdGateway{dbSize: 9000, compactErr: tc.compactErr, defragErr: tc.defragErr}
			srv := httptest.NewServer(f)
			defer srv.Close()
			var hk results.Housekeeping
			err := housekeepEtcd(context.Background(), srv.URL, &hk)
			var calls []string
			for _, c := range f.calls {
				calls = append(calls, c[strings.LastIndex(c, "/")+1:])
			}
			if got := strings.Join(calls, ","); got != tc.wantCalls {
				t.Errorf("calls %s, want %s", got, tc.wantCalls)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if hk.Revision != 4321 || hk.DBBytesBefore != 9000 || hk.DBBytesAfter != 2000 {
				t.Errorf("housekeeping %+v", hk)
			}
			if tc.compactErr == "" && f.compacted != "4321" {
				t.Errorf("compacted to %q, want the current revision 4321", f.compacted)
			}
		})
	}
}

// The steps run in the order given, each recorded; the first failure stops the rest and names
// its step; an unknown step is an error, not a silent skip.
func TestHousekeepSteps(t *testing.T) {
	for _, tc := range []struct {
		name, fail, wantLog, wantErr string
		steps                        []string
	}{
		{name: "both in order", steps: []string{"etcd-defrag", "apiserver-restart"}, wantLog: "etcd-defrag,apiserver-restart"},
		{name: "restart first", steps: []string{"apiserver-restart", "etcd-defrag"}, wantLog: "apiserver-restart,etcd-defrag"},
		{name: "a failure stops the rest", steps: []string{"etcd-defrag", "apiserver-restart"}, fail: "etcd-defrag", wantLog: "etcd-defrag", wantErr: "lab housekeeping etcd-defrag: boom"},
		{name: "unknown step", steps: []string{"vacuum"}, wantErr: `unknown lab housekeeping step "vacuum"`},
		{name: "none", wantLog: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			step := func(name string) func(context.Context, *results.Housekeeping) error {
				return func(_ context.Context, hk *results.Housekeeping) error {
					log = append(log, name)
					if name == tc.fail {
						return errors.New("boom")
					}
					if name == "apiserver-restart" {
						hk.RestartSeconds = 1.5
					}
					return nil
				}
			}
			hk, err := housekeep(context.Background(), tc.steps, map[string]func(context.Context, *results.Housekeeping) error{
				"etcd-defrag": step("etcd-defrag"), "apiserver-restart": step("apiserver-restart"),
			})
			if got := strings.Join(log, ","); got != tc.wantLog {
				t.Errorf("ran %q, want %q", got, tc.wantLog)
			}
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(hk.Steps, ",") != tc.wantLog || (strings.Contains(tc.wantLog, "restart") && hk.RestartSeconds != 1.5) {
				t.Errorf("recorded %+v", hk)
			}
		})
	}
}

func TestEtcdStatusNeedsRevisionAndSize(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"header":{},"version":"3.7.0"}`))
	}))
	defer srv.Close()
	if _, err := etcdStatusOf(context.Background(), srv.URL); err == nil || !strings.Contains(err.Error(), "without revision or database size") {
		t.Fatalf("error %v", err)
	}
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("<html>")) }))
	defer srv2.Close()
	if _, err := etcdStatusOf(context.Background(), srv2.URL); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Fatalf("error %v", err)
	}
}

func TestProcessHealthOfThisProcess(t *testing.T) {
	buf := make([]byte, 32<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	p, err := processHealth(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if p.RSSBytes < int64(len(buf)) || p.CPUSeconds < 0 {
		t.Errorf("this process: %+v (it holds %d bytes)", p, len(buf))
	}
	_ = buf[len(buf)-1]
	if _, err := processHealth(1 << 30); err == nil {
		t.Error("a pid that does not exist read as healthy")
	}
}

// A command name may hold spaces and parentheses: procStat's fields still start at the state,
// so the zombie check and the CPU/RSS fields read the right columns.
func TestProcStatWithAnAwkwardCommandName(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	raw, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "a) b c")
	if err := os.WriteFile(bin, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	f, err := procStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if len(f) < 22 || len(f[0]) != 1 || !strings.Contains("RSDTtWXZIP", f[0]) {
		t.Fatalf("fields %q: the first is not a process state", f)
	}
	// Right after fork the child may not have exec'd yet (no resident pages): give it a moment.
	var p results.ProcessHealth
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if p, err = processHealth(cmd.Process.Pid); err != nil || p.RSSBytes > 0 {
			break
		}
	}
	if err != nil || p.RSSBytes <= 0 {
		t.Errorf("process health %+v, %v", p, err)
	}
	if !alive(cmd.Process.Pid, "") {
		t.Error("a running process read as not alive")
	}
}

// Health names a lab process whose pid no longer runs (a scheduler that lost its lease and
// exited), beside the ones it reads; an etcd that does not answer keeps both.
func TestHealthNamesDeadProcesses(t *testing.T) {
	l := &Lab{cfg: config.Lab{Name: "t"}, dir: t.TempDir()}
	pids := filepath.Join(l.clusterDir(), "pids")
	if err := os.MkdirAll(pids, 0o755); err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for name, pid := range map[string]int{"kube-apiserver": os.Getpid(), "kube-scheduler": dead.Process.Pid} {
		if err := os.WriteFile(filepath.Join(pids, name+".pid"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := l.Health(context.Background())
	if err == nil {
		t.Error("no error without an etcd")
	}
	if strings.Join(h.Down, ",") != "kube-scheduler" || h.Processes["kube-apiserver"].RSSBytes <= 0 {
		t.Errorf("health %+v", h)
	}
}
