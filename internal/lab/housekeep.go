package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/brakebench/brakebench/internal/results"
)

// Health reads the lab's etcd status and its processes' memory and CPU.
func (l *Lab) Health(ctx context.Context) (results.LabHealth, error) {
	h := results.LabHealth{Processes: map[string]results.ProcessHealth{}}
	// The processes first: an etcd that does not answer is no reason to lose them.
	for name, pid := range l.pids() {
		p, err := processHealth(pid)
		if err != nil || !alive(pid, "") {
			h.Down = append(h.Down, name)
			continue
		}
		h.Processes[name] = p
	}
	sort.Strings(h.Down)
	etcd, err := l.etcdURL()
	if err != nil {
		return h, err
	}
	st, err := etcdStatusOf(ctx, etcd)
	if err != nil {
		return h, err
	}
	h.EtcdRevision, h.EtcdDBBytes, h.EtcdDBInUseBytes = st.revision, st.dbSize, st.dbSizeInUse
	return h, nil
}

// Housekeep runs the housekeeping steps in order, between cells only:
//   - etcd-defrag compacts the lab's etcd to its current revision and defragments it, so every
//     cell starts from a database of the same shape instead of one fragmented by the cells
//     before it (the API server compacts every 5 minutes but never defragments; kwokctl's etcd
//     keeps an hour of history). Watches that lag behind the compacted revision relist.
//   - apiserver-restart restarts the kube-apiserver with the flags it runs with now, so every
//     cell starts from a fresh API server (its heap and watch caches grow over the first cells;
//     see the README's drift section). Every controller's watches reconnect and relist.
//
// It stops at the first step that fails and says which.
func (l *Lab) Housekeep(ctx context.Context, steps []string) (results.Housekeeping, error) {
	return housekeep(ctx, steps, map[string]func(context.Context, *results.Housekeeping) error{
		"etcd-defrag": func(ctx context.Context, hk *results.Housekeeping) error {
			etcd, err := l.etcdURL()
			if err != nil {
				return err
			}
			return housekeepEtcd(ctx, etcd, hk)
		},
		// The lease holders restart with it (RestartComponent); a process the restart took down
		// anyway shows in the health read right after, and the cell is not run.
		"apiserver-restart": func(ctx context.Context, hk *results.Housekeeping) error {
			start := time.Now()
			args, err := l.ComponentArgs("kube-apiserver")
			if err != nil {
				return err
			}
			if err := l.RestartComponent(ctx, "kube-apiserver", args); err != nil {
				return err
			}
			hk.RestartSeconds = time.Since(start).Seconds()
			return nil
		},
	})
}

// housekeep runs steps with the given implementations, timing the whole.
func housekeep(ctx context.Context, steps []string, impl map[string]func(context.Context, *results.Housekeeping) error) (results.Housekeeping, error) {
	start := time.Now()
	hk := results.Housekeeping{}
	for _, s := range steps {
		f, ok := impl[s]
		if !ok {
			return hk, fmt.Errorf("unknown lab housekeeping step %q", s)
		}
		hk.Steps = append(hk.Steps, s)
		if err := f(ctx, &hk); err != nil {
			return hk, fmt.Errorf("lab housekeeping %s: %w", s, err)
		}
	}
	hk.Seconds = time.Since(start).Seconds()
	return hk, nil
}

