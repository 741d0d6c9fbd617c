package teardown

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
	"github.com/brakebench/brakebench/internal/sut/keda"
	"github.com/brakebench/brakebench/internal/sut/kueuelws"
)

const testNS = "bb-run-01"

var ours = map[string]string{kube.ManagedByKey: kube.ManagedByValue, kube.RunIDKey: "run"}

var listKinds = map[schema.GroupVersionResource]string{
	agentsandbox.ClaimGVR: "SandboxClaimList", agentsandbox.PoolGVR: "SandboxWarmPoolList", agentsandbox.SandboxGVR: "SandboxList",
	kueuelws.LWSGVR: "LeaderWorkerSetList", kueuelws.WorkloadGVR: "WorkloadList", keda.ScaledObjectGVR: "ScaledObjectList", keda.HPAGVR: "HorizontalPodAutoscalerList",
	podsGVR: "PodList", namespacesGVR: "NamespaceList",
}

// kinds of the sweep by resource, for fixtures.
var fixtureKinds = map[string]struct {
	gvr  schema.GroupVersionResource
	kind string
}{
	"sandboxclaims":    {agentsandbox.ClaimGVR, "SandboxClaim"},
	"sandboxwarmpools": {agentsandbox.PoolGVR, "SandboxWarmPool"},
	"sandboxes":        {agentsandbox.SandboxGVR, "Sandbox"},
	"leaderworkersets": {kueuelws.LWSGVR, "LeaderWorkerSet"},
	"pods":             {podsGVR, "Pod"},
}

// namespaceClients are fakes holding the namespace ns (labels; nil: none) and n objects of each
// resource in objs: the typed client holds the namespace, the dynamic one what is in it.
func namespaceClients(t *testing.T, labels map[string]string, objs map[string]int) (*fake.Clientset, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	typed := fake.NewClientset()
	if labels != nil {
		if _, err := typed.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)
	for res, n := range objs {
		fk := fixtureKinds[res]
		for i := range n {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(fk.gvr.GroupVersion().WithKind(fk.kind))
			u.SetName(fmt.Sprintf("%s-%05d", res, i))
			u.SetNamespace(testNS)
			if err := dyn.Tracker().Create(fk.gvr, u, testNS); err != nil {
				t.Fatal(err)
			}
		}
	}
	return typed, dyn
}

// left is how many objects of res the fake still holds in the namespace.
func left(t *testing.T, dyn *dynamicfake.FakeDynamicClient, res string) int {
	t.Helper()
	l, err := dyn.Resource(fixtureKinds[res].gvr).Namespace(testNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

// pageLists makes the fake's lists with a limit behave like the API server's: at most limit
// items in name order, a continue token (the last name) while more remain, and the remaining
// count. A later page lists what exists now after the token (etcd reads a snapshot; deletes of
// earlier pages do not move the later ones either way). expire: the first list with a continue
// token of these resources answers 410 Gone (etcd compacted past it).
func pageLists(dyn *dynamicfake.FakeDynamicClient, expire ...string) {
	expired := map[string]bool{}
	dyn.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		la := a.(k8stesting.ListActionImpl)
		opts := la.ListOptions
		if opts.Limit <= 0 {
			return false, nil, nil
		}
		res := a.GetResource().Resource
		if opts.Continue != "" && !expired[res] {
			for _, e := range expire {
				if e == res {
					expired[res] = true
					return true, nil, apierrors.NewResourceExpired("continue token expired")
				}
			}
		}
		all, err := dyn.Tracker().List(a.GetResource(), la.GetKind(), a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		items, err := meta.ExtractList(all)
		if err != nil {
			return true, nil, err
		}
		var names []string
		byName := map[string]runtime.Object{}
		for _, o := range items {
			m, _ := meta.Accessor(o)
			if m.GetName() > opts.Continue {
				names = append(names, m.GetName())
				byName[m.GetName()] = o
			}
		}
		sort.Strings(names)
		out := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": a.GetResource().GroupVersion().String(), "kind": la.GetKind().Kind + "List"}}
		for i, n := range names {
			if int64(i) == opts.Limit {
				out.SetContinue(names[i-1])
				rem := int64(len(names) - i)
				out.SetRemainingItemCount(&rem)
				break
			}
			out.Items = append(out.Items, *byName[n].(*unstructured.Unstructured))
		}
		return true, out, nil
	})
}

// deletes counts the deletes of each object (name -> count) and fails those fail says.
type deletes struct {
	mu   sync.Mutex
	n    map[string]int
	fail func(res, name string) error
}

func (d *deletes) react(dyn *dynamicfake.FakeDynamicClient) {
	d.n = map[string]int{}
	dyn.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		da := a.(k8stesting.DeleteAction)
		d.mu.Lock()
		d.n[a.GetResource().Resource+"/"+da.GetName()]++
		d.mu.Unlock()
		if d.fail != nil {
			if err := d.fail(a.GetResource().Resource, da.GetName()); err != nil {
				if apierrors.IsNotFound(err) { // someone else deleted it just before
					_ = dyn.Tracker().Delete(a.GetResource(), a.GetNamespace(), da.GetName())
				}
				return true, nil, err
			}
		}
		return false, nil, nil
	})
}

