package teardown

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
	"github.com/brakebench/brakebench/internal/sut/keda"
	"github.com/brakebench/brakebench/internal/sut/kueuelws"
)

// DeleteNamespace on client-go fakes: one DeleteCollection per kind in a namespace labelled as
// brakebench's, in order, then the namespace; a refused DeleteCollection (RBAC) leaves that kind
// to the namespace controller and the namespace is still deleted; any other sweep error does not
// stop the namespace's deletion; a namespace that is not brakebench's is deleted without a sweep;
// one already gone is left alone.
func TestDeleteNamespace(t *testing.T) {
	const ns = "bb-run-01"
	ours := map[string]string{kube.ManagedByKey: kube.ManagedByValue, kube.RunIDKey: "run"}
	all := []string{"sandboxclaims", "sandboxwarmpools", "sandboxes", "leaderworkersets", "pods"}
	cases := []struct {
		name    string
		labels  map[string]string // nil: no namespace
		fail    map[string]error  // DeleteCollection errors by resource
		swept   []string          // DeleteCollection calls, in order
		refused []string
		deleted bool // the namespace was deleted
	}{
		{name: "brakebench's namespace: one DeleteCollection per kind", labels: ours, swept: all, deleted: true},
		{name: "DeleteCollection refused for pods and sandboxes", labels: ours,
			fail: map[string]error{
				"pods":      apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC: deletecollection not allowed")),
				"sandboxes": apierrors.NewUnauthorized("no"),
			},
			swept: all, refused: []string{"sandboxes", "pods"}, deleted: true},
		{name: "kinds not served are skipped", labels: ours,
			fail: map[string]error{
				"leaderworkersets": apierrors.NewNotFound(schema.GroupResource{Resource: "leaderworkersets"}, ""),
				"sandboxclaims":    apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "sandboxclaims"}, "deletecollection"),
			},
			swept: all, deleted: true},
		{name: "another sweep error does not stop the namespace", labels: ours,
			fail:  map[string]error{"sandboxwarmpools": apierrors.NewInternalError(errors.New("etcd timeout"))},
			swept: all, deleted: true},
		{name: "not brakebench's namespace: no sweep", labels: map[string]string{"team": "x"}, deleted: true},
		{name: "already gone", labels: nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typed := fake.NewClientset()
			if c.labels != nil {
				if _, err := typed.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: c.labels}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			lists := map[schema.GroupVersionResource]string{
				agentsandbox.ClaimGVR: "SandboxClaimList", agentsandbox.PoolGVR: "SandboxWarmPoolList", agentsandbox.SandboxGVR: "SandboxList",
				kueuelws.LWSGVR: "LeaderWorkerSetList", kueuelws.WorkloadGVR: "WorkloadList", keda.ScaledObjectGVR: "ScaledObjectList", keda.HPAGVR: "HorizontalPodAutoscalerList",
				podsGVR: "PodList", {Version: "v1", Resource: "namespaces"}: "NamespaceList",
			}
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists)
			var swept []string
			dyn.PrependReactor("delete-collection", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetNamespace() != ns {
					t.Errorf("DeleteCollection of %s in %q, want %q", a.GetResource().Resource, a.GetNamespace(), ns)
				}
				if dc, ok := a.(k8stesting.DeleteCollectionAction); ok && dc.GetListRestrictions().Labels.String() != "" {
					t.Errorf("DeleteCollection of %s with selector %q: the namespace is the selection", a.GetResource().Resource, dc.GetListRestrictions().Labels)
				}
				swept = append(swept, a.GetResource().Resource)
				return true, nil, c.fail[a.GetResource().Resource]
			})
			c2 := &kube.Clients{Typed: typed, Dynamic: dyn}
			tm, err := DeleteNamespaceTimed(context.Background(), c2, ns, 10*time.Second)
			if err != nil {
				t.Fatalf("DeleteNamespace: %v", err)
			}
			if !reflect.DeepEqual(swept, c.swept) {
				t.Errorf("swept %v, want %v", swept, c.swept)
			}
			if !reflect.DeepEqual(tm.Refused, c.refused) {
				t.Errorf("refused %v, want %v", tm.Refused, c.refused)
			}
			deleted := false
			for _, a := range typed.Actions() {
				if a.GetVerb() == "delete" && a.GetResource().Resource == "namespaces" {
					deleted = true
				}
			}
			if deleted != c.deleted {
				t.Errorf("namespace deleted %v, want %v", deleted, c.deleted)
			}
			if _, err := typed.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("namespace still there: %v", err)
			}
		})
	}
}
