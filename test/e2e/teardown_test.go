//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
	"github.com/brakebench/brakebench/internal/teardown"
	"github.com/brakebench/brakebench/loadgen"
	"github.com/brakebench/brakebench/suites"
)

// teardownTimeout is the runner's (suites: cellTeardownTimeout) and the warm-pool cell's.
const teardownTimeout = 5 * time.Minute

// TestTeardownLargeNamespace tears down a namespace the size of a 3000-claim burst cell's (pool
// 300) through the runner's code path (teardown.DeleteNamespaceTimed), within the cell's 5-minute
// teardown timeout, and logs where the time went per kind. Before paging, the API server answered
// such a teardown's DeleteCollection of the claims with "unable to return a response in the time
// allotted".
//
// The namespace is filled directly, with the controller stopped (as BenchmarkLoadgen does), not
// by a burst: 3000 claims, the template and pool, 3300 sandboxes (3000 owned by the claims, 300
// by the pool) and 3300 pods owned by them, the ownership the controller sets, so the garbage
// collector cascades as after a cell. The pods name a scheduler no one runs, so nothing schedules
// or boots them (a pod's deletion with grace 0 costs the API server the same either way). About
// 1-2 minutes here: the fill ~40-60 s (9600 creates, 32 in flight), the teardown well under a
// minute, the controller's stop and start a few seconds. BB_TEARDOWN_CLAIMS sets the size.
func TestTeardownLargeNamespace(t *testing.T) {
	claims := envInt(t, "BB_TEARDOWN_CLAIMS", 3000)
	c := clients(t)
	stopControllerForTest(t)
	ns := "e2e-teardown-large"
	fill := fillCellNamespace(t, c, ns, claims, claims/10)
	tm, err := teardown.DeleteNamespaceTimed(context.Background(), c, ns, teardownTimeout)
	t.Logf("fill %s; teardown (%s): sweep %.1f s, namespace %.1f s\n%s", fill.Round(time.Second), tm.Method, tm.Sweep.Seconds(), tm.Namespace.Seconds(), kindTable(tm))
	if err != nil {
		t.Fatalf("teardown of a %d-claim namespace: %v", claims, err)
	}
	if total := tm.Sweep + tm.Namespace; total > teardownTimeout {
		t.Errorf("teardown took %s, past its %s timeout", total.Round(time.Second), teardownTimeout)
	}
	if tm.Method != teardown.Paged || len(tm.Kinds) == 0 || tm.Kinds[0].Resource != "sandboxclaims" || tm.Kinds[0].Found != claims || tm.Kinds[0].Deleted != claims {
		t.Errorf("the claims' sweep: %+v", tm.Kinds)
	}
	for _, k := range tm.Kinds {
		if k.Err != nil || k.Refused || k.Timeouts > 0 {
			t.Errorf("%s: refused %v, %d timeouts, error %v", k.Resource, k.Refused, k.Timeouts, k.Err)
		}
	}
	if _, err := c.Typed.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); err == nil {
		t.Errorf("namespace %s still there", ns)
	}
}