// inFlight wraps a dynamic client: its deletes take a moment and are counted while in flight.
type inFlight struct {
	dynamic.Interface
	mu       sync.Mutex
	now, max int
}

func (f *inFlight) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return inFlightNR{f.Interface.Resource(gvr), f}
}

type inFlightNR struct {
	dynamic.NamespaceableResourceInterface
	f *inFlight
}

func (n inFlightNR) Namespace(ns string) dynamic.ResourceInterface {
	return inFlightRI{n.NamespaceableResourceInterface.Namespace(ns), n.f}
}

type inFlightRI struct {
	dynamic.ResourceInterface
	f *inFlight
}

func (r inFlightRI) Delete(ctx context.Context, name string, opts metav1.DeleteOptions, sub ...string) error {
	r.f.mu.Lock()
	r.f.now++
	r.f.max = max(r.f.max, r.f.now)
	r.f.mu.Unlock()
	time.Sleep(300 * time.Microsecond)
	err := r.ResourceInterface.Delete(ctx, name, opts, sub...)
	r.f.mu.Lock()
	r.f.now--
	r.f.mu.Unlock()
	return err
}

// restricted is a list or a DeleteCollection: it carries list restrictions (a selector).
type restricted interface {
	GetListRestrictions() k8stesting.ListRestrictions
}

