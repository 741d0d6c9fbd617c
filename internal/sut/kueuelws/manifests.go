// Package kueuelws knows the gang-quota system under test: Kueue and the LeaderWorkerSet
// controller. It reads their CRDs, RBAC and admission webhooks from the pinned modules, rewires
// the webhooks to URL client configs (local processes in the lab), and builds the objects of the
// experiment (flavor, queues, LeaderWorkerSet).
package kueuelws

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/brakebench/brakebench/internal/kube"
)

// Resources of Kueue v1beta2 and LeaderWorkerSet v1.
var (
	LWSGVR            = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}
	WorkloadGVR       = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}
	ClusterQueueGVR   = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"}
	LocalQueueGVR     = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "localqueues"}
	ResourceFlavorGVR = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "resourceflavors"}
	MutatingGVR       = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
	ValidatingGVR     = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
)

// Names used by both the lab and the suite.
const (
	KueueNamespace      = "kueue-system"
	KueueServiceAccount = "kueue-controller-manager"
	LWSNamespace        = "lws-system"
	LWSServiceAccount   = "lws-controller-manager"
	QueueLabel          = "kueue.x-k8s.io/queue-name"
	// Gate is the brake: Kueue's feature gate that makes spec.leaderWorkerTemplate.size immutable
	// on a Kueue-managed LeaderWorkerSet.
	Gate = "LWSImmutableGroupSize"
	// WebhookPrefix names the webhook configurations the lab registers (cleanup finds them by it).
	WebhookPrefix = "brakebench-"
	GPUResource   = "nvidia.com/gpu"
)

// KueueCRDs reads Kueue's CRDs (config/components/crd/bases). Only the storage version is kept
// and conversion is None: the conversion webhook the kustomize build adds is not installed.
func KueueCRDs(moduleDir string) ([]*unstructured.Unstructured, error) {
	return storageOnlyCRDs(filepath.Join(moduleDir, "config", "components", "crd", "bases"))
}

// LWSCRDs reads the LeaderWorkerSet controller's CRDs (config/crd/bases).
func LWSCRDs(moduleDir string) ([]*unstructured.Unstructured, error) {
	return storageOnlyCRDs(filepath.Join(moduleDir, "config", "crd", "bases"))
}

func storageOnlyCRDs(dir string) ([]*unstructured.Unstructured, error) {
	return kube.OneVersionCRDs(filepath.Join(dir, "*.yaml"), kube.KeepStorage)
}

func readYAML(path string) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	objs, err := kube.DecodeYAML(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return objs, nil
}

// RBAC returns the namespaces, ServiceAccounts and upstream ClusterRoles (renamed so Kueue's and
// LWS's "manager-role" do not collide) bound to each controller's ServiceAccount. Kueue also gets
// its metrics-auth role (it reviews the tokens of its /metrics callers) and metrics-reader (the
// suite scrapes /metrics with Kueue's own token).
func RBAC(kueueDir, lwsDir string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, ns := range []string{KueueNamespace, LWSNamespace} {
		out = append(out, obj("v1", "Namespace", "", ns, nil))
	}
	out = append(out,
		obj("v1", "ServiceAccount", KueueNamespace, KueueServiceAccount, nil),
		obj("v1", "ServiceAccount", LWSNamespace, LWSServiceAccount, nil))
	type role struct{ file, name, ns, sa string }
	for _, r := range []role{
		{filepath.Join(kueueDir, "config", "components", "rbac", "role.yaml"), "brakebench-kueue-manager", KueueNamespace, KueueServiceAccount},
		{filepath.Join(kueueDir, "config", "components", "rbac", "metrics_auth_role.yaml"), "brakebench-kueue-metrics-auth", KueueNamespace, KueueServiceAccount},
		{filepath.Join(kueueDir, "config", "components", "rbac", "metrics_reader_role.yaml"), "brakebench-kueue-metrics-reader", KueueNamespace, KueueServiceAccount},
		{filepath.Join(kueueDir, "config", "components", "rbac", "manager_secrets_role.yaml"), "brakebench-kueue-secrets", KueueNamespace, KueueServiceAccount},
		{filepath.Join(lwsDir, "config", "rbac", "role.yaml"), "brakebench-lws-manager", LWSNamespace, LWSServiceAccount},
	} {
		objs, err := readYAML(r.file)
		if err != nil {
			return nil, err
		}
		found := false
		for _, o := range objs {
			kind := o.GetKind()
			if kind != "ClusterRole" && kind != "Role" {
				continue
			}
			if found {
				return nil, fmt.Errorf("%s: more than one role", r.file)
			}
			found = true
			o.SetName(r.name)
			binding := "ClusterRoleBinding"
			bns := ""
			if kind == "Role" {
				// Upstream's namespace is kustomize's placeholder; the controller's is the real one.
				o.SetNamespace(r.ns)
				binding, bns = "RoleBinding", r.ns
			}
			out = append(out, o)
			rb := obj("rbac.authorization.k8s.io/v1", binding, bns, r.name, nil)
			rb.Object["roleRef"] = map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": r.name}
			rb.Object["subjects"] = []any{map[string]any{"kind": "ServiceAccount", "name": r.sa, "namespace": r.ns}}
			out = append(out, rb)
		}
		if !found {
			return nil, fmt.Errorf("%s: no role", r.file)
		}
	}
	return out, nil
}

