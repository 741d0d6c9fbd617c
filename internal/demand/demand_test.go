package demand

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
)

func claim(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim"}}
	u.SetName(name)
	u.SetNamespace("ns")
	return u
}

func get(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body["claims"]
}

func TestExporterCountsAndKeepsLastCountOnAPIErrors(t *testing.T) {
	scheme := runtime.NewScheme()
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{agentsandbox.ClaimGVR: "SandboxClaimList"}, claim("a"), claim("b"))
	ctx := context.Background()
	e, err := Start(ctx, dc, "ns", "", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Stop(ctx) }()
	if n := get(t, e.URL()); n != 2 {
		t.Fatalf("served %d, want 2", n)
	}
	if err := dc.Resource(agentsandbox.ClaimGVR).Namespace("ns").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServed(t, e, 1)
	// From now on every list and watch fails: the exporter keeps serving the last count.
	fail := func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("apiserver unavailable")
	}
	dc.PrependReactor("list", "*", fail)
	dc.PrependWatchReactor("*", func(clienttesting.Action) (bool, watch.Interface, error) {
		return true, nil, errors.New("apiserver unavailable")
	})
	time.Sleep(300 * time.Millisecond)
	if n := get(t, e.URL()); n != 1 {
		t.Errorf("after API errors served %d, want the last count 1", n)
	}
	if h := e.Hits(); len(h) < 3 || h[0].Value != 2 {
		t.Errorf("hits %v", h)
	}
}

func waitServed(t *testing.T, e *Exporter, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if get(t, e.URL()) == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("never served %d", want)
}

func TestManifestsAreReadOnlyAndNamespaced(t *testing.T) {
	objs := Manifests("demo", "", "a=b", "img:1", 8080)
	kinds := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		cluster := o.GetKind() == "ClusterRole" || o.GetKind() == "ClusterRoleBinding"
		if (o.GetNamespace() != "demo") != cluster {
			t.Errorf("%s %s in namespace %q", o.GetKind(), o.GetName(), o.GetNamespace())
		}
		kinds[o.GetKind()] = o
	}
	kinds["Role"] = kinds["ClusterRole"]
	kinds["RoleBinding"] = kinds["ClusterRoleBinding"]
	for _, k := range []string{"ServiceAccount", "Role", "RoleBinding", "Deployment", "Service"} {
		if kinds[k] == nil {
			t.Fatalf("no %s", k)
		}
	}
	rules, _, _ := unstructured.NestedSlice(kinds["Role"].Object, "rules")
	for _, v := range rules[0].(map[string]any)["verbs"].([]any) {
		if v != "get" && v != "list" && v != "watch" {
			t.Errorf("the exporter's Role must be read-only, has %v", v)
		}
	}
	cs, _, _ := unstructured.NestedSlice(kinds["Deployment"].Object, "spec", "template", "spec", "containers")
	args := cs[0].(map[string]any)["args"].([]any)
	if args[0] != "exporter" || args[4] != "a=b" {
		t.Errorf("args %v", args)
	}
	if one := Manifests("demo", "claims-ns", "a=b", "img:1", 8080); one[1].GetKind() != "Role" || one[1].GetNamespace() != "claims-ns" {
		t.Errorf("watching one namespace needs only a Role there: %v", one[1])
	}
}

// Start gives up with the API server's error when the claims cannot be listed: at once when the
// first list fails, and when ctx ends when only the informer's lists fail (it used to wait a
// minute whatever the caller allowed, and say only "did not sync").
func TestStartGivesUpWithTheAPIError(t *testing.T) {
	for _, okLists := range []int{0, 1} {
		t.Run(fmt.Sprintf("%d good lists", okLists), func(t *testing.T) {
			scheme := runtime.NewScheme()
			dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{agentsandbox.ClaimGVR: "SandboxClaimList"})
			var lists atomic.Int32
			dc.PrependReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
				if int(lists.Add(1)) > okLists {
					return true, nil, errors.New("connection refused by the test")
				}
				return false, nil, nil
			})
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			start := time.Now()
			e, err := Start(ctx, dc, "ns", "", "127.0.0.1:0")
			if e != nil || !errors.Is(err, ErrCannotList) {
				t.Fatalf("Start = %v, %v; want ErrCannotList", e, err)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("gave up after %s; the context allowed 500ms", took)
			}
			for _, want := range []string{"namespace ns", "connection refused by the test"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