// DeleteNamespace on client-go fakes, by every method: each kind is swept in order (a
// DeleteCollection per kind, or a paged list per kind), then the namespace; a refused kind (RBAC)
// is left to the namespace controller and the namespace is still deleted; kinds not served are
// skipped; any other sweep error does not stop the namespace's deletion; a namespace that is not
// brakebench's is deleted without a sweep; one already gone is left alone.
func TestDeleteNamespace(t *testing.T) {
	all := []string{"sandboxclaims", "sandboxwarmpools", "sandboxes", "leaderworkersets", "pods"}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC: not allowed"))
	cases := []struct {
		name     string
		labels   map[string]string // nil: no namespace
		fail     map[string]error  // the sweep's first request's error, by resource
		swept    []string          // kinds swept, in order
		refused  []string
		notServe []string
		deleted  bool // the namespace was deleted
	}{
		{name: "brakebench's namespace: every kind swept", labels: ours, swept: all, deleted: true},
		{name: "refused for pods and sandboxes", labels: ours,
			fail:  map[string]error{"pods": forbidden, "sandboxes": apierrors.NewUnauthorized("no")},
			swept: all, refused: []string{"sandboxes", "pods"}, deleted: true},
		{name: "kinds not served are skipped", labels: ours,
			fail: map[string]error{
				"leaderworkersets": apierrors.NewNotFound(schema.GroupResource{Resource: "leaderworkersets"}, ""),
				"sandboxclaims":    apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "sandboxclaims"}, "deletecollection"),
			},
			swept: all, notServe: []string{"sandboxclaims", "leaderworkersets"}, deleted: true},
		{name: "another sweep error does not stop the namespace", labels: ours,
			fail:  map[string]error{"sandboxwarmpools": apierrors.NewInternalError(errors.New("etcd timeout"))},
			swept: all, deleted: true},
		{name: "not brakebench's namespace: no sweep", labels: map[string]string{"team": "x"}, deleted: true},
		{name: "already gone", labels: nil},
	}
	for _, method := range []Method{Paged, Collection, CollectionOnce} {
		for _, c := range cases {
			t.Run(string(method)+"/"+c.name, func(t *testing.T) {
				typed, dyn := namespaceClients(t, c.labels, nil)
				var swept []string
				// The sweep's first request of a kind: its DeleteCollection, or its first page.
				sweepVerb := "delete-collection"
				if method == Paged {
					sweepVerb = "list"
				}
				dyn.PrependReactor(sweepVerb, "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
					if a.GetNamespace() != testNS {
						t.Errorf("%s of %s in %q, want %q", a.GetVerb(), a.GetResource().Resource, a.GetNamespace(), testNS)
					}
					if r, ok := a.(restricted); ok && r.GetListRestrictions().Labels.String() != "" {
						t.Errorf("%s of %s with selector %q: the namespace is the selection", a.GetVerb(), a.GetResource().Resource, r.GetListRestrictions().Labels)
					}
					if la, ok := a.(k8stesting.ListActionImpl); ok && la.ListOptions.Limit != DefaultOptions.PageSize {
						return false, nil, nil // a count after the sweep
					}
					swept = append(swept, a.GetResource().Resource)
					if err := c.fail[a.GetResource().Resource]; err != nil {
						return true, nil, err
					}
					return false, nil, nil
				})
				c2 := &kube.Clients{Typed: typed, Dynamic: dyn}
				tm, err := DeleteNamespaceWith(context.Background(), c2, testNS, 10*time.Second, Options{Method: method})
				if err != nil {
					t.Fatalf("DeleteNamespace: %v", err)
				}
				if !reflect.DeepEqual(swept, c.swept) {
					t.Errorf("swept %v, want %v", swept, c.swept)
				}
				if !reflect.DeepEqual(tm.Refused, c.refused) {
					t.Errorf("refused %v, want %v", tm.Refused, c.refused)
				}
				var notServe []string
				for _, k := range tm.Kinds {
					if k.NotServed {
						notServe = append(notServe, k.Resource)
					}
				}
				if !reflect.DeepEqual(notServe, c.notServe) {
					t.Errorf("not served %v, want %v", notServe, c.notServe)
				}
				if c.swept != nil && (tm.Method != method || len(tm.Kinds) != len(sweepKinds)) {
					t.Errorf("timings %+v, want %d kinds by %s", tm, len(sweepKinds), method)
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
				if tm.AlreadyGone != (c.labels == nil) {
					t.Errorf("already gone %v", tm.AlreadyGone)
				}
				if _, err := typed.CoreV1().Namespaces().Get(context.Background(), testNS, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("namespace still there: %v", err)
				}
			})
		}
	}
}

