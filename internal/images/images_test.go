package images

import (
	"archive/tar"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// An image written here reads back as linux/amd64 with one layer holding the binaries, executable,
// under their paths, and the entrypoint set.
func TestWriteReadsBack(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "ctrl")
	if err := os.WriteFile(bin, []byte("\x7fELF fake static binary"), 0o644); err != nil {
		t.Fatal(err)
	}
	helper := filepath.Join(dir, "helper")
	if err := os.WriteFile(helper, []byte("second"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "img.tar")
	spec := Spec{Ref: "brakebench.local/agent-sandbox-controller:v0.5.5",
		Files: map[string]string{"/usr/local/bin/ctrl": bin, "/bin/helper": helper}, Entrypoint: []string{"/usr/local/bin/ctrl", "--x"}}
	if err := Write(spec, out); err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag(spec.Ref)
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" || !reflect.DeepEqual(cfg.Config.Entrypoint, spec.Entrypoint) {
		t.Fatalf("config: %s/%s entrypoint %v", cfg.OS, cfg.Architecture, cfg.Config.Entrypoint)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got := map[string]string{}
	modes := map[string]int64{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		got[h.Name] = string(data)
		modes[h.Name] = h.Mode
	}
	want := map[string]string{"bin/": "", "bin/helper": "second", "usr/": "", "usr/local/": "", "usr/local/bin/": "", "usr/local/bin/ctrl": "\x7fELF fake static binary"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("layer holds %q, want %q", got, want)
	}
	if modes["usr/local/bin/ctrl"] != 0o755 {
		t.Errorf("binary mode %o, want 755", modes["usr/local/bin/ctrl"])
	}
}

func TestBadSpecs(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]Spec{
		"no files":      {Ref: "x/y:z"},
		"relative path": {Ref: "x/y:z", Files: map[string]string{"bin/x": "/dev/null"}},
		"missing file":  {Ref: "x/y:z", Files: map[string]string{"/bin/x": filepath.Join(dir, "nope")}},
		"bad reference": {Ref: "UPPER CASE", Files: map[string]string{"/bin/x": "/dev/null"}},
	}
	for n, spec := range cases {
		if err := Write(spec, filepath.Join(dir, "out.tar")); err == nil {
			t.Errorf("%s: want an error", n)
		}
	}
}

func TestCheckStatic(t *testing.T) {
	dir := t.TempDir()
	static, dynamic := filepath.Join(dir, "static"), filepath.Join(dir, "dynamic")
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\nimport \"net\"\nfunc main() { _, _ = net.LookupHost(\"localhost\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct {
		out, cgo string
	}{{static, "0"}, {dynamic, "1"}} {
		cmd := exec.Command("go", "build", "-o", b.out, src)
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+b.cgo, "GOFLAGS=", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("go build (cgo=%s): %v\n%s", b.cgo, err, out)
		}
	}
	if err := CheckStatic(static); err != nil {
		t.Errorf("static binary refused: %v", err)
	}
	if err := CheckStatic(dynamic); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("dynamic binary: %v", err)
	}
	if err := CheckStatic(src); err == nil {
		t.Error("a Go source file is not an executable")
	}
}
