package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/brakebench/brakebench/internal/kube"
)

// stagesConfig builds the kwok Stage set of the lab from the pinned kwok module's own stages:
// node initialize + heartbeat with lease (kwokctl's defaults), and the fast pod stages with a
// boot delay added to pod-ready, so a scheduled pod turns Running/Ready after delay..delay+jitter.
func stagesConfig(kwokModuleDir string, bootDelay, bootJitter time.Duration) ([]byte, error) {
	files := []string{
		"kustomize/stage/node/fast/node-initialize.yaml",
		"kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
		"kustomize/stage/pod/fast/pod-ready.yaml",
		"kustomize/stage/pod/fast/pod-complete.yaml",
		"kustomize/stage/pod/fast/pod-delete.yaml",
	}
	var out []byte
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(kwokModuleDir, f))
		if err != nil {
			return nil, fmt.Errorf("kwok stage %s: %w", f, err)
		}
		objs, err := kube.DecodeYAML(raw)
		if err != nil || len(objs) != 1 {
			return nil, fmt.Errorf("kwok stage %s: expected one Stage (%v)", f, err)
		}
		st := objs[0]
		if st.GetName() == "pod-ready" && (bootDelay > 0 || bootJitter > 0) {
			delay := map[string]any{"durationMilliseconds": bootDelay.Milliseconds()}
			if bootJitter > 0 {
				// kwok's jitter is the upper bound of the uniform delay.
				delay["jitterDurationMilliseconds"] = (bootDelay + bootJitter).Milliseconds()
			}
			spec := st.Object["spec"].(map[string]any)
			spec["delay"] = delay
		}
		doc, err := yaml.Marshal(st.Object)
		if err != nil {
			return nil, err
		}
		out = append(out, []byte("---\n")...)
		out = append(out, doc...)
	}
	return out, nil
}