// A DeleteCollection the API server answers with a timeout (its request ran past 60 s with one
// delete worker) is sent again, by the collection method, until a list shows the kind empty; the
// method that sends it once leaves the rest to the namespace controller; a server that only
// times out is asked until the sweep's half of the timeout is up, not longer.
func TestSweepCollectionRetriesTimeouts(t *testing.T) {
	defer func(p time.Duration) { retryPause = p }(retryPause)
	retryPause = time.Millisecond
	timeout504 := apierrors.NewTimeoutError("request did not complete within requested timeout - context deadline exceeded", 0)
	// What client-go makes of a bare 504 (no Status body): "the server was unable to return a
	// response in the time allotted, but may still be processing the request".
	generic504 := apierrors.NewGenericServerResponse(http.StatusGatewayTimeout, "delete", schema.GroupResource{Resource: "sandboxclaims"}, "", "", 0, true)
	plain := errors.New("Timeout: the server was unable to return a response in the time allotted, but may still be processing the request (delete sandboxclaims)")
	cases := []struct {
		name     string
		method   Method
		perCall  int   // claims each DeleteCollection deletes before answering (0: all)
		errAfter error // its answer while claims remain (nil: none)
		always   error // its answer always
		calls    int   // DeleteCollections sent (-1: more than one, bounded by time)
		timeouts int
		left     int // claims left after the sweep
		kindErr  bool
	}{
		{name: "two timeouts, then the rest within time", method: Collection, perCall: 400, errAfter: timeout504, calls: 3, timeouts: 2},
		{name: "client-go's own 504 text", method: Collection, perCall: 400, errAfter: generic504, calls: 3, timeouts: 2},
		{name: "the message alone", method: Collection, perCall: 400, errAfter: plain, calls: 3, timeouts: 2},
		{name: "the server finished after answering a timeout: empty, no second call", method: Collection, always: timeout504, calls: 1, timeouts: 1},
		{name: "collection-once leaves the rest to the namespace controller", method: CollectionOnce, perCall: 400, errAfter: timeout504, calls: 1, timeouts: 1, left: 600, kindErr: true},
		{name: "not a timeout: not sent again", method: Collection, perCall: 400, errAfter: apierrors.NewInternalError(errors.New("etcd")), calls: 1, left: 600, kindErr: true},
		{name: "only timeouts: asked until the sweep's time is up", method: Collection, perCall: 1, always: timeout504, calls: -1, timeouts: -1, left: -1, kindErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typed, dyn := namespaceClients(t, ours, map[string]int{"sandboxclaims": 1000})
			calls := 0
			dyn.PrependReactor("delete-collection", "sandboxclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
				calls++
				all, _ := dyn.Tracker().List(agentsandbox.ClaimGVR, agentsandbox.ClaimGVR.GroupVersion().WithKind("SandboxClaim"), testNS)
				items, _ := meta.ExtractList(all)
				n := c.perCall
				if n == 0 || n > len(items) {
					n = len(items)
				}
				for _, o := range items[:n] {
					m, _ := meta.Accessor(o)
					_ = dyn.Tracker().Delete(agentsandbox.ClaimGVR, testNS, m.GetName())
				}
				if c.always != nil {
					return true, nil, c.always
				}
				if len(items) > n {
					return true, nil, c.errAfter
				}
				return true, nil, nil
			})
			begin := time.Now()
			tm, err := DeleteNamespaceWith(context.Background(), &kube.Clients{Typed: typed, Dynamic: dyn}, testNS, 2*time.Second, Options{Method: c.method})
			if err != nil {
				t.Fatalf("DeleteNamespace: %v (the namespace went)", err)
			}
			if took := time.Since(begin); took > 2*time.Second {
				t.Errorf("took %s, past the timeout", took)
			}
			k := tm.Kinds[0]
			if k.Resource != "sandboxclaims" || k.Found != 1000 {
				t.Fatalf("kind %+v", k)
			}
			switch {
			case c.calls == -1:
				if calls < 2 {
					t.Errorf("%d DeleteCollections, want it sent again while time is left", calls)
				}
			case calls != c.calls:
				t.Errorf("%d DeleteCollections, want %d", calls, c.calls)
			}
			if c.timeouts >= 0 && k.Timeouts != c.timeouts {
				t.Errorf("timeouts %d, want %d", k.Timeouts, c.timeouts)
			}
			if c.left >= 0 && (k.Left != c.left || left(t, dyn, "sandboxclaims") != c.left || k.Deleted != 1000-c.left) {
				t.Errorf("left %d (fake %d), deleted %d; want %d left", k.Left, left(t, dyn, "sandboxclaims"), k.Deleted, c.left)
			}
			if (k.Err != nil) != c.kindErr {
				t.Errorf("kind error %v, want one: %v", k.Err, c.kindErr)
			}
		})
	}
}

