package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// componentPatches are extra flags per kwokctl component, in order.
type componentPatches struct {
	names []string
	args  map[string][]string
}

// add appends key=value flags (no dashes) to component.
func (p *componentPatches) add(component string, kvs ...string) {
	if p.args == nil {
		p.args = map[string][]string{}
	}
	if _, ok := p.args[component]; !ok {
		p.names = append(p.names, component)
	}
	p.args[component] = append(p.args[component], kvs...)
}

// document is a KwokctlConfiguration YAML document carrying the patches. Each flag is appended
// after kwokctl's own (the last of a repeated flag wins; kwokctl's "override" drops a flag it did
// not set itself).
func (p *componentPatches) document() ([]byte, error) {
	var comps []any
	for _, n := range p.names {
		var extra []any
		for _, kv := range p.args[n] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("%s flag %q: expected key=value", n, kv)
			}
			extra = append(extra, map[string]any{"key": k, "value": v, "override": false})
		}
		comps = append(comps, map[string]any{"name": n, "extraArgs": extra})
	}
	doc, err := yaml.Marshal(map[string]any{
		"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokctlConfiguration",
		"componentsPatches": comps,
	})
	if err != nil {
		return nil, err
	}
	return append([]byte("---\n"), doc...), nil
}
