package labbuild

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/brakebench/brakebench/internal/progress"
)

// Stamp records a finished build; a component is cached when its stamp and binaries exist.
type Stamp struct {
	Component string            `json:"component"`
	Module    string            `json:"module"`
	Version   string            `json:"version"`
	GoVersion string            `json:"goVersion"`
	BuiltAt   time.Time         `json:"builtAt"`
	Seconds   float64           `json:"seconds"`
	Binaries  map[string]string `json:"binaries"`
}

// Builder builds components into CacheDir. Several builders, in one process or in several, may
// build into the same CacheDir at once: a component is built by one of them at a time (an
// exclusive lock on a file beside its cache directory), and the others then find it cached.
type Builder struct {
	CacheDir string
	Progress *progress.Progress
	// GoBin is the go command; default "go" from PATH.
	GoBin string
	// LockPoll is how often a build waiting for another process's build of the same component
	// retries its lock; default 500 ms.
	LockPoll time.Duration
}

// Result is what one component build produced.
type Result struct {
	Component Component
	Dir       string
	Cached    bool
	Took      time.Duration
}

// Path returns the cached path of one binary.
func (r Result) Path(bin string) string { return filepath.Join(r.Dir, bin) }

// Cached reports whether c is already built.
func (b *Builder) Cached(c Component) bool {
	dir := BinDir(b.CacheDir, c)
	raw, err := os.ReadFile(filepath.Join(dir, "stamp.json"))
	if err != nil {
		return false
	}
	var s Stamp
	if json.Unmarshal(raw, &s) != nil || s.Version != c.Version {
		return false
	}
	for _, bin := range c.Binaries {
		if fi, err := os.Stat(filepath.Join(dir, bin.Name)); err != nil || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// BuildAll builds each component in order (one at a time: the go command already uses every core).
func (b *Builder) BuildAll(ctx context.Context, comps []Component) (map[string]Result, error) {
	out := map[string]Result{}
	for _, c := range comps {
		r, err := b.Build(ctx, c)
		if err != nil {
			return out, err
		}
		out[c.Name] = r
	}
	return out, nil
}

// Build builds one component unless it is cached. Interrupting ctx kills the go command and
// leaves no partial binary in the cache. While another process (or builder) builds the same
// component, Build waits for it (until ctx ends) and then returns its result as cached.
func (b *Builder) Build(ctx context.Context, c Component) (Result, error) {
	dir := BinDir(b.CacheDir, c)
	if b.Cached(c) {
		if b.Progress != nil {
			b.Progress.Printf("==> %s %s: cached (%s)", c.Name, c.Version, dir)
		}
		return Result{Component: c, Dir: dir, Cached: true}, nil
	}
	if _, err := exec.LookPath(b.goBin()); err != nil {
		return Result{}, fmt.Errorf("building %s needs the go command on PATH: %w", c.Name, err)
	}
	unlock, err := b.lock(ctx, c)
	if err != nil {
		return Result{}, fmt.Errorf("build %s %s: %w", c.Name, c.Version, err)
	}
	defer unlock()
	if b.Cached(c) { // built by whoever held the lock while this builder waited
		if b.Progress != nil {
			b.Progress.Printf("==> %s %s: built by another process meanwhile (%s)", c.Name, c.Version, dir)
		}
		return Result{Component: c, Dir: dir, Cached: true}, nil
	}
	var task *progress.Task
	if b.Progress != nil {
		task = b.Progress.Task(fmt.Sprintf("build %s %s", c.Name, c.Version), c.ColdEstimate)
	}
	start := time.Now()
	err = b.build(ctx, c, dir)
	took := time.Since(start)
	if task != nil {
		if err != nil {
			task.Done("FAILED")
		} else {
			task.Done("built")
		}
	}
	if err != nil {
		return Result{}, fmt.Errorf("build %s %s: %w", c.Name, c.Version, err)
	}
	return Result{Component: c, Dir: dir, Took: took}, nil
}

// LockPath is the file a component's build lock is taken on, beside its cache directory.
func LockPath(cacheDir string, c Component) string { return BinDir(cacheDir, c) + ".lock" }

// lock takes c's build lock (an exclusive flock, so the kernel drops it when its holder dies),
// polling until it is free or ctx ends; the returned func releases it.
func (b *Builder) lock(ctx context.Context, c Component) (func(), error) {
	p := LockPath(b.CacheDir, c)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("create the build lock's directory: %w", err)
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the build lock: %w", err)
	}
	poll := b.LockPoll
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	for waited := false; ; waited = true {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = f.Close()
			return nil, fmt.Errorf("take the build lock %s: %w", p, err)
		}
		if !waited && b.Progress != nil {
			holder, _ := os.ReadFile(p)
			b.Progress.Printf("==> %s %s: another process (pid %s) is building it; waiting for its lock %s", c.Name, c.Version, strings.TrimSpace(string(holder)), p)
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			_ = f.Close()
			return nil, fmt.Errorf("waiting for another process's build (lock %s): %w", p, ctx.Err())
		case <-t.C:
		}
	}
	// Who holds it, for a waiter's message (best effort).
	if f.Truncate(0) == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}

