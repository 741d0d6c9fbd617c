package recordertest

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
)

// Objects as the API server serves them: every object carries managedFields and the fields a real
// one has, so replayed events cost the informers what live ones do.

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func managed(manager, op string, at time.Time, fields string) []any {
	return []any{map[string]any{
		"manager": manager, "operation": op, "apiVersion": "v1", "time": ts(at), "fieldsType": "FieldsV1",
		"fieldsV1": map[string]any{"f:metadata": map[string]any{"f:labels": map[string]any{".": map[string]any{}, "f:" + fields: map[string]any{}}},
			"f:spec":   map[string]any{".": map[string]any{}, "f:" + fields + "Ref": map[string]any{".": map[string]any{}, "f:name": map[string]any{}}},
			"f:status": map[string]any{".": map[string]any{}, "f:conditions": map[string]any{}, "f:observedGeneration": map[string]any{}}},
	}}
}

// Claim is claim name at resourceVersion rv: bound to sandbox ("" = not yet) and Ready since
// ready (zero = not Ready).
func Claim(ns, name, pool, sandbox string, created, ready time.Time, rv int) *unstructured.Unstructured {
	status := map[string]any{}
	if sandbox != "" {
		status["sandbox"] = map[string]any{"name": sandbox}
	}
	cond := map[string]any{"type": "Ready", "status": "False", "reason": "SandboxNotReady", "message": "Sandbox is not ready", "observedGeneration": int64(1), "lastTransitionTime": ts(created)}
	if !ready.IsZero() {
		cond = map[string]any{"type": "Ready", "status": "True", "reason": "SandboxReady", "message": "Sandbox is ready", "observedGeneration": int64(1), "lastTransitionTime": ts(ready)}
	}
	status["conditions"] = []any{cond}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
		"metadata": map[string]any{
			"name": name, "namespace": ns, "uid": uid("claim", name), "resourceVersion": fmt.Sprint(rv), "generation": int64(1),
			"creationTimestamp": ts(created),
			"labels":            map[string]any{"agents.x-k8s.io/created-by": "go-client", "app.kubernetes.io/managed-by": "brakebench", "brakebench.io/run-id": "replay"},
			"annotations":       map[string]any{agentsandbox.ClientRequestedAtAnnot: created.UTC().Format(time.RFC3339Nano)},
			"managedFields":     append(managed("brakebench", "Update", created, "warmPool"), managed("agent-sandbox-controller", "Update", created, "sandbox")...),
		},
		"spec":   map[string]any{"warmPoolRef": map[string]any{"name": pool}},
		"status": status,
	}}
}

// Sandbox is a sandbox owned by owner ("SandboxWarmPool/p" or "SandboxClaim/c").
func Sandbox(ns, name, owner, launchType string, created time.Time, deleted bool, rv int) *unstructured.Unstructured {
	kind, oname, _ := strings.Cut(owner, "/")
	md := map[string]any{
		"name": name, "namespace": ns, "uid": uid("sandbox", name), "resourceVersion": fmt.Sprint(rv), "generation": int64(1),
		"creationTimestamp": ts(created),
		"labels":            map[string]any{"agents.x-k8s.io/sandbox-name-hash": "a1b2c3d4", "agents.x-k8s.io/warm-pool-sandbox": "bench-pool", agentsandbox.LaunchTypeLabel: launchType},
		"ownerReferences": []any{map[string]any{"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": kind, "name": oname,
			"uid": uid("owner", oname), "controller": true, "blockOwnerDeletion": true}},
		"managedFields": managed("agent-sandbox-controller", "Update", created, "podTemplate"),
	}
	if deleted {
		md["deletionTimestamp"] = ts(created.Add(time.Minute))
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox", "metadata": md,
		"spec": map[string]any{"replicas": int64(1), "podTemplate": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "sandbox", "image": "registry.k8s.io/pause:3.10",
				"resources": map[string]any{"requests": map[string]any{"cpu": "10m", "memory": "16Mi"}}}}}}},
		"status": map[string]any{"replicas": int64(1), "selector": "agents.x-k8s.io/sandbox-name-hash=a1b2c3d4",
			"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "DependenciesReady", "lastTransitionTime": ts(created)}}},
	}}
}

// Pool is the warm pool's spec and status.
func Pool(ns, name string, desired, replicas, ready int64, rv int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
		"metadata": map[string]any{"name": name, "namespace": ns, "uid": uid("pool", name), "resourceVersion": fmt.Sprint(rv)},
		"spec":     map[string]any{"replicas": desired, "sandboxTemplateRef": map[string]any{"name": "bench-template"}},
		"status":   map[string]any{"replicas": replicas, "readyReplicas": ready},
	}}
}

// Pod is pod name (uid distinguishes re-created pods of the same name) on node, scheduled and
// Ready at the given times (zero = not yet).
func Pod(ns, name, uidSuffix, node string, created, scheduled, ready time.Time, deleting bool, rv int) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, UID: types.UID(uid("pod", name+uidSuffix)), ResourceVersion: fmt.Sprint(rv),
			CreationTimestamp: metav1.NewTime(created),
			Labels:            map[string]string{"agents.x-k8s.io/sandbox-name-hash": "a1b2c3d4"},
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "agents.x-k8s.io/v1beta1", Kind: "Sandbox", Name: name, UID: types.UID(uid("sandbox", name))}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "agent-sandbox-controller", Operation: "Update", APIVersion: "v1", FieldsType: "FieldsV1",
					FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{".":{},"f:agents.x-k8s.io/sandbox-name-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"x\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"sandbox\"}":{".":{},"f:image":{},"f:name":{},"f:resources":{"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}}}}}`)},
				{Manager: "kwok", Operation: "Update", APIVersion: "v1", Subresource: "status", FieldsType: "FieldsV1",
					FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:startTime":{}}}`)},
			},
		},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "sandbox", Image: "registry.k8s.io/pause:3.10"}},
			Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if deleting {
		now := metav1.NewTime(created.Add(time.Minute))
		p.DeletionTimestamp = &now
	}
	if !scheduled.IsZero() {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(scheduled)})
	}
	if !ready.IsZero() {
		p.Status.Phase, p.Status.PodIP, p.Status.HostIP = corev1.PodRunning, "10.0.0.1", "10.0.0.2"
		p.Status.Conditions = append(p.Status.Conditions,
			corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(ready)},
			corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(ready)},
			corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(ready)})
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "sandbox", Ready: true, Image: "registry.k8s.io/pause:3.10", ImageID: "sha256:0", ContainerID: "containerd://0"}}
	}
	return p
}

func uid(kind, name string) string { return kind + "-" + name + "-0000-0000-000000000000" }
