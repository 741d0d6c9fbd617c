package kueuelws

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestMergeGates(t *testing.T) {
	for _, tc := range []struct {
		name        string
		args, gates []string
		want        []string
	}{
		{"adds the flag", []string{"--zap-log-level=2"}, []string{"LWSImmutableGroupSize=false"}, []string{"--zap-log-level=2", "--feature-gates=LWSImmutableGroupSize=false"}},
		{"replaces one gate, keeps others", []string{"--feature-gates=A=true,LWSImmutableGroupSize=true", "--x"}, []string{"LWSImmutableGroupSize=false"},
			[]string{"--feature-gates=A=true,LWSImmutableGroupSize=false", "--x"}},
		{"appends to an existing list", []string{"--feature-gates=A=true"}, []string{"B=false"}, []string{"--feature-gates=A=true,B=false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := MergeGates(tc.args, tc.gates)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("MergeGates(%v, %v) = %v, want %v", tc.args, tc.gates, got, tc.want)
			}
			if !reflect.DeepEqual(tc.args, append([]string(nil), tc.args...)) {
				t.Error("input modified")
			}
		})
	}
	if g := GatesIn([]string{"--feature-gates=A=true,B=false"}); !reflect.DeepEqual(g, []string{"A=true", "B=false"}) {
		t.Errorf("GatesIn %v", g)
	}
}

const manifest = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-webhook-configuration
webhooks:
- name: mpod.kb.io
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate--v1-pod}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
- name: mjob.kb.io
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate-batch-v1-job}
  rules: [{apiGroups: [batch], apiVersions: [v1], operations: [CREATE], resources: [jobs]}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-webhook-configuration
webhooks:
- name: vpod.kb.io
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /validate--v1-pod}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
`

func TestWebhooksRewriteToURLs(t *testing.T) {
	f := filepath.Join(t.TempDir(), "manifests.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	sel := map[string]any{"matchLabels": map[string]any{"a": "b"}}
	objs, err := Webhooks(WebhookSource{File: f, Name: "x", BaseURL: "https://127.0.0.1:9443/",
		Keep:           func(r []string) bool { return r[0] == "pods" },
		ObjectSelector: map[string]map[string]any{"mpod.kb.io": sel}}, []byte("CA"))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].GetName() != "brakebench-x-mutating" || objs[1].GetName() != "brakebench-x-validating" {
		t.Fatalf("got %d objects %v", len(objs), objs)
	}
	hooks, _, _ := unstructured.NestedSlice(objs[0].Object, "webhooks")
	if len(hooks) != 1 {
		t.Fatalf("the job webhook should be filtered out: %v", hooks)
	}
	h := hooks[0].(map[string]any)
	cc := h["clientConfig"].(map[string]any)
	if cc["url"] != "https://127.0.0.1:9443/mutate--v1-pod" || cc["caBundle"] != "Q0E=" || cc["service"] != nil {
		t.Errorf("clientConfig %v", cc)
	}
	if !reflect.DeepEqual(h["objectSelector"], sel) {
		t.Errorf("objectSelector %v", h["objectSelector"])
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	_ = os.WriteFile(bad, []byte(strings.ReplaceAll(manifest, "path: /validate--v1-pod", "port: 443")), 0o644)
	if _, err := Webhooks(WebhookSource{File: bad, Name: "x", BaseURL: "https://h"}, nil); err == nil || !strings.Contains(err.Error(), "vpod.kb.io") {
		t.Errorf("a webhook without a path must be an error naming it: %v", err)
	}
}

func TestQueuesAndLeaderWorkerSet(t *testing.T) {
	_, cq, lq := Queues("p", "ns", Quota{GPUs: 4, CPU: "8", Memory: "1Gi"})
	if lq.GetNamespace() != "ns" || lq.Object["spec"].(map[string]any)["clusterQueue"] != "p-cq" || cq.GetName() != "p-cq" {
		t.Errorf("queues %v %v", cq, lq)
	}
	l := LeaderWorkerSet("ns", "g", "p-lq", Group{Replicas: 1, Size: 2, GPUsPerPod: 1, Image: "pause"})
	if l.GetLabels()[QueueLabel] != "p-lq" {
		t.Error("the LWS must carry the queue label (Kueue manages it only then)")
	}
	size, _, _ := unstructured.NestedInt64(l.Object, "spec", "leaderWorkerTemplate", "size")
	if size != 2 {
		t.Errorf("size %d", size)
	}
}

func TestRBACRenamesAndBinds(t *testing.T) {
	kdir, ldir := t.TempDir(), t.TempDir()
	write := func(dir, rel, body string) {
		p := filepath.Join(dir, rel)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cr := "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: manager-role}\nrules: []\n"
	for _, f := range []string{"role.yaml", "metrics_auth_role.yaml", "metrics_reader_role.yaml"} {
		write(kdir, "config/components/rbac/"+f, cr)
	}
	write(kdir, "config/components/rbac/manager_secrets_role.yaml", "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: manager-secrets-role, namespace: system}\nrules: []\n")
	write(ldir, "config/rbac/role.yaml", cr)
	objs, err := RBAC(kdir, ldir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		got[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = o
	}
	for _, want := range []string{
		"ClusterRole//brakebench-kueue-manager", "ClusterRole//brakebench-lws-manager", "ClusterRoleBinding//brakebench-lws-manager",
		"Role/kueue-system/brakebench-kueue-secrets", "RoleBinding/kueue-system/brakebench-kueue-secrets",
		"ServiceAccount/kueue-system/kueue-controller-manager", "Namespace//lws-system",
	} {
		if got[want] == nil {
			t.Errorf("missing %s (have %v)", want, len(got))
		}
	}
	if b := got["ClusterRoleBinding//brakebench-lws-manager"]; b != nil {
		subj := b.Object["subjects"].([]any)[0].(map[string]any)
		if subj["name"] != LWSServiceAccount || subj["namespace"] != LWSNamespace {
			t.Errorf("binding subject %v", subj)
		}
	}
}