func obj(apiVersion, kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	u.SetName(name)
	if ns != "" {
		u.SetNamespace(ns)
	}
	if spec != nil {
		u.Object["spec"] = spec
	}
	return u
}

// WebhookSource is one upstream webhook manifest and where its server listens.
type WebhookSource struct {
	File    string // upstream manifests.yaml
	Name    string // the configurations are named <WebhookPrefix><Name>-mutating / -validating
	BaseURL string // https://127.0.0.1:<port>
	// Keep selects webhooks by the resources they intercept; nil keeps all.
	Keep func(resources []string) bool
	// NamespaceSelector and ObjectSelector, by webhook name, restrict what each webhook sees
	// (the selectors upstream's kustomize patches add).
	NamespaceSelector map[string]map[string]any
	ObjectSelector    map[string]map[string]any
}

// Webhooks reads src.File and rewrites every webhook's clientConfig from the in-cluster Service
// to src.BaseURL+path with caPEM as its CA bundle, the way envtest runs webhooks out of cluster.
func Webhooks(src WebhookSource, caPEM []byte) ([]*unstructured.Unstructured, error) {
	objs, err := readYAML(src.File)
	if err != nil {
		return nil, err
	}
	bundle := base64.StdEncoding.EncodeToString(caPEM)
	var out []*unstructured.Unstructured
	for _, o := range objs {
		suffix := map[string]string{"MutatingWebhookConfiguration": "-mutating", "ValidatingWebhookConfiguration": "-validating"}[o.GetKind()]
		if suffix == "" {
			continue
		}
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		var keep []any
		for _, h := range hooks {
			hm, _ := h.(map[string]any)
			name, _ := hm["name"].(string)
			var resources []string
			rules, _ := hm["rules"].([]any)
			for _, r := range rules {
				rm, _ := r.(map[string]any)
				rs, _ := rm["resources"].([]any)
				for _, x := range rs {
					if s, ok := x.(string); ok {
						resources = append(resources, s)
					}
				}
			}
			if src.Keep != nil && !src.Keep(resources) {
				continue
			}
			path, _, _ := unstructured.NestedString(hm, "clientConfig", "service", "path")
			if path == "" {
				return nil, fmt.Errorf("%s: webhook %s has no clientConfig.service.path", src.File, name)
			}
			hm["clientConfig"] = map[string]any{"url": strings.TrimSuffix(src.BaseURL, "/") + path, "caBundle": bundle}
			if sel, ok := src.NamespaceSelector[name]; ok {
				hm["namespaceSelector"] = sel
			}
			if sel, ok := src.ObjectSelector[name]; ok {
				hm["objectSelector"] = sel
			}
			keep = append(keep, hm)
		}
		if len(keep) == 0 {
			continue
		}
		o.Object["webhooks"] = keep
		o.SetName(WebhookPrefix + src.Name + suffix)
		out = append(out, o)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no webhook configurations", src.File)
	}
	return out, nil
}

// KueueWebhooks are Kueue's webhooks for its own API, pods and LeaderWorkerSets (the frameworks
// the lab enables); job-framework webhooks skip kube-system and kueue-system as upstream's do.
func KueueWebhooks(moduleDir, baseURL string, caPEM []byte) ([]*unstructured.Unstructured, error) {
	notSystem := map[string]any{"matchExpressions": []any{map[string]any{
		"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": []any{"kube-system", KueueNamespace, LWSNamespace}}}}
	sel := map[string]map[string]any{}
	for _, n := range []string{"mpod.kb.io", "vpod.kb.io", "mleaderworkerset.kb.io", "vleaderworkerset.kb.io"} {
		sel[n] = notSystem
	}
	return Webhooks(WebhookSource{
		File: filepath.Join(moduleDir, "config", "components", "webhook", "manifests.yaml"), Name: "kueue", BaseURL: baseURL,
		NamespaceSelector: sel,
		Keep: func(resources []string) bool {
			for _, r := range resources {
				if r == "pods" || r == "leaderworkersets" || r == "workloads" || r == "clusterqueues" || r == "localqueues" ||
					r == "resourceflavors" || r == "cohorts" || r == "workloads/status" {
					return true
				}
			}
			return false
		},
	}, caPEM)
}

// LWSWebhooks are the LeaderWorkerSet controller's webhooks; its pod webhooks only see pods
// of a LeaderWorkerSet (upstream's kustomize patch).
func LWSWebhooks(moduleDir, baseURL string, caPEM []byte) ([]*unstructured.Unstructured, error) {
	lwsPods := map[string]any{"matchExpressions": []any{map[string]any{"key": "leaderworkerset.sigs.k8s.io/name", "operator": "Exists"}}}
	return Webhooks(WebhookSource{
		File: filepath.Join(moduleDir, "config", "webhook", "manifests.yaml"), Name: "lws", BaseURL: baseURL,
		ObjectSelector: map[string]map[string]any{"mpod.kb.io": lwsPods, "vpod.kb.io": lwsPods},
	}, caPEM)
}