// TestTeardownMethods measures the teardown before paging (collection-once: one DeleteCollection
// per kind) against after (paged) on the same lab, the same fill, alternating the order in every
// repetition, and prints a table for the README. Off unless BB_TEARDOWN_COMPARE=1 (the lead's
// measurement, not CI: ~3 minutes a repetition and method at 3000 claims; the before arm can take
// its whole 5-minute timeout, and each namespace is waited for, up to 10 more minutes, before
// the next fill). BB_TEARDOWN_METHODS (collection-once,paged; collection is the third),
// BB_TEARDOWN_REPS (3), BB_TEARDOWN_CLAIMS (3000); BB_TEARDOWN_OUT writes the table to a file.
func TestTeardownMethods(t *testing.T) {
	if os.Getenv("BB_TEARDOWN_COMPARE") != "1" {
		t.Skip("set BB_TEARDOWN_COMPARE=1 to measure the teardown methods against each other")
	}
	claims := envInt(t, "BB_TEARDOWN_CLAIMS", 3000)
	reps := envInt(t, "BB_TEARDOWN_REPS", 3)
	methods := []teardown.Method{teardown.CollectionOnce, teardown.Paged}
	if s := os.Getenv("BB_TEARDOWN_METHODS"); s != "" {
		methods = nil
		for _, m := range strings.Split(s, ",") {
			methods = append(methods, teardown.Method(strings.TrimSpace(m)))
		}
	}
	c := clients(t)
	stopControllerForTest(t)
	var b strings.Builder
	fmt.Fprintf(&b, "teardown of a %d-claim cell's namespace (pool %d), %s\n\n", claims, claims/10, time.Now().Format("2006-01-02"))
	b.WriteString("| method | rep | fill s | sweep s | namespace s | total s | gone after s | per kind: s (found/deleted/left, timeouts) | error |\n|---|---|---|---|---|---|---|---|---|\n")
	totals := map[teardown.Method][]float64{}
	for rep := 1; rep <= reps; rep++ {
		order := append([]teardown.Method(nil), methods...)
		if rep%2 == 0 {
			for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
				order[i], order[j] = order[j], order[i]
			}
		}
		for _, m := range order {
			ns := fmt.Sprintf("e2e-teardown-%s-%d", m, rep)
			fill := fillCellNamespace(t, c, ns, claims, claims/10)
			time.Sleep(5 * time.Second) // the fill's aftermath (watch fan-out, the GC's graph) settles
			begin := time.Now()
			tm, err := teardown.DeleteNamespaceWith(context.Background(), c, ns, teardownTimeout, teardown.Options{Method: m})
			total := time.Since(begin)
			// The next fill must not share the API server with this deletion: wait it out.
			if werr := teardown.WaitNamespaceGone(context.Background(), c, ns, 10*time.Minute); werr != nil {
				t.Fatalf("%s: namespace %s not gone 10 minutes after its teardown: %v", m, ns, werr)
			}
			gone := time.Since(begin)
			errText := ""
			if err != nil {
				errText = strings.ReplaceAll(kube.ShortErr(err), "|", "/")
			}
			fmt.Fprintf(&b, "| %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %s | %s |\n", m, rep, fill.Seconds(), tm.Sweep.Seconds(), tm.Namespace.Seconds(),
				total.Seconds(), gone.Seconds(), kindCells(tm), errText)
			totals[m] = append(totals[m], gone.Seconds())
			t.Logf("%s rep %d: total %.1f s\n%s", m, rep, total.Seconds(), kindTable(tm))
		}
	}
	b.WriteString("\nmedian seconds until the namespace was gone: ")
	for i, m := range methods {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %.1f", m, median(totals[m]))
	}
	b.WriteString("\n")
	t.Log("\n" + b.String())
	if out := os.Getenv("BB_TEARDOWN_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// stopControllerForTest stops the lab's controller for the test and starts it again after.
func stopControllerForTest(t *testing.T) {
	t.Helper()
	if err := theLab.StopController(labState); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := theLab.StartController(context.Background(), labState, labState.Versions["agent-sandbox"], nil); err != nil {
			t.Errorf("restart controller: %v", err)
		}
	})
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, s)
	}
	return n
}

// fillCellNamespace creates brakebench's namespace ns holding what a burst cell of claims claims
// on a pool of pool leaves (the template, the pool, the claims, pool+claims sandboxes and their
// pods, owned as the controller owns them), 32 creates in flight, and returns how long it took.
func fillCellNamespace(t *testing.T, c *kube.Clients, ns string, claims, pool int) time.Duration {
	t.Helper()
	ctx := context.Background()
	begin := time.Now()
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{kube.ManagedByKey: kube.ManagedByValue, kube.RunIDKey: "e2e-teardown"}}}
	if _, err := c.Typed.CoreV1().Namespaces().Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = teardown.DeleteNamespace(context.Background(), c, ns, teardownTimeout) })
	var poolUID types.UID
	for _, o := range suites.BenchObjects(ns, pool, "registry.k8s.io/pause:3.10", false) {
		gvr := agentsandbox.TemplateGVR
		if o.GetKind() == "SandboxWarmPool" {
			gvr = agentsandbox.PoolGVR
		}
		got, err := c.Dynamic.Resource(gvr).Namespace(ns).Create(ctx, o, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if gvr == agentsandbox.PoolGVR {
			poolUID = got.GetUID()
		}
	}
	gen := &loadgen.Generator{Namespace: ns, Pool: suites.PoolName, Prefix: "claim-"}
	claimUIDs := make([]types.UID, claims)
	parallel(t, claims, func(i int) error {
		got, err := c.Dynamic.Resource(agentsandbox.ClaimGVR).Namespace(ns).Create(ctx, gen.Claim(i, time.Now()), metav1.CreateOptions{})
		if err == nil {
			claimUIDs[i] = got.GetUID()
		}
		return err
	})
	n := claims + pool
	sandboxUIDs := make([]types.UID, n)
	parallel(t, n, func(i int) error {
		owner := ownerRef("extensions.agents.x-k8s.io/v1beta1", "SandboxWarmPool", suites.PoolName, poolUID)
		if i < claims {
			owner = ownerRef("extensions.agents.x-k8s.io/v1beta1", "SandboxClaim", gen.ClaimName(i), claimUIDs[i])
		}
		got, err := c.Dynamic.Resource(agentsandbox.SandboxGVR).Namespace(ns).Create(ctx, fixtureSandbox(ns, sandboxName(i), owner), metav1.CreateOptions{})
		if err == nil {
			sandboxUIDs[i] = got.GetUID()
		}
		return err
	})
	parallel(t, n, func(i int) error {
		_, err := c.Typed.CoreV1().Pods(ns).Create(ctx, fixturePod(ns, sandboxName(i), sandboxUIDs[i]), metav1.CreateOptions{})
		return err
	})
	return time.Since(begin)
}