// The paged sweep deletes every object of every kind exactly once, page by page with the deletes
// in flight side by side (never more than InFlight), also when a continue token expires
// mid-walk; objects already gone are not counted as deleted; a refused delete stops its kind
// (left to the namespace controller), not the others.
func TestSweepPaged(t *testing.T) {
	cases := []struct {
		name     string
		objs     map[string]int
		pageSize int64
		inFlight int
		expire   []string
		fail     func(res, name string) error
		deleted  map[string]int
		refused  []string
	}{
		{name: "a 3000-claim cell's namespace", objs: map[string]int{"sandboxclaims": 3000, "sandboxwarmpools": 1, "sandboxes": 3300, "pods": 3300},
			deleted: map[string]int{"sandboxclaims": 3000, "sandboxwarmpools": 1, "sandboxes": 3300, "pods": 3300}},
		{name: "small pages, a continue token expires", objs: map[string]int{"sandboxclaims": 257, "pods": 90}, pageSize: 25, inFlight: 4, expire: []string{"sandboxclaims"},
			deleted: map[string]int{"sandboxclaims": 257, "pods": 90}},
		{name: "the garbage collector deleted some sandboxes first", objs: map[string]int{"sandboxes": 100},
			fail: func(res, name string) error {
				if name < "sandboxes-00040" {
					return apierrors.NewNotFound(schema.GroupResource{Resource: res}, name)
				}
				return nil
			},
			deleted: map[string]int{"sandboxes": 60}},
		{name: "sandbox deletes refused", objs: map[string]int{"sandboxclaims": 50, "sandboxes": 2000, "pods": 50},
			fail: func(res, name string) error {
				if res == "sandboxes" {
					return apierrors.NewForbidden(schema.GroupResource{Resource: res}, name, errors.New("RBAC"))
				}
				return nil
			},
			deleted: map[string]int{"sandboxclaims": 50, "pods": 50}, refused: []string{"sandboxes"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typed, dyn := namespaceClients(t, ours, c.objs)
			pageLists(dyn, c.expire...)
			d := &deletes{fail: c.fail}
			d.react(dyn)
			fl := &inFlight{Interface: dyn}
			opts := Options{Method: Paged, PageSize: c.pageSize, InFlight: c.inFlight}
			tm, err := DeleteNamespaceWith(context.Background(), &kube.Clients{Typed: typed, Dynamic: fl}, testNS, time.Minute, opts)
			if err != nil {
				t.Fatalf("DeleteNamespace: %v", err)
			}
			opts = opts.withDefaults()
			if fl.max > opts.InFlight || fl.max < 2 {
				t.Errorf("at most %d deletes in flight, want 2..%d", fl.max, opts.InFlight)
			}
			for _, k := range tm.Kinds {
				n := c.objs[k.Resource]
				if k.Deleted != c.deleted[k.Resource] {
					t.Errorf("%s: deleted %d, want %d", k.Resource, k.Deleted, c.deleted[k.Resource])
				}
				if k.Refused {
					if k.Deleted != 0 || left(t, dyn, k.Resource) == 0 {
						t.Errorf("%s refused, yet %d deleted", k.Resource, k.Deleted)
					}
					continue
				}
				if k.Found != n || k.Left != 0 || k.Err != nil || k.Duration <= 0 {
					t.Errorf("%s: %+v, want %d found, none left", k.Resource, k, n)
				}
				pages := (int64(n) + opts.PageSize - 1) / opts.PageSize
				if n == 0 {
					pages = 1
				}
				if min := int(pages) + n + 1; k.Requests < min {
					t.Errorf("%s: %d requests, want at least %d pages, %d deletes and a count", k.Resource, k.Requests, pages, n)
				}
				if got := left(t, dyn, k.Resource); got != 0 {
					t.Errorf("%s: %d left", k.Resource, got)
				}
				for i := range n {
					if name := fmt.Sprintf("%s/%s-%05d", k.Resource, k.Resource, i); d.n[name] != 1 {
						t.Errorf("%s deleted %d times, want once", name, d.n[name])
						break
					}
				}
			}
			if !reflect.DeepEqual(tm.Refused, c.refused) {
				t.Errorf("refused %v, want %v", tm.Refused, c.refused)
			}
			if c.refused != nil && d.n["sandboxes/sandboxes-01999"] != 0 {
				t.Error("the refused kind's deletes went on after the first refusal")
			}
		})
	}
}

// The runner learns a suite's own teardown through a trace on the context.
func TestWithTrace(t *testing.T) {
	typed, dyn := namespaceClients(t, ours, map[string]int{"pods": 3})
	var got []Timings
	ctx := WithTrace(context.Background(), func(ns string, tm Timings, err error) {
		if ns != testNS || err != nil {
			t.Errorf("trace of %s: %v", ns, err)
		}
		got = append(got, tm)
	})
	c := &kube.Clients{Typed: typed, Dynamic: dyn}
	if err := DeleteNamespace(ctx, c, testNS, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := DeleteNamespace(ctx, c, testNS, time.Minute); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].AlreadyGone || got[0].Kinds[4].Deleted != 3 || !got[1].AlreadyGone {
		t.Errorf("traced %+v", got)
	}
}

