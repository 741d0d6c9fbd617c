package agentsandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/brakebench/brakebench/internal/flagset"
	"github.com/brakebench/brakebench/internal/kube"
)

// Deployment drives the controller installed in a cluster (kind, kubeconfig): a cell's flags and
// version become the Deployment's container args and image tag; the original is restored after.
type Deployment struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string

	// Flags, when set, reads the flags a controller version defines: a version switch then drops
	// the installed args the target does not define (a Deployment keeps its args when its image
	// changes, and v1.0.1 exits at start on v0.5.5's --enable-webhook), and refuses cell flags
	// it does not define. Each drop is a note (TakeNotes).
	Flags func(ctx context.Context, version string) (Flags, error)

	// base is the Deployment as the first Configure found it: every cell's flags are added to
	// its args (not to the previous cell's), and a cell without a version runs its image.
	base  *deploymentSnapshot
	notes []string
}

// TakeNotes returns what the Deployment has said since the last call (args dropped on a
// version switch) and forgets it.
func (d *Deployment) TakeNotes() []string {
	n := d.notes
	d.notes = nil
	return n
}

type deploymentSnapshot struct {
	image    string
	args     []string
	replicas int32
}

func (d *Deployment) get(ctx context.Context) (*appsv1.Deployment, error) {
	dep, err := d.Client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("agent-sandbox controller Deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	if len(dep.Spec.Template.Spec.Containers) == 0 {
		return nil, fmt.Errorf("deployment %s/%s has no containers", d.Namespace, d.Name)
	}
	return dep, nil
}

func snapshot(dep *appsv1.Deployment) deploymentSnapshot {
	c := dep.Spec.Template.Spec.Containers[0]
	r := int32(1)
	if dep.Spec.Replicas != nil {
		r = *dep.Spec.Replicas
	}
	return deploymentSnapshot{image: c.Image, args: append([]string(nil), c.Args...), replicas: r}
}

// Current returns the image tag and args of the controller container.
func (d *Deployment) Current(ctx context.Context) (version string, args []string, err error) {
	dep, err := d.get(ctx)
	if err != nil {
		return "", nil, err
	}
	s := snapshot(dep)
	return imageTag(s.image), s.args, nil
}

// noRevert is the revert of a change that was never made: every Configure and Stop returns a
// usable revert, also when it fails (the revert stack calls it either way).
func noRevert(context.Context) error { return nil }

// Configure sets the image tag (the original image when version is "") and the original args
// with extra added; the revert returns the Deployment to what it was before this call.
func (d *Deployment) Configure(ctx context.Context, version string, extra []string) (func(context.Context) error, error) {
	dep, err := d.get(ctx)
	if err != nil {
		return noRevert, err
	}
	orig := snapshot(dep)
	if d.base == nil {
		b := orig
		d.base = &b
	}
	revert := func(ctx context.Context) error { return d.apply(ctx, orig) }
	next := *d.base
	next.replicas = orig.replicas
	base := d.base.args
	if version != "" {
		next.image = withTag(d.base.image, version)
		if d.Flags != nil {
			defined, err := d.Flags(ctx, version)
			if err != nil {
				return noRevert, err
			}
			if bad := defined.Undefined(extra); len(bad) > 0 {
				return noRevert, fmt.Errorf("agent-sandbox %s does not define %s", version, strings.Join(bad, " "))
			}
			if drop := defined.Undefined(base); len(drop) > 0 {
				base = without(base, drop)
				d.notes = append(d.notes, fmt.Sprintf("Deployment %s/%s at %s: dropped %s from its args (not defined by %s's controller; restored with the original args at the end)",
					d.Namespace, d.Name, version, strings.Join(drop, " "), version))
			}
		}
	}
	next.args = flagset.Merge(base, extra)
	return revert, d.apply(ctx, next)
}

// without is args less the ones in drop (compared whole).
func without(args, drop []string) []string {
	var out []string
	for _, a := range args {
		if !slices.Contains(drop, a) {
			out = append(out, a)
		}
	}
	return out
}

