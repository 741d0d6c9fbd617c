package e2e

import (
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/brakebench/brakebench/internal/kube"
)

var (
	cliOnce sync.Once
	cliPath string
	cliErr  error
	cliOut  []byte
)

// buildCLI builds cmd/brakebench once per test binary.
func buildCLI(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		dir, err := exec.Command("mktemp", "-d").Output()
		if err != nil {
			cliErr = err
			return
		}
		cliPath = filepath.Join(string(dir[:len(dir)-1]), "brakebench")
		cliOut, cliErr = exec.Command("go", "build", "-o", cliPath, "../../cmd/brakebench").CombinedOutput()
	})
	if cliErr != nil {
		t.Fatalf("build brakebench: %v\n%s", cliErr, cliOut)
	}
	return cliPath
}

func nsObject(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kube.ManagedByKey: kube.ManagedByValue}}}
}
