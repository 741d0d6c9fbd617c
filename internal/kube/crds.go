package kube

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// OneVersionCRDs reads every CustomResourceDefinition in the YAML files matching glob and keeps
// exactly one version of each, served and stored, with conversion None: brakebench installs no
// conversion webhook, and keeping a second version served under None would be wrong (the schemas
// differ). keep picks the version (KeepVersion, KeepStorage); a CRD where it picks none or more
// than one is an error.
func OneVersionCRDs(glob string, keep func(version map[string]any) bool) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no CRDs at %s", glob)
	}
	sort.Strings(files)
	var out []*unstructured.Unstructured
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		objs, err := DecodeYAML(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, o := range objs {
			if o.GetKind() != "CustomResourceDefinition" {
				continue
			}
			versions, _, _ := unstructured.NestedSlice(o.Object, "spec", "versions")
			var kept []any
			for _, v := range versions {
				if vm, ok := v.(map[string]any); ok && keep(vm) {
					vm["served"], vm["storage"] = true, true
					kept = append(kept, vm)
				}
			}
			if len(kept) != 1 {
				return nil, fmt.Errorf("%s: CRD %s: %d versions match, want exactly one", f, o.GetName(), len(kept))
			}
			if err := unstructured.SetNestedSlice(o.Object, kept, "spec", "versions"); err != nil {
				return nil, err
			}
			if err := unstructured.SetNestedMap(o.Object, map[string]any{"strategy": "None"}, "spec", "conversion"); err != nil {
				return nil, err
			}
			out = append(out, o)
		}
	}
	return out, nil
}

// KeepVersion keeps the version called name.
func KeepVersion(name string) func(map[string]any) bool {
	return func(v map[string]any) bool { return v["name"] == name }
}

// KeepStorage keeps the storage version.
func KeepStorage(v map[string]any) bool { return v["storage"] == true }