// The sweep of the paged and collection methods ends at half the timeout (the rest is the
// namespace's); collection-once is measured as the sweep ran before paging, unbounded.
func TestSweepBound(t *testing.T) {
	for _, c := range []struct {
		method   Method
		notSwept bool // kinds after the slow one are not swept
	}{{Collection, true}, {CollectionOnce, false}} {
		t.Run(string(c.method), func(t *testing.T) {
			typed, dyn := namespaceClients(t, ours, nil)
			dyn.PrependReactor("delete-collection", "sandboxclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
				time.Sleep(700 * time.Millisecond) // past half of the 1 s timeout
				return true, nil, nil
			})
			tm, err := DeleteNamespaceWith(context.Background(), &kube.Clients{Typed: typed, Dynamic: dyn}, testNS, time.Second, Options{Method: c.method})
			if err != nil {
				t.Fatal(err)
			}
			last := tm.Kinds[len(tm.Kinds)-1]
			if got := last.Err != nil; got != c.notSwept {
				t.Errorf("%s: error %v, want not swept: %v", last.Resource, last.Err, c.notSwept)
			}
		})
	}
}

// Options.Defer leaves the namespace undeleted, and returns at once, only when the sweep emptied
// it; the namespace here never goes (the dynamic fake keeps it), so a wait would run out and
// fail. A kind left with an object (a finalizer), a refused kind and a namespace that is not
// brakebench's (no sweep) are deleted and waited for as without Defer.
func TestDefer(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC: not allowed"))
	cases := []struct {
		name     string
		labels   map[string]string
		leftPods bool  // a count after the sweep still shows a pod
		fail     error // the pods' first page
		deferred bool
	}{
		{name: "emptied: deferred", labels: ours, deferred: true},
		{name: "a pod left terminating: waited for", labels: ours, leftPods: true},
		{name: "pods refused: waited for", labels: ours, fail: forbidden},
		{name: "not brakebench's: no sweep, waited for", labels: map[string]string{"team": "x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typed, dyn := namespaceClients(t, c.labels, map[string]int{"sandboxes": 3, "pods": 3})
			nsObj := &unstructured.Unstructured{}
			nsObj.SetAPIVersion("v1")
			nsObj.SetKind("Namespace")
			nsObj.SetName(testNS)
			if err := dyn.Tracker().Create(namespacesGVR, nsObj, ""); err != nil {
				t.Fatal(err)
			}
			dyn.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				la := a.(k8stesting.ListActionImpl)
				switch {
				case la.ListOptions.Limit == DefaultOptions.PageSize && c.fail != nil:
					return true, nil, c.fail
				case la.ListOptions.Limit == 1 && c.leftPods:
					p := unstructured.Unstructured{}
					p.SetAPIVersion("v1")
					p.SetKind("Pod")
					p.SetName("stuck")
					return true, &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "PodList"}, Items: []unstructured.Unstructured{p}}, nil
				}
				return false, nil, nil
			})
			c2 := &kube.Clients{Typed: typed, Dynamic: dyn}
			start := time.Now()
			tm, err := DeleteNamespaceWith(context.Background(), c2, testNS, 600*time.Millisecond, Options{Defer: true})
			if tm.Deferred != c.deferred {
				t.Fatalf("deferred %v, want %v (%+v)", tm.Deferred, c.deferred, tm)
			}
			if c.deferred {
				if err != nil || time.Since(start) > 400*time.Millisecond {
					t.Errorf("deferred after %s, err %v: it waited", time.Since(start), err)
				}
				if left(t, dyn, "sandboxes") != 0 || left(t, dyn, "pods") != 0 {
					t.Error("deferred before the sweep emptied the namespace")
				}
			} else if err == nil {
				t.Error("the namespace never goes, yet no error: it was not waited for")
			}
			deleted := false
			for _, a := range typed.Actions() {
				deleted = deleted || (a.GetVerb() == "delete" && a.GetResource().Resource == "namespaces")
			}
			if deleted == c.deferred {
				t.Errorf("namespace deleted: %v, want %v", deleted, !c.deferred)
			}
		})
	}
}
