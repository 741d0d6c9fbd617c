package agentsandbox

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/brakebench/brakebench/internal/flagset"
)

func TestCRDsAreWebhookFree(t *testing.T) {
	crds, err := CRDs("testdata/module")
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != 1 {
		t.Fatalf("%d CRDs", len(crds))
	}
	versions, _, _ := unstructured.NestedSlice(crds[0].Object, "spec", "versions")
	if len(versions) != 1 || versions[0].(map[string]any)["name"] != "v1beta1" {
		t.Errorf("versions %v: only v1beta1 may stay", versions)
	}
	conv, _, _ := unstructured.NestedMap(crds[0].Object, "spec", "conversion")
	if !reflect.DeepEqual(conv, map[string]any{"strategy": "None"}) {
		t.Errorf("conversion %v", conv)
	}
}

func TestRBACKeepsIdentityOnly(t *testing.T) {
	objs, err := RBAC("testdata/module")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind())
	}
	want := []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRole", "ClusterRoleBinding"}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds %v, want %v (no Deployment, no Service, namespace first)", kinds, want)
	}
}

func TestMergeFlagsAndTags(t *testing.T) {
	cases := []struct {
		base, extra, want []string
	}{
		{[]string{"--leader-elect=true", "--extensions"}, nil, []string{"--leader-elect=true", "--extensions"}},
		{[]string{"--leader-elect=true", "--sandbox-warm-pool-max-refill-rate=5"}, []string{"--sandbox-warm-pool-max-refill-rate=10"},
			[]string{"--leader-elect=true", "--sandbox-warm-pool-max-refill-rate=10"}},
		{[]string{"--extensions"}, []string{"--api-connections=4"}, []string{"--extensions", "--api-connections=4"}},
	}
	for _, c := range cases {
		if got := flagset.Merge(c.base, c.extra); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Merge(%v, %v) = %v, want %v", c.base, c.extra, got, c.want)
		}
	}
	tags := []struct{ image, tag, retagged string }{
		{"registry.k8s.io/agent-sandbox/agent-sandbox-controller:v0.5.5", "v0.5.5", "registry.k8s.io/agent-sandbox/agent-sandbox-controller:v0.5.6"},
		{"localhost:5000/controller", "", "localhost:5000/controller:v0.5.6"},
	}
	for _, c := range tags {
		if imageTag(c.image) != c.tag || withTag(c.image, "v0.5.6") != c.retagged {
			t.Errorf("%s: tag %q retag %q", c.image, imageTag(c.image), withTag(c.image, "v0.5.6"))
		}
	}
}
