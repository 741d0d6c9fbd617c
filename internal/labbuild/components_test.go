package labbuild

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

func TestTranslateStagingReplaces(t *testing.T) {
	gomod := []byte("module k8s.io/kubernetes\n\nreplace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n\tk8s.io/client-go => ./staging/src/k8s.io/client-go\n\tgithub.com/x/y => github.com/x/y v1.0.0\n)\n")
	got, err := translateStagingReplaces(gomod, "v1.37.2")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"k8s.io/api => k8s.io/api v0.37.2", "k8s.io/client-go => k8s.io/client-go v0.37.2"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "github.com/x/y") {
		t.Error("only staging replaces are translated")
	}
	if _, err := translateStagingReplaces([]byte("module x\n"), "v1.37.2"); err == nil {
		t.Error("a go.mod without staging replaces must be an error")
	}
}

func TestVersionsAndCacheKeys(t *testing.T) {
	v, err := LoadVersions()
	if err != nil {
		t.Fatal(err)
	}
	comps := LabComponents(v)
	if len(comps) != 4 || len(Addons(v)) != len(AddonNames()) || v.Kueue == "" || v.LWS == "" || v.KEDA == "" || v.Containerd == "" || v.CNIPlugins == "" {
		t.Fatalf("%d components, %d addons for %d names", len(comps), len(Addons(v)), len(AddonNames()))
	}
	for _, n := range append(AddonNames(), RealNodeAddons()...) {
		if _, ok := Addons(v)[n]; !ok {
			t.Errorf("addon %q is named but not defined", n)
		}
	}
	// The real node's kubelet comes from the same Kubernetes pin, in its own tools module and
	// cache entry; containerd is built without the cgo-only btrfs snapshotter.
	kl := KubeletComponent(v.Kubernetes)
	if kl.Module != "k8s.io/kubernetes" || kl.Name == KubernetesComponent(v.Kubernetes).Name || !strings.Contains(strings.Join(kl.LDFlags, " "), "gitVersion="+v.Kubernetes) {
		t.Errorf("kubelet %+v", kl)
	}
	if cd := ContainerdComponent(v.Containerd); strings.Join(cd.Tags, ",") != "no_btrfs" {
		t.Errorf("containerd tags %v", cd.Tags)
	}
	// kwok's cache key includes the Kubernetes version it is stamped with, so changing the
	// Kubernetes pin rebuilds kwok too; every other key is just the component's own version.
	kw := KwokComponent("v0.8.0", "v1.37.2")
	if kw.CacheKey != "v0.8.0-k8sv1.37.2" || !strings.Contains(strings.Join(kw.LDFlags, " "), "KubeVersion=1.37.2") {
		t.Errorf("kwok %+v", kw)
	}
	if AgentSandboxComponent("v0.5.6").CacheKey != "v0.5.6" {
		t.Error("agent-sandbox cache key")
	}
	k := KubernetesComponent("v1.37.2")
	if !strings.Contains(strings.Join(k.LDFlags, " "), "gitVersion=v1.37.2") || !strings.Contains(strings.Join(k.LDFlags, " "), "gitMinor=37") {
		t.Errorf("kubernetes ldflags %v", k.LDFlags)
	}
	if BinDir("/c", k) != "/c/bin/kubernetes/v1.37.2" {
		t.Error(BinDir("/c", k))
	}
}

func TestCopyReplaceExclude(t *testing.T) {
	for _, tc := range []struct {
		name, gomod, want, err string
	}{
		{"versioned replace and exclude", "module x\n\nreplace github.com/a/b v0.1.0 => github.com/a/b v0.1.1-0.2026\n\nexclude github.com/c/d/v5 v5.2.3\n",
			"replace github.com/a/b v0.1.0 => github.com/a/b v0.1.1-0.2026\nexclude github.com/c/d/v5 v5.2.3\n", ""},
		{"none", "module x\n", "", ""},
		{"local path", "module x\n\nreplace github.com/a/b => ../b\n", "", "local path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := copyReplaceExclude([]byte(tc.gomod))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("want error %q, got %v", tc.err, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// The Karpenter wrapper is Go source brakebench generates: it must parse, be a main package, and
// read the policy variable the lab sets; its cache key changes with it.
func TestKarpenterWrapper(t *testing.T) {
	c := KarpenterComponent("v1.14.1")
	if len(c.Binaries) != 1 || c.Binaries[0].WrapperMain == "" || !strings.HasPrefix(c.Binaries[0].Package, "brakebench.local/tools/karpenter/") {
		t.Fatalf("binaries %+v", c.Binaries)
	}
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", c.Binaries[0].WrapperMain, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name.Name != "main" {
		t.Errorf("package %s", f.Name.Name)
	}
	imports := map[string]bool{}
	for _, im := range f.Imports {
		imports[strings.Trim(im.Path.Value, `"`)] = true
	}
	for _, want := range []string{"sigs.k8s.io/karpenter/kwok/cloudprovider", "sigs.k8s.io/karpenter/pkg/operator", "sigs.k8s.io/karpenter/pkg/controllers"} {
		if !imports[want] {
			t.Errorf("wrapper does not import %s", want)
		}
	}
	if !strings.Contains(c.Binaries[0].WrapperMain, `os.Getenv("REPAIR_POLICIES")`) {
		t.Error("wrapper does not read REPAIR_POLICIES")
	}
	if c.CacheKey != "v1.14.1-"+KarpenterWrapperVersion || !strings.Contains(strings.Join(c.LDFlags, " "), "operator.Version=v1.14.1") {
		t.Errorf("cache key %s, ldflags %v", c.CacheKey, c.LDFlags)
	}
}
