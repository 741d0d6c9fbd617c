package suites

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/brakebench/brakebench/loadgen"
)

// The runner may create, list and watch SandboxClaims in its cell's namespace, nothing more.
func TestRunnerRBACIsLeast(t *testing.T) {
	objs := RunnerRBAC("ns1", map[string]string{"k": "v"})
	kinds := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		kinds[o.GetKind()] = o
		if o.GetNamespace() != "ns1" || o.GetLabels()["k"] != "v" {
			t.Errorf("%s: namespace %q labels %v", o.GetKind(), o.GetNamespace(), o.GetLabels())
		}
	}
	if len(kinds) != 3 || kinds["ClusterRole"] != nil {
		t.Fatalf("kinds %v", kinds)
	}
	rules, _, _ := unstructured.NestedSlice(kinds["Role"].Object, "rules")
	if len(rules) != 1 {
		t.Fatalf("rules %v", rules)
	}
	r := rules[0].(map[string]any)
	if !reflect.DeepEqual(r["resources"], []any{"sandboxclaims"}) || !reflect.DeepEqual(r["verbs"], []any{"create", "list", "watch"}) {
		t.Errorf("rule %v", r)
	}
}

func TestRunnerJob(t *testing.T) {
	spec := loadgen.AgentSpec{Namespace: "ns1", Pool: "p", T0: time.Unix(1000, 0).UTC(), Schedule: loadgen.Burst(3), ClaimTimeout: time.Minute}
	job, err := runnerJob("ns1", "img:1", spec, map[string]string{"k": "v"}, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	pod, _, _ := unstructured.NestedMap(job.Object, "spec", "template", "spec")
	if pod["serviceAccountName"] != RunnerName || pod["restartPolicy"] != "Never" {
		t.Errorf("pod spec %v", pod)
	}
	if b, _, _ := unstructured.NestedInt64(job.Object, "spec", "backoffLimit"); b != 0 {
		t.Errorf("backoffLimit %d: a failed burst must not be fired again", b)
	}
	c := pod["containers"].([]any)[0].(map[string]any)
	args := c["args"].([]any)
	var back loadgen.AgentSpec
	if len(args) != 3 || args[0] != "agent" || json.Unmarshal([]byte(args[2].(string)), &back) != nil || !back.T0.Equal(spec.T0) || len(back.Schedule) != 3 {
		t.Errorf("args %v", args)
	}
}
