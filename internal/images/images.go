// Package images builds OCI images without a registry or a Docker engine: an empty base plus one
// layer holding static binaries (brakebench's own, the cached component binaries, a tiny sandbox
// workload), platform linux/amd64, written as an image tarball that `ctr -n k8s.io images import`
// loads into a node's containerd. The lab's real node (issue 14) runs pods from these.
package images

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// RealNodeWorkload is the sandbox workload image the lab's real node's containerd holds (there is
// no registry): the default workload.image for real-node placement.
const RealNodeWorkload = "brakebench.local/sandbox-workload:v1"

// Spec is one image: its reference, the files it holds and how it starts.
type Spec struct {
	// Ref names the image as pods will ("brakebench.local/agent-sandbox-controller:v0.5.5").
	Ref string
	// Files maps an absolute path in the image to a file on this machine (a static binary);
	// every file gets mode 0755.
	Files map[string]string
	// Entrypoint is the container's entrypoint (the first file when empty).
	Entrypoint []string
}

// Build returns the image of spec: one layer, linux/amd64, the entrypoint set.
func Build(spec Spec) (v1.Image, error) {
	if len(spec.Files) == 0 {
		return nil, fmt.Errorf("image %s: no files", spec.Ref)
	}
	raw, err := layerTar(spec.Files)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Ref, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil })
	if err != nil {
		return nil, fmt.Errorf("image %s: layer: %w", spec.Ref, err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Ref, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.Entrypoint = spec.Entrypoint
	if len(cfg.Config.Entrypoint) == 0 {
		cfg.Config.Entrypoint = []string{sortedPaths(spec.Files)[0]}
	}
	return mutate.ConfigFile(img, cfg)
}

// Write builds spec and writes it as an image tarball at file.
func Write(spec Spec, file string) error {
	ref, err := name.ParseReference(spec.Ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", spec.Ref, err)
	}
	img, err := Build(spec)
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(file, ref, img); err != nil {
		return fmt.Errorf("write image %s to %s: %w", spec.Ref, file, err)
	}
	return nil
}

// layerTar is the layer's tar: every file's parent directories (0755), then the file (0755).
func layerTar(files map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, dst := range sortedPaths(files) {
		if !path.IsAbs(dst) || path.Clean(dst) != dst {
			return nil, fmt.Errorf("path in the image %q: expected a clean absolute path", dst)
		}
		var parents []string
		for d := path.Dir(dst); d != "/" && !dirs[d]; d = path.Dir(d) {
			parents = append(parents, d)
			dirs[d] = true
		}
		for i := len(parents) - 1; i >= 0; i-- {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(parents[i], "/") + "/", Mode: 0o755}); err != nil {
				return nil, err
			}
		}
		data, err := os.ReadFile(files[dst])
		if err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(dst, "/"), Mode: 0o755, Size: int64(len(data))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func sortedPaths(files map[string]string) []string {
	out := make([]string, 0, len(files))
	for p := range files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// CheckStatic returns an error unless file is a statically linked ELF executable: an image with
// an empty base has no C library or dynamic loader (build with CGO_ENABLED=0).
func CheckStatic(file string) error {
	f, err := elf.Open(file)
	if err != nil {
		return fmt.Errorf("%s: not an ELF executable: %w", file, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; an image with an empty base needs a static binary (build it with CGO_ENABLED=0)", file)
		}
	}
	return nil
}
