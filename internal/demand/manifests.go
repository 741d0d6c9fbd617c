package demand

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Manifests run the exporter in-cluster in namespace ns, as the blueprint's exporter runs: a
// ServiceAccount with read-only access to sandboxclaims (a Role in watch when it names one
// namespace, a ClusterRole when watch is "" = every namespace), a Deployment of image running
// `brakebench exporter`, and a Service; KEDA then reads
// http://brakebench-demand.<ns>.svc:<port>/demand. brakebench publishes no image: image is one the
// user built from this repository.
func Manifests(ns, watch, selector, image string, port int) []*unstructured.Unstructured {
	name := "brakebench-demand"
	labels := map[string]any{"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "brakebench"}
	meta := func() map[string]any { return map[string]any{"name": name, "namespace": ns, "labels": labels} }
	obj := func(apiVersion, kind string, rest map[string]any) *unstructured.Unstructured {
		o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta()}
		for k, v := range rest {
			o[k] = v
		}
		return &unstructured.Unstructured{Object: o}
	}
	sel := map[string]any{"app.kubernetes.io/name": name}
	rule := map[string]any{"apiGroups": []any{"extensions.agents.x-k8s.io"}, "resources": []any{"sandboxclaims"}, "verbs": []any{"get", "list", "watch"}}
	role, binding := obj("rbac.authorization.k8s.io/v1", "Role", map[string]any{"rules": []any{rule}}),
		obj("rbac.authorization.k8s.io/v1", "RoleBinding", nil)
	if watch == "" {
		role.SetKind("ClusterRole")
		binding.SetKind("ClusterRoleBinding")
		role.SetNamespace("")
		binding.SetNamespace("")
	} else {
		role.SetNamespace(watch)
		binding.SetNamespace(watch)
	}
	binding.Object["roleRef"] = map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": role.GetKind(), "name": name}
	binding.Object["subjects"] = []any{map[string]any{"kind": "ServiceAccount", "name": name, "namespace": ns}}
	args := []any{"exporter", "--listen", fmt.Sprintf(":%d", port), "--selector", selector}
	if watch != "" {
		args = append(args, "--namespace", watch)
	}
	return []*unstructured.Unstructured{
		obj("v1", "ServiceAccount", nil), role, binding,
		obj("apps/v1", "Deployment", map[string]any{"spec": map[string]any{
			"replicas": int64(1),
			"selector": map[string]any{"matchLabels": sel},
			"template": map[string]any{
				"metadata": map[string]any{"labels": sel},
				"spec": map[string]any{
					"serviceAccountName": name,
					"containers": []any{map[string]any{
						"name": "exporter", "image": image,
						"args":           args,
						"ports":          []any{map[string]any{"containerPort": int64(port), "name": "http"}},
						"readinessProbe": map[string]any{"httpGet": map[string]any{"path": Path, "port": "http"}},
						"resources":      map[string]any{"requests": map[string]any{"cpu": "10m", "memory": "32Mi"}},
					}},
				},
			},
		}}),
		obj("v1", "Service", map[string]any{"spec": map[string]any{
			"selector": sel,
			"ports":    []any{map[string]any{"name": "http", "port": int64(port), "targetPort": "http"}},
		}}),
	}
}