// housekeepEtcd compacts the etcd at base to its current revision and defragments it.
func housekeepEtcd(ctx context.Context, base string, hk *results.Housekeeping) error {
	st, err := etcdStatusOf(ctx, base)
	if err != nil {
		return err
	}
	hk.Revision, hk.DBBytesBefore = st.revision, st.dbSize
	// The API server compacts to older revisions on its own schedule; a revision it already
	// compacted is not an error here.
	if _, err := etcdCall(ctx, base, "/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(st.revision, 10), "physical": true}); err != nil &&
		!strings.Contains(err.Error(), "compacted") {
		return fmt.Errorf("etcd compaction to revision %d: %w", st.revision, err)
	}
	if _, err := etcdCall(ctx, base, "/v3/maintenance/defragment", map[string]any{}); err != nil {
		return fmt.Errorf("etcd defragment: %w", err)
	}
	after, err := etcdStatusOf(ctx, base)
	if err != nil {
		return err
	}
	hk.DBBytesAfter = after.dbSize
	return nil
}

type etcdStatus struct{ revision, dbSize, dbSizeInUse int64 }

func etcdStatusOf(ctx context.Context, base string) (etcdStatus, error) {
	m, err := etcdCall(ctx, base, "/v3/maintenance/status", map[string]any{})
	if err != nil {
		return etcdStatus{}, fmt.Errorf("etcd status: %w", err)
	}
	hdr, _ := m["header"].(map[string]any)
	st := etcdStatus{revision: jsonInt(hdr, "revision"), dbSize: jsonInt(m, "dbSize", "db_size"), dbSizeInUse: jsonInt(m, "dbSizeInUse", "db_size_in_use")}
	if st.revision == 0 || st.dbSize == 0 {
		return st, fmt.Errorf("etcd status without revision or database size: %v", m)
	}
	return st, nil
}

// etcdCall posts a JSON request to etcd's gRPC gateway (kwokctl's etcd serves plain HTTP on
// the lab's loopback) and decodes the JSON answer; an answer with an error field is an error.
func etcdCall(ctx context.Context, base, path string, body map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, fmt.Errorf("%s: HTTP %d, not JSON: %.200s", path, resp.StatusCode, out)
	}
	if resp.StatusCode != http.StatusOK || m["error"] != nil {
		return m, fmt.Errorf("%s: HTTP %d: %v", path, resp.StatusCode, firstOf(m, "message", "error"))
	}
	return m, nil
}

// etcdURL is the client URL kwokctl gave etcd.
func (l *Lab) etcdURL() (string, error) {
	c, err := l.component("etcd")
	if err != nil {
		return "", err
	}
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--advertise-client-urls="); ok {
			u := strings.Split(v, ",")[0]
			return strings.Replace(u, "://0.0.0.0:", "://127.0.0.1:", 1), nil
		}
	}
	return "", fmt.Errorf("kwokctl's etcd has no --advertise-client-urls in %s", l.clusterDir())
}

// pids are the lab's processes by component: kwokctl's control plane and whatever brakebench
// started beside it (controller, Kueue, LWS, KEDA).
func (l *Lab) pids() map[string]int {
	out := map[string]int{}
	entries, _ := os.ReadDir(filepath.Join(l.clusterDir(), "pids"))
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".pid"); ok {
			if pid := readPID(filepath.Join(l.clusterDir(), "pids", e.Name())); pid > 0 {
				out[name] = pid
			}
		}
	}
	s, err := l.Load()
	if err != nil {
		return out
	}
	add := func(name string, pid int) {
		if pid > 0 {
			out[name] = pid
		}
	}
	if s.Controller != nil {
		add("agent-sandbox-controller", s.Controller.PID)
	}
	if s.Gang != nil {
		add("kueue", s.Gang.Kueue.PID)
		add("lws", s.Gang.LWS.PID)
	}
	if s.KEDA != nil {
		add("keda-operator", s.KEDA.Operator.PID)
		add("keda-adapter", s.KEDA.Adapter.PID)
	}
	return out
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times (100 on every Linux port
// brakebench builds for).
const clockTicks = 100

func processHealth(pid int) (results.ProcessHealth, error) {
	f, err := procStat(pid)
	if err != nil {
		return results.ProcessHealth{}, err
	}
	if len(f) < 22 {
		return results.ProcessHealth{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	// f[0] is field 3 (state): utime is field 14, stime 15, rss (pages) 24.
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	rss, _ := strconv.ParseInt(f[21], 10, 64)
	return results.ProcessHealth{RSSBytes: rss * int64(os.Getpagesize()), CPUSeconds: (utime + stime) / clockTicks}, nil
}

// jsonInt reads the first of keys as an integer; the gRPC gateway writes int64 as strings.
func jsonInt(m map[string]any, keys ...string) int64 {
	switch v := firstOf(m, keys...).(type) {
	case string:
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	case float64:
		return int64(v)
	}
	return 0
}

func firstOf(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return nil
}