func equalSnapshots(a, b deploymentSnapshot) bool {
	return a.image == b.image && a.replicas == b.replicas && strings.Join(a.args, "\x00") == strings.Join(b.args, "\x00")
}

// Restore sets exactly image tag version (when not "") and args.
func (d *Deployment) Restore(ctx context.Context, version string, args []string) error {
	dep, err := d.get(ctx)
	if err != nil {
		return err
	}
	s := snapshot(dep)
	s.args = args
	if version != "" {
		s.image = withTag(s.image, version)
	}
	return d.apply(ctx, s)
}

// Stop scales the controller to zero.
func (d *Deployment) Stop(ctx context.Context) (func(context.Context) error, error) {
	dep, err := d.get(ctx)
	if err != nil {
		return noRevert, err
	}
	orig := snapshot(dep)
	next := orig
	next.replicas = 0
	return func(ctx context.Context) error { return d.apply(ctx, orig) }, d.apply(ctx, next)
}

func (d *Deployment) apply(ctx context.Context, s deploymentSnapshot) error {
	dep, err := d.get(ctx)
	if err != nil {
		return err
	}
	if equalSnapshots(snapshot(dep), s) {
		return nil // no change, no rollout: nothing to wait for (and no lease would change hands)
	}
	held, err := d.heldLeases(ctx)
	if err != nil {
		return err
	}
	name := dep.Spec.Template.Spec.Containers[0].Name
	patch := map[string]any{"spec": map[string]any{
		"replicas": s.replicas,
		"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": name, "image": s.image, "args": s.args},
		}}},
	}}
	raw, _ := json.Marshal(patch)
	if _, err := d.Client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.StrategicMergePatchType, raw, metav1.PatchOptions{FieldManager: "brakebench"}); err != nil {
		return fmt.Errorf("patch %s/%s: %w", d.Namespace, d.Name, err)
	}
	if err := d.waitRollout(ctx, 5*time.Minute); err != nil {
		return err
	}
	// A completed rollout is not yet the new setting in effect: the old pod may still be
	// terminating (and reconciling), and with leader election the new pod acts only once it
	// holds the lease the old one kept (up to its lease duration). Seen on the lab's real node: a
	// brake cell's burst was served by the old, brake-less pod.
	if err := d.waitOldPodsGone(ctx, dep, 2*time.Minute); err != nil {
		return err
	}
	if s.replicas > 0 {
		if err := d.waitLeaseHandover(ctx, held, 2*time.Minute); err != nil {
			return err
		}
		return d.waitWorkersStarted(ctx, dep, 2*time.Minute)
	}
	return nil
}

// waitWorkersStarted follows the new pod's log until its warm-pool controller has started its
// workers (controller-runtime logs "Starting workers" once it leads and its caches have synced):
// before that a burst meets no controller, or one that never saw the pool full. Seen on the lab's
// real node: a burst sent right after the lease changed hands found the replenish delay not
// applied.
func (d *Deployment) waitWorkersStarted(ctx context.Context, dep *appsv1.Deployment, timeout time.Duration) error {
	sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	if err != nil || dep.Spec.Selector == nil {
		return nil
	}
	pods, err := d.Client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		if err := followUntil(wctx, d.Client, p.Namespace, p.Name, func(line string) bool {
			return strings.Contains(line, "Starting workers") && strings.Contains(line, "sandboxwarmpool")
		}); err != nil {
			return fmt.Errorf("controller pod %s never started its sandboxwarmpool workers: %w", p.Name, err)
		}
	}
	return nil
}

// followUntil follows a pod's log (from its start) until match holds for a line.
func followUntil(ctx context.Context, c kubernetes.Interface, ns, pod string, match func(string) bool) error {
	for {
		r, err := c.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Follow: true}).Stream(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// the container may not have started yet
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
			case <-time.After(500 * time.Millisecond):
				continue
			}
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			if match(sc.Text()) {
				_ = r.Close()
				return nil
			}
		}
		_ = r.Close()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return errors.New("the log ended without the line")
	}
}

