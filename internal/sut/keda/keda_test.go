package keda

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestCRDsApplyUpstreamPatches(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(dir, "config", "crd", rel)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("kustomization.yaml", "resources:\n- bases/so.yaml\npatches:\n- path: patches/so.yaml\n  target: {kind: CustomResourceDefinition, name: scaledobjects.keda.sh}\n")
	write("bases/so.yaml", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: scaledobjects.keda.sh}\nspec:\n  versions:\n  - name: v1alpha1\n    schema: {openAPIV3Schema: {properties: {spec: {properties: {x: {type: integer}}}}}}\n")
	write("patches/so.yaml", "- op: add\n  path: /spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/x/minimum\n  value: 0\n")
	crds, err := CRDs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != 1 {
		t.Fatalf("%d CRDs", len(crds))
	}
	versions, _, _ := unstructured.NestedSlice(crds[0].Object, "spec", "versions")
	min, found, _ := unstructured.NestedFieldNoCopy(versions[0].(map[string]any), "schema", "openAPIV3Schema", "properties", "spec", "properties", "x", "minimum")
	if !found || min != float64(0) {
		t.Errorf("the kustomize patch was not applied: %v %v", min, found)
	}
}

func TestScaledObjectAndAggregation(t *testing.T) {
	so := ScaledObject("ns", "so", ScaledObjectSpec{Pool: "p", URL: "http://127.0.0.1:1/demand", MetricType: "AverageValue", Target: 1, Min: 1, Max: 3,
		PollingInterval: 5 * time.Second, ScaleDownStabilization: 0})
	trig, _, _ := unstructured.NestedSlice(so.Object, "spec", "triggers")
	tm := trig[0].(map[string]any)
	md := tm["metadata"].(map[string]any)
	if tm["type"] != "metrics-api" || tm["metricType"] != "AverageValue" || md["valueLocation"] != ValueLocation || md["targetValue"] != "1" {
		t.Errorf("trigger %v", tm)
	}
	kind, _, _ := unstructured.NestedString(so.Object, "spec", "scaleTargetRef", "kind")
	maxR, _, _ := unstructured.NestedInt64(so.Object, "spec", "maxReplicaCount")
	if kind != "SandboxWarmPool" || maxR != 3 {
		t.Errorf("target %s max %d", kind, maxR)
	}
	objs := AggregationObjects(16443, []byte("CA"))
	ext, _, _ := unstructured.NestedString(objs[0].Object, "spec", "externalName")
	port, _, _ := unstructured.NestedInt64(objs[1].Object, "spec", "service", "port")
	if ext != "localhost" || port != 16443 || objs[1].GetName() != APIServiceName {
		t.Errorf("aggregation objects %v", objs)
	}
}