func sandboxName(i int) string { return fmt.Sprintf("bench-pool-%05d", i) }

func ownerRef(apiVersion, kind, name string, uid types.UID) map[string]any {
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "name": name, "uid": string(uid), "controller": true, "blockOwnerDeletion": true}
}

func fixtureSandbox(ns, name string, owner map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": agentsandbox.SandboxGVR.GroupVersion().String(), "kind": "Sandbox",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"agents.x-k8s.io/warm-pool-sandbox": suites.PoolName},
			"ownerReferences": []any{owner}},
		"spec": map[string]any{"podTemplate": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": "brakebench-sandbox"}},
			"spec": map[string]any{"restartPolicy": "Never", "terminationGracePeriodSeconds": int64(1), "automountServiceAccountToken": false,
				"containers": []any{map[string]any{"name": "main", "image": "registry.k8s.io/pause:3.10"}}}}},
	}}
}

func fixturePod(ns, name string, sandbox types.UID) *corev1.Pod {
	yes, grace := true, int64(1)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "brakebench-sandbox"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: agentsandbox.SandboxGVR.GroupVersion().String(), Kind: "Sandbox", Name: name, UID: sandbox, Controller: &yes, BlockOwnerDeletion: &yes}}},
		Spec: corev1.PodSpec{
			// No scheduler serves this name: the pod stays Pending, and nothing boots it.
			SchedulerName: "brakebench-teardown-fixture", RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken: new(false),
			Containers:                   []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
}

// parallel runs f(0..n-1), 32 at a time, and fails the test on the first error.
func parallel(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("object %d: %w", i, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
}

// kindTable is a teardown's kinds, one line each.
func kindTable(tm teardown.Timings) string {
	var b strings.Builder
	for _, k := range tm.Kinds {
		fmt.Fprintf(&b, "  %-17s %6.1f s  found %5d  deleted %5d  left %5d  requests %5d  timeouts %d", k.Resource, k.Duration.Seconds(), k.Found, k.Deleted, k.Left, k.Requests, k.Timeouts)
		switch {
		case k.NotServed:
			b.WriteString("  (not served)")
		case k.Refused:
			b.WriteString("  (refused: left to the namespace controller)")
		case k.Err != nil:
			b.WriteString("  error: " + kube.ShortErr(k.Err))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// kindCells is a teardown's kinds for one table cell.
func kindCells(tm teardown.Timings) string {
	var parts []string
	for _, k := range tm.Kinds {
		if k.NotServed {
			continue
		}
		p := fmt.Sprintf("%s %.1f (%d/%d/%d", shortKind(k.Resource), k.Duration.Seconds(), k.Found, k.Deleted, k.Left)
		if k.Timeouts > 0 {
			p += fmt.Sprintf(", %d timeouts", k.Timeouts)
		}
		parts = append(parts, p+")")
	}
	return strings.Join(parts, "; ")
}

func shortKind(resource string) string {
	return map[string]string{"sandboxclaims": "claims", "sandboxwarmpools": "pool", "sandboxes": "sandboxes", "pods": "pods", "leaderworkersets": "lws"}[resource]
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