func (b *Builder) goBin() string {
	if b.GoBin != "" {
		return b.GoBin
	}
	return "go"
}

func (b *Builder) build(ctx context.Context, c Component, dir string) error {
	modDir := filepath.Join(b.CacheDir, "tools", c.Name+"-"+c.CacheKey)
	if err := b.writeToolsModule(ctx, c, modDir); err != nil {
		return err
	}
	if _, err := b.goCmd(ctx, modDir, "mod", "tidy"); err != nil {
		return fmt.Errorf("resolve dependencies (go mod tidy in %s): %w", modDir, err)
	}
	tmp := dir + ".partial"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return fmt.Errorf("create the build's output dir: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	stamp := Stamp{Component: c.Name, Module: c.Module, Version: c.Version, GoVersion: runtime.Version(), Binaries: map[string]string{}}
	start := time.Now()
	plan := planBuild(c, tmp)
	for _, args := range plan.invocations {
		if _, err := b.goCmd(ctx, modDir, args...); err != nil {
			return fmt.Errorf("go build %s: %w", strings.Join(args[plan.pkgsFrom:], " "), err)
		}
	}
	for from, to := range plan.renames {
		if err := os.Rename(filepath.Join(tmp, from), filepath.Join(tmp, to)); err != nil {
			return fmt.Errorf("name the binary go built as %s %s: %w", from, to, err)
		}
	}
	for _, bin := range c.Binaries {
		stamp.Binaries[bin.Name] = bin.Package
	}
	stamp.BuiltAt = time.Now().UTC()
	stamp.Seconds = time.Since(start).Seconds()
	raw, _ := json.MarshalIndent(stamp, "", "  ")
	if err := os.WriteFile(filepath.Join(tmp, "stamp.json"), raw, 0o644); err != nil {
		return fmt.Errorf("write the build stamp: %w", err)
	}
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("create the cache dir: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("move the built binaries into the cache: %w", err)
	}
	return nil
}

// buildPlan is how a component's binaries are built: the go command lines (arguments after
// "go"), the index in each where its package list starts, and the renames (go's default
// executable name -> the cache's name) to do in the output directory afterwards.
type buildPlan struct {
	invocations [][]string
	pkgsFrom    int
	renames     map[string]string
}

// planBuild builds every binary of c with one go command (`go build -o dir/ pkg...`) when go's
// default executable names of their packages are distinct, so the compile and link steps of
// different binaries run in parallel; otherwise one go command per binary. Binaries are stripped
// (-s -w: no symbol table, no DWARF, which is much of a big binary's link time; Go stack traces
// and pprof symbolization use the pclntab, which stays) and built with -trimpath.
func planBuild(c Component, outDir string) buildPlan {
	common := []string{"build", "-trimpath", "-ldflags", strings.Join(append([]string{"-s", "-w"}, c.LDFlags...), " ")}
	if len(c.Tags) > 0 {
		common = append(common, "-tags", strings.Join(c.Tags, ","))
	}
	p := buildPlan{pkgsFrom: len(common) + 2, renames: map[string]string{}}
	if len(c.Binaries) > 1 {
		defaults := map[string]bool{}
		for _, bin := range c.Binaries {
			defaults[defaultExecName(bin.Package)] = true
		}
		// Distinct, and no rename may overwrite another binary's output.
		ok := len(defaults) == len(c.Binaries)
		for _, bin := range c.Binaries {
			if defaults[bin.Name] && defaultExecName(bin.Package) != bin.Name {
				ok = false
			}
		}
		if ok {
			args := append(append([]string{}, common...), "-o", outDir+string(filepath.Separator))
			for _, bin := range c.Binaries {
				args = append(args, bin.Package)
				if def := defaultExecName(bin.Package); def != bin.Name {
					p.renames[def] = bin.Name
				}
			}
			p.invocations = [][]string{args}
			return p
		}
	}
	for _, bin := range c.Binaries {
		args := append(append([]string{}, common...), "-o", filepath.Join(outDir, bin.Name), bin.Package)
		p.invocations = append(p.invocations, args)
	}
	return p
}

var majorVersionRe = regexp.MustCompile(`^v[2-9][0-9]*$|^v[1-9][0-9]+$`)

// defaultExecName is the file name go build gives a main package's executable: the last element
// of its import path, or the one before it when that is a major version suffix (…/foo/v2 -> foo).
func defaultExecName(importPath string) string {
	elem := path.Base(importPath)
	if elem != importPath && majorVersionRe.MatchString(elem) {
		return path.Base(path.Dir(importPath))
	}
	return elem
}

func (b *Builder) writeToolsModule(ctx context.Context, c Component, modDir string) error {
	if err := os.MkdirAll(modDir, 0o755); err != nil {
		return fmt.Errorf("create tools module dir: %w", err)
	}
	var gm strings.Builder
	fmt.Fprintf(&gm, "// Generated by brakebench: builds %s %s in isolation.\nmodule brakebench.local/tools/%s\n\ngo 1.26.0\n\n", c.Module, c.Version, c.Name)
	if c.Module != "" {
		fmt.Fprintf(&gm, "require %s %s\n\n", c.Module, c.Version)
	}
	var tools []string
	for _, bin := range c.Binaries {
		if bin.WrapperMain != "" {
			rel := strings.TrimPrefix(bin.Package, "brakebench.local/tools/"+c.Name+"/")
			if err := os.MkdirAll(filepath.Join(modDir, rel), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(modDir, rel, "main.go"), []byte(bin.WrapperMain), 0o644); err != nil {
				return err
			}
			continue
		}
		tools = append(tools, bin.Package)
	}
	if len(tools) > 0 {
		gm.WriteString("tool (\n")
		for _, t := range tools {
			fmt.Fprintf(&gm, "\t%s\n", t)
		}
		gm.WriteString(")\n\n")
	}
	if c.GoModExtra != nil {
		extra, err := c.GoModExtra(ctx, b, c.Version)
		if err != nil {
			return err
		}
		gm.WriteString(extra)
	}
	return os.WriteFile(filepath.Join(modDir, "go.mod"), []byte(gm.String()), 0o644)
}

type modInfo struct {
	Path, Version, GoMod, Dir, Error string
}

func (b *Builder) modDownload(ctx context.Context, mod string) (modInfo, error) {
	out, err := b.goCmd(ctx, os.TempDir(), "mod", "download", "-json", mod)
	var info modInfo
	if jerr := json.Unmarshal(out, &info); jerr != nil && err == nil {
		err = jerr
	}
	if info.Error != "" {
		return info, fmt.Errorf("module %s is not available from the Go module proxy: %s", mod, strings.Join(strings.Fields(info.Error), " "))
	}
	if err != nil {
		return info, fmt.Errorf("go mod download %s: %w", mod, err)
	}
	return info, nil
}

// ModuleDir downloads mod@version (if needed) and returns its directory in the module cache.
func (b *Builder) ModuleDir(ctx context.Context, mod, version string) (string, error) {
	info, err := b.modDownload(ctx, mod+"@"+version)
	if err != nil {
		return "", err
	}
	return info.Dir, nil
}

func (b *Builder) goCmd(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, b.goBin(), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return stdout.Bytes(), ctx.Err()
		}
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = "..." + msg[len(msg)-2000:]
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return stdout.Bytes(), fmt.Errorf("%s %s: %s", b.goBin(), strings.Join(args[:min(2, len(args))], " "), msg)
		}
		return stdout.Bytes(), err
	}
	return stdout.Bytes(), nil
}
