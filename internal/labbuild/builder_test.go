package labbuild

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeGo writes a stand-in for the go command into a temp dir and returns its path and the file
// it logs each invocation's arguments to (one line each). `mod ...` succeeds; `build ... -o OUT
// PKG...` sleeps for sleep, then creates OUT (or, when OUT ends in a slash, OUT/<last element of
// each PKG>) as an executable.
func fakeGo(t *testing.T, sleep time.Duration) (bin, log string) {
	t.Helper()
	dir := t.TempDir()
	bin, log = filepath.Join(dir, "go"), filepath.Join(dir, "calls.log")
	script := fmt.Sprintf(`#!/bin/sh
echo "$*" >> %q
[ "$1" = build ] || exit 0
sleep %.3f
out=
while [ $# -gt 0 ]; do
  if [ "$1" = -o ]; then out=$2; shift 2; break; fi
  shift
done
case "$out" in
*/) for p in "$@"; do printf '#!/bin/sh\n' > "$out$(basename "$p")"; chmod +x "$out$(basename "$p")"; done ;;
*) printf '#!/bin/sh\n' > "$out"; chmod +x "$out" ;;
esac
`, log, sleep.Seconds())
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, log
}

// calls returns the fake go's logged invocations.
func calls(t *testing.T, log string) []string {
	t.Helper()
	raw, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(raw)), "\n")
}

func testComponent() Component {
	return Component{
		Name: "demo", Module: "example.com/demo", Version: "v1.2.3", CacheKey: "v1.2.3",
		Binaries: []Binary{
			{Name: "demo-server", Package: "example.com/demo/cmd/server"},
			{Name: "democtl", Package: "example.com/demo/v2/cmd/democtl"},
		},
		LDFlags: []string{"-X example.com/demo/version.V=v1.2.3"},
	}
}

