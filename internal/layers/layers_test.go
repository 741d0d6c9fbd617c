package layers

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/brakebench/brakebench"

// violations lists, for each package of pure, what of its dependencies (transitive, as
// `go list -deps` prints them) breaks the rule: module packages outside pure, and how many
// client-go packages it pulls in.
func violations(deps map[string][]string, pure []string) []string {
	var out []string
	for _, p := range pure {
		clientGo := 0
		for _, d := range deps[p] {
			switch {
			case strings.HasPrefix(d, "k8s.io/client-go"):
				clientGo++
			case strings.HasPrefix(d, module+"/"):
				if rel := strings.TrimPrefix(d, module+"/"); !slices.Contains(pure, rel) {
					out = append(out, fmt.Sprintf("%s imports %s (not a pure package)", p, rel))
				}
			}
		}
		if clientGo > 0 {
			out = append(out, fmt.Sprintf("%s pulls in %d k8s.io/client-go packages", p, clientGo))
		}
	}
	return out
}

// TestPureLayersTalkToNoCluster checks the import graph of this tree.
func TestPureLayersTalkToNoCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	deps := map[string][]string{}
	for _, p := range Pure {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+"/"+p).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", p, err)
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			deps[p] = append(deps[p], sc.Text())
		}
	}
	if v := violations(deps, Pure); len(v) > 0 {
		t.Errorf("the pure layers import what talks to a cluster:\n%s", strings.Join(v, "\n"))
	}
}

// The rule itself can fail: a pure package reaching client-go, or a cluster-acting package, is
// reported; one that stays inside the list is not.
func TestViolations(t *testing.T) {
	tests := []struct {
		name string
		deps map[string][]string
		want int
	}{
		{"pure", map[string][]string{"internal/analysis": {"fmt", module + "/internal/results", "k8s.io/apimachinery/pkg/util/yaml"}}, 0},
		{"client-go", map[string][]string{"internal/analysis": {"k8s.io/client-go/rest", "k8s.io/client-go/kubernetes"}}, 1},
		{"a cluster-acting package", map[string][]string{"reports": {module + "/faults", module + "/internal/kube", "k8s.io/client-go/rest"}}, 3},
	}
	for _, tc := range tests {
		if got := violations(tc.deps, []string{"internal/analysis", "reports", "internal/results"}); len(got) != tc.want {
			t.Errorf("%s: %d violations %v, want %d", tc.name, len(got), got, tc.want)
		}
	}
}
