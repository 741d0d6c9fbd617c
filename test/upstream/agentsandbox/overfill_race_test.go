//go:build brakebench_upstream

// This file is not part of brakebench's packages: `make upstream-overfill` copies it into a
// throwaway copy of agent-sandbox's module (v0.5.5 and v1.0.1, as the Go module proxy serves
// them; Go refuses -overlay over the module cache), into its extensions/controllers package, where
// it drives the real SandboxWarmPoolReconciler with that package's own test fixtures (the fake
// client, the lagging cache, the event handler). Nothing of upstream's code is copied here.

package controllers

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
)

// catchUpAfterList is a cache that lags behind the controller's own creates (the fixture's
// laggingClient) and catches up at one chosen moment: right after the reconcile's list of the
// pool's sandboxes has been answered. The sandboxes the list did not show then become visible and
// their add events reach the pool's event handler, which lowers the in-flight create expectation,
// exactly as an informer that delivers those events while the reconcile is between its list and
// its create gate.
type catchUpAfterList struct {
	*laggingClient
	handler *warmPoolSandboxEventHandler
	armed   bool
}

func (c *catchUpAfterList) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.laggingClient.List(ctx, list, opts...); err != nil {
		return err
	}
	if _, ok := list.(*sandboxv1beta1.SandboxList); !ok || !c.armed {
		return nil
	}
	c.armed = false
	return c.deliverLate(ctx)
}

// deliverLate makes every create the cache has not shown yet visible and hands its add event to
// the pool's event handler (the informer catching up).
func (c *catchUpAfterList) deliverLate(ctx context.Context) error {
	c.mu.Lock()
	late := make(map[string]struct{}, len(c.hidden))
	for k := range c.hidden {
		late[k] = struct{}{}
	}
	c.mu.Unlock()
	all := &sandboxv1beta1.SandboxList{}
	if err := c.WithWatch.List(ctx, all); err != nil {
		return err
	}
	c.catchUp()
	for i := range all.Items {
		if _, ok := late[all.Items[i].Namespace+"/"+all.Items[i].Name]; ok {
			c.handler.Create(ctx, event.CreateEvent{Object: &all.Items[i]}, nil)
		}
	}
	return nil
}

// TestBrakebenchOverfillWhenCreatesAreObservedBetweenListAndGate: a pool of 10 whose first pass
// created all 10; the cache has caught up with 7 of them (observed, so the expectation still
// waits for 3). The next pass lists 7; the last 3 adds are delivered before its gate; the gate
// finds every create observed and lets the pass create 10 - 7 = 3 more, against a list that was
// short by exactly those 3. The pass after deletes the 3 excess. This is what the lab's
// controller log showed on 2026-12-05 at 300 (300 created; 12 more created at a count of 288;
// 12 excess deleted at 312). The test passes while the defect is there; a reconciler that checks
// its gate before it lists would fail it (no extra create), and the README would have to say so.
func TestBrakebenchOverfillWhenCreatesAreObservedBetweenListAndGate(t *testing.T) {
	const replicas, seen = int32(10), 7
	warmPool, template := newOverCreationFixture(replicas)
	scheme := newTestScheme()
	lc := newLaggingClient(newFakeClient(scheme, template, warmPool))
	r := SandboxWarmPoolReconciler{Client: nil, Scheme: scheme, MaxBatchSize: sandboxCreateDeleteMaxBatchSize}
	c := &catchUpAfterList{laggingClient: lc, handler: &warmPoolSandboxEventHandler{EventHandler: handler.Funcs{}, expectations: r.exp()}}
	r.Client = c
	ctx := context.Background()
	key := types.NamespacedName{Namespace: warmPool.Namespace, Name: warmPool.Name}

	// Pass 1: the fill. All 10 created, none visible yet.
	if _, err := r.reconcilePool(ctx, warmPool); err != nil {
		t.Fatal(err)
	}
	if n := lc.createCount(); n != int(replicas) {
		t.Fatalf("the fill created %d, want %d", n, replicas)
	}
	// The cache catches up with 7 of them; their adds are observed.
	all := &sandboxv1beta1.SandboxList{}
	if err := lc.WithWatch.List(ctx, all); err != nil {
		t.Fatal(err)
	}
	for i := range all.Items[:seen] {
		sb := &all.Items[i]
		lc.mu.Lock()
		delete(lc.hidden, sb.Namespace+"/"+sb.Name)
		lc.mu.Unlock()
		c.handler.Create(ctx, event.CreateEvent{Object: sb}, nil)
	}
	if r.exp().SatisfiedExpectations(key) {
		t.Fatal("with 3 creates unobserved the expectation must still be pending")
	}

	// Pass 2: lists 7; the 3 late adds arrive before the gate.
	c.armed = true
	if _, err := r.reconcilePool(ctx, warmPool); err != nil {
		t.Fatal(err)
	}
	extra := lc.createCount() - int(replicas)
	t.Logf("creates observed between the list (%d of %d visible) and the gate: %d; extra creates: %d", seen, replicas, int(replicas)-seen, extra)
	if extra != int(replicas)-seen {
		t.Fatalf("the pass created %d beyond spec.replicas, want %d (the creates observed between its list and its gate)", extra, int(replicas)-seen)
	}

	// Pass 3: everything visible and observed: the excess is deleted.
	if err := c.deliverLate(ctx); err != nil {
		t.Fatal(err)
	}
	if !r.exp().SatisfiedExpectations(key) {
		t.Fatal("with every create observed the expectation must be satisfied")
	}
	if _, err := r.reconcilePool(ctx, warmPool); err != nil {
		t.Fatal(err)
	}
	left := &sandboxv1beta1.SandboxList{}
	if err := lc.WithWatch.List(ctx, left); err != nil {
		t.Fatal(err)
	}
	t.Logf("members after the next pass: %d (spec %d)", len(left.Items), replicas)
	if len(left.Items) != int(replicas) {
		t.Errorf("after the next pass the pool has %d members, want the excess deleted back to %d", len(left.Items), replicas)
	}
}
