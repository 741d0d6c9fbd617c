// Package keda knows KEDA as the pool-autoscaling suite uses it: its CRDs from the pinned module
// (with upstream's kustomize JSON patches applied), the aggregation-layer objects that route
// external.metrics.k8s.io to a local metrics adapter, and the ScaledObject that drives a
// SandboxWarmPool's /scale from a metrics-api trigger.
package keda

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
)

// Resources.
var (
	ScaledObjectGVR = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}
	HPAGVR          = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
	APIServiceGVR   = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

// Names the lab uses.
const (
	Namespace         = "keda"
	APIServiceName    = "v1beta1.external.metrics.k8s.io"
	MetricsService    = "keda-metrics-apiserver"
	MetricsServiceDNS = MetricsService + "." + Namespace + ".svc"
	OperatorDNS       = "keda-operator." + Namespace + ".svc"
	// ValueLocation is where the demand exporter puts the count in its JSON.
	ValueLocation = "claims"
)

// CRDs reads KEDA's CRDs (config/crd/bases) and applies the JSON patches its
// config/crd/kustomization.yaml lists (bounds on stabilizationWindowSeconds).
func CRDs(moduleDir string) ([]*unstructured.Unstructured, error) {
	base := filepath.Join(moduleDir, "config", "crd")
	var kz struct {
		Resources []string `json:"resources"`
		Patches   []struct {
			Path   string `json:"path"`
			Target struct {
				Name string `json:"name"`
			} `json:"target"`
		} `json:"patches"`
	}
	raw, err := os.ReadFile(filepath.Join(base, "kustomization.yaml"))
	if err != nil {
		return nil, fmt.Errorf("KEDA CRDs: %w", err)
	}
	if err := yaml.Unmarshal(raw, &kz); err != nil {
		return nil, fmt.Errorf("%s/kustomization.yaml: %w", base, err)
	}
	patches := map[string][]byte{}
	for _, p := range kz.Patches {
		praw, err := os.ReadFile(filepath.Join(base, p.Path))
		if err != nil {
			return nil, err
		}
		pj, err := yaml.YAMLToJSON(praw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Path, err)
		}
		patches[p.Target.Name] = pj
	}
	sort.Strings(kz.Resources)
	var out []*unstructured.Unstructured
	for _, r := range kz.Resources {
		craw, err := os.ReadFile(filepath.Join(base, r))
		if err != nil {
			return nil, err
		}
		objs, err := kube.DecodeYAML(craw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r, err)
		}
		for _, o := range objs {
			if pj, ok := patches[o.GetName()]; ok {
				if o, err = applyPatch(o, pj); err != nil {
					return nil, fmt.Errorf("patch %s: %w", o.GetName(), err)
				}
			}
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no CRDs listed in %s/kustomization.yaml", base)
	}
	return out, nil
}

func applyPatch(o *unstructured.Unstructured, patchJSON []byte) (*unstructured.Unstructured, error) {
	p, err := jsonpatch.DecodePatch(patchJSON)
	if err != nil {
		return o, err
	}
	doc, err := json.Marshal(o.Object)
	if err != nil {
		return o, err
	}
	patched, err := p.Apply(doc)
	if err != nil {
		return o, err
	}
	var m map[string]any
	if err := json.Unmarshal(patched, &m); err != nil {
		return o, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// AggregationObjects route external.metrics.k8s.io to an adapter listening on localhost:port: an
// ExternalName Service "localhost" (the aggregator resolves it to https://localhost:<port> while
// --enable-aggregator-routing is off) and the APIService, trusting caPEM.
func AggregationObjects(port int, caPEM []byte) []*unstructured.Unstructured {
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": MetricsService, "namespace": Namespace},
		"spec": map[string]any{
			"type": "ExternalName", "externalName": "localhost",
			"ports": []any{map[string]any{"name": "https", "port": int64(port), "protocol": "TCP"}},
		},
	}}
	api := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": APIServiceName},
		"spec": map[string]any{
			"service":              map[string]any{"name": MetricsService, "namespace": Namespace, "port": int64(port)},
			"group":                "external.metrics.k8s.io",
			"version":              "v1beta1",
			"groupPriorityMinimum": int64(100),
			"versionPriority":      int64(100),
			"caBundle":             base64.StdEncoding.EncodeToString(caPEM),
		},
	}}
	return []*unstructured.Unstructured{svc, api}
}

// ScaledObjectSpec is how the ScaledObject drives the pool.
type ScaledObjectSpec struct {
	Pool            string
	URL             string // the demand exporter, as KEDA's metrics-api scaler reaches it
	MetricType      string // Value | AverageValue
	Target          float64
	Min, Max        int
	PollingInterval time.Duration
	// ScaleDownStabilization is behavior.scaleDown.stabilizationWindowSeconds (upstream HPA
	// default 300 s; the blueprint uses 0).
	ScaleDownStabilization time.Duration
	// ScaleUpPods > 0 replaces the HPA's default scale-up policies with at most ScaleUpPods pods
	// per ScaleUpPeriod.
	ScaleUpPods   int
	ScaleUpPeriod time.Duration
}

// ScaledObject targets the SandboxWarmPool's /scale with a metrics-api trigger.
func ScaledObject(ns, name string, s ScaledObjectSpec) *unstructured.Unstructured {
	behavior := map[string]any{
		"scaleDown": map[string]any{"stabilizationWindowSeconds": int64(s.ScaleDownStabilization / time.Second)},
	}
	if s.ScaleUpPods > 0 {
		behavior["scaleUp"] = map[string]any{
			"stabilizationWindowSeconds": int64(0),
			"selectPolicy":               "Max",
			"policies":                   []any{map[string]any{"type": "Pods", "value": int64(s.ScaleUpPods), "periodSeconds": int64(s.ScaleUpPeriod / time.Second)}},
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"scaleTargetRef": map[string]any{
				"apiVersion": agentsandbox.PoolGVR.GroupVersion().String(), "kind": "SandboxWarmPool", "name": s.Pool,
			},
			"pollingInterval": int64(s.PollingInterval / time.Second),
			"minReplicaCount": int64(s.Min),
			"maxReplicaCount": int64(s.Max),
			"advanced":        map[string]any{"horizontalPodAutoscalerConfig": map[string]any{"behavior": behavior}},
			"triggers": []any{map[string]any{
				"type":       "metrics-api",
				"metricType": s.MetricType,
				"metadata": map[string]any{
					"url": s.URL, "format": "json", "valueLocation": ValueLocation,
					"targetValue": fmt.Sprint(s.Target),
				},
			}},
		},
	}}
}

// HPAName is the HPA KEDA creates for a ScaledObject.
func HPAName(scaledObject string) string { return "keda-hpa-" + scaledObject }