// heldLeases are the Leases in the controller's namespace with a holder now, by name.
func (d *Deployment) heldLeases(ctx context.Context) (map[string]string, error) {
	l, err := d.Client.CoordinationV1().Leases(d.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("leases in %s: %w", d.Namespace, err)
	}
	held := map[string]string{}
	for _, le := range l.Items {
		if h := le.Spec.HolderIdentity; h != nil && *h != "" {
			held[le.Name] = *h
		}
	}
	return held, nil
}

// waitOldPodsGone waits until every pod the Deployment selects is live (none terminating).
func (d *Deployment) waitOldPodsGone(ctx context.Context, dep *appsv1.Deployment, timeout time.Duration) error {
	sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	if err != nil || dep.Spec.Selector == nil {
		return nil // nothing to select by
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pods := d.Client.CoreV1().Pods(d.Namespace)
	terminating := 0
	err = kube.UntilList(wctx,
		func(ctx context.Context) (runtime.Object, error) {
			return pods.List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel.String()
			return pods.Watch(ctx, o)
		},
		func(obj runtime.Object) bool {
			terminating = 0
			for _, p := range obj.(*corev1.PodList).Items {
				if p.DeletionTimestamp != nil {
					terminating++
				}
			}
			return terminating == 0
		})
	if err != nil {
		return fmt.Errorf("%d old pods of %s/%s still terminating: %w", terminating, d.Namespace, d.Name, err)
	}
	return nil
}

// waitLeaseHandover waits until each Lease held before the change is held by someone else (the
// new pod; a leader-election identity is new with every process).
func (d *Deployment) waitLeaseHandover(ctx context.Context, before map[string]string, timeout time.Duration) error {
	if len(before) == 0 {
		return nil // no leader election
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	leases := d.Client.CoordinationV1().Leases(d.Namespace)
	var waiting []string
	err := kube.UntilList(wctx,
		func(ctx context.Context) (runtime.Object, error) { return leases.List(ctx, metav1.ListOptions{}) },
		leases.Watch,
		func(obj runtime.Object) bool {
			waiting = waiting[:0]
			for _, le := range obj.(*coordinationv1.LeaseList).Items {
				old, ok := before[le.Name]
				// Released ("" or none) is not handed over: a controller that releases its lease
				// on shutdown leaves it empty until the new pod takes it.
				if ok && (le.Spec.HolderIdentity == nil || *le.Spec.HolderIdentity == "" || *le.Spec.HolderIdentity == old) {
					waiting = append(waiting, le.Name)
				}
			}
			return len(waiting) == 0
		})
	if err != nil {
		return fmt.Errorf("the new controller pod never took over leader lease %v in %s: %w", waiting, d.Namespace, err)
	}
	return nil
}

func (d *Deployment) waitRollout(ctx context.Context, timeout time.Duration) error {
	return kube.WaitRollout(ctx, d.Client, d.Namespace, d.Name, timeout)
}

func imageTag(image string) string {
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[i+1:]
	}
	return ""
}

func withTag(image, tag string) string {
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image + ":" + tag
}

// Logs is the controller container's log of every pod the Deployment selects now (the pods of
// the current rollout), one after another; reading it changes nothing.
func (d *Deployment) Logs(ctx context.Context) (io.ReadCloser, error) {
	dep, err := d.get(ctx)
	if err != nil {
		return nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s selector: %w", d.Namespace, d.Name, err)
	}
	pods, err := d.Client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("pods of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	container := dep.Spec.Template.Spec.Containers[0].Name
	var readers []io.Reader
	var closers []io.Closer
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		rc, err := d.Client.CoreV1().Pods(d.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: container}).Stream(ctx)
		if err != nil {
			for _, c := range closers {
				_ = c.Close()
			}
			return nil, fmt.Errorf("log of pod %s/%s: %w", d.Namespace, p.Name, err)
		}
		readers, closers = append(readers, rc, strings.NewReader("\n")), append(closers, rc)
	}
	return &multiReadCloser{Reader: io.MultiReader(readers...), closers: closers}, nil
}

type multiReadCloser struct {
	io.Reader
	closers []io.Closer
}

func (m *multiReadCloser) Close() error {
	var first error
	for _, c := range m.closers {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