func TestPlanBuild(t *testing.T) {
	v, err := LoadVersions()
	if err != nil {
		t.Fatal(err)
	}
	const out = "/c/out"
	for _, tc := range []struct {
		name    string
		c       Component
		want    [][]string // each invocation's -o target and packages
		renames map[string]string
	}{
		{"kubernetes: one go build, names as go gives them", KubernetesComponent(v.Kubernetes),
			[][]string{{"/c/out/", "k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-controller-manager", "k8s.io/kubernetes/cmd/kube-scheduler", "k8s.io/kubernetes/cmd/kubectl"}}, nil},
		{"keda: one go build, then renamed", KEDAComponent(v.KEDA),
			[][]string{{"/c/out/", "github.com/kedacore/keda/v2/cmd/operator", "github.com/kedacore/keda/v2/cmd/adapter"}},
			map[string]string{"operator": "keda-operator", "adapter": "keda-adapter"}},
		{"containerd: one go build", ContainerdComponent(v.Containerd),
			[][]string{{"/c/out/", "github.com/containerd/containerd/v2/cmd/containerd", "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2", "github.com/containerd/containerd/v2/cmd/ctr"}}, nil},
		{"lws: one binary named by the cache", LWSComponent(v.LWS),
			[][]string{{"/c/out/lws-controller-manager", "sigs.k8s.io/lws/cmd"}}, nil},
		{"etcd: the wrapper main", EtcdComponent(v.Etcd),
			[][]string{{"/c/out/etcd", "brakebench.local/tools/etcd/cmd/etcd"}}, nil},
		{"same default name: one go build per binary", Component{Binaries: []Binary{
			{Name: "a-tool", Package: "example.com/a/cmd/tool"}, {Name: "b-tool", Package: "example.com/b/v3/cmd/tool"}}},
			[][]string{{"/c/out/a-tool", "example.com/a/cmd/tool"}, {"/c/out/b-tool", "example.com/b/v3/cmd/tool"}}, nil},
		{"a rename would overwrite another binary: one go build per binary", Component{Binaries: []Binary{
			{Name: "y", Package: "example.com/m/x"}, {Name: "x", Package: "example.com/m/y"}}},
			[][]string{{"/c/out/y", "example.com/m/x"}, {"/c/out/x", "example.com/m/y"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planBuild(tc.c, out)
			var got [][]string
			for _, args := range p.invocations {
				prefix := args[:p.pkgsFrom-2]
				wantPrefix := []string{"build", "-trimpath", "-ldflags", strings.Join(append([]string{"-s", "-w"}, tc.c.LDFlags...), " ")}
				if len(tc.c.Tags) > 0 {
					wantPrefix = append(wantPrefix, "-tags", strings.Join(tc.c.Tags, ","))
				}
				if !reflect.DeepEqual(prefix, wantPrefix) || args[p.pkgsFrom-2] != "-o" {
					t.Errorf("flags %q, want %q then -o", args[:p.pkgsFrom], wantPrefix)
				}
				got = append(got, args[p.pkgsFrom-1:])
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("go builds %q, want %q", got, tc.want)
			}
			if tc.renames == nil {
				tc.renames = map[string]string{}
			}
			if !reflect.DeepEqual(p.renames, tc.renames) {
				t.Errorf("renames %v, want %v", p.renames, tc.renames)
			}
		})
	}
}

func TestDefaultExecName(t *testing.T) {
	for pkg, want := range map[string]string{
		"k8s.io/kubernetes/cmd/kubectl":           "kubectl",
		"github.com/kedacore/keda/v2/cmd/adapter": "adapter",
		"github.com/foo/bar/v2":                   "bar",
		"github.com/foo/bar/v10":                  "bar",
		"github.com/foo/bar/v1":                   "v1",
		"github.com/foo/bar/v0":                   "v0",
		"github.com/foo/bar/v2x":                  "v2x",
		"sigs.k8s.io/lws/cmd":                     "cmd",
		"v2":                                      "v2",
	} {
		if got := defaultExecName(pkg); got != want {
			t.Errorf("defaultExecName(%q) = %q, want %q", pkg, got, want)
		}
	}
}

// TestBuildWithFakeGo runs a whole build with a stand-in go command: the tools module, one go
// build for both binaries, the renames, the stamp, and a second Build finding it cached.
func TestBuildWithFakeGo(t *testing.T) {
	goBin, log := fakeGo(t, 0)
	cache := t.TempDir()
	b := &Builder{CacheDir: cache, GoBin: goBin}
	c := testComponent()
	r, err := b.Build(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Cached || r.Dir != BinDir(cache, c) {
		t.Errorf("result %+v", r)
	}
	for _, name := range []string{"demo-server", "democtl", "stamp.json"} {
		if _, err := os.Stat(r.Path(name)); err != nil {
			t.Error(err)
		}
	}
	for _, name := range []string{"server"} {
		if _, err := os.Stat(r.Path(name)); !os.IsNotExist(err) {
			t.Errorf("go's default name %s is left in the cache: %v", name, err)
		}
	}
	want := []string{
		"mod tidy",
		"build -trimpath -ldflags -s -w -X example.com/demo/version.V=v1.2.3 -o " + BinDir(cache, c) + ".partial/ example.com/demo/cmd/server example.com/demo/v2/cmd/democtl",
	}
	if got := calls(t, log); !reflect.DeepEqual(got, want) {
		t.Errorf("go invocations\n%q\nwant\n%q", got, want)
	}
	if _, err := os.Stat(BinDir(cache, c) + ".partial"); !os.IsNotExist(err) {
		t.Errorf("partial dir left: %v", err)
	}
	gomod, err := os.ReadFile(filepath.Join(cache, "tools", "demo-v1.2.3", "go.mod"))
	if err != nil || !strings.Contains(string(gomod), "require example.com/demo v1.2.3") || !strings.Contains(string(gomod), "\texample.com/demo/v2/cmd/democtl\n") {
		t.Errorf("tools module %v:\n%s", err, gomod)
	}
	r2, err := b.Build(context.Background(), c)
	if err != nil || !r2.Cached {
		t.Errorf("second build: %+v, %v", r2, err)
	}
	if n := len(calls(t, log)); n != len(want) {
		t.Errorf("a cached component ran go again (%d calls)", n)
	}
}

// TestBuildLock: two builders (as two processes would) build the same component at once; one
// runs go build, the other waits for its lock and then finds the component cached.
func TestBuildLock(t *testing.T) {
	goBin, log := fakeGo(t, time.Second)
	cache := t.TempDir()
	c := testComponent()
	var wg sync.WaitGroup
	results := make([]Result, 2)
	errs := make([]error, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := &Builder{CacheDir: cache, GoBin: goBin, LockPoll: 20 * time.Millisecond}
			results[i], errs[i] = b.Build(context.Background(), c)
		}()
	}
	wg.Wait()
	built := 0
	for i := range results {
		if errs[i] != nil {
			t.Fatalf("builder %d: %v", i, errs[i])
		}
		if !results[i].Cached {
			built++
		}
	}
	if built != 1 {
		t.Errorf("%d builders built the component, want 1: %+v", built, results)
	}
	n := 0
	for _, call := range calls(t, log) {
		if strings.HasPrefix(call, "build ") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("go build ran %d times, want once:\n%s", n, strings.Join(calls(t, log), "\n"))
	}
}

// TestBuildLockWaitEndsWithContext: a build waiting for another's lock gives up when its context
// ends, without running go.
func TestBuildLockWaitEndsWithContext(t *testing.T) {
	goBin, log := fakeGo(t, 0)
	cache := t.TempDir()
	c := testComponent()
	holder := &Builder{CacheDir: cache, GoBin: goBin}
	unlock, err := holder.lock(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	b := &Builder{CacheDir: cache, GoBin: goBin, LockPoll: 10 * time.Millisecond}
	_, err = b.Build(ctx, c)
	if err == nil || !strings.Contains(err.Error(), "waiting for another process's build") || !strings.Contains(err.Error(), LockPath(cache, c)) {
		t.Errorf("want a lock-wait error naming the lock, got %v", err)
	}
	if got := calls(t, log); len(got) != 0 {
		t.Errorf("go ran while another builder held the lock: %q", got)
	}
}
