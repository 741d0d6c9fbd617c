package kueuelws

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/brakebench/brakebench/internal/kube"
)

// Deployment is an installed Kueue manager on a kind or real cluster; its feature gates are
// changed by patching the manager container's --feature-gates argument.
type Deployment struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string
}

// Args returns the manager container's args and its name (the container named "manager", else
// the first).
func (d *Deployment) Args(ctx context.Context) (container string, args []string, image string, err error) {
	dep, err := d.Client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
	if err != nil {
		return "", nil, "", fmt.Errorf("the Kueue manager Deployment %s/%s (set gangQuota.kueueNamespace/kueueDeployment): %w", d.Namespace, d.Name, err)
	}
	cs := dep.Spec.Template.Spec.Containers
	if len(cs) == 0 {
		return "", nil, "", fmt.Errorf("Deployment %s/%s has no containers", d.Namespace, d.Name)
	}
	c := cs[0]
	for _, x := range cs {
		if x.Name == "manager" {
			c = x
		}
	}
	return c.Name, append([]string(nil), c.Args...), c.Image, nil
}

// SetArgs patches the manager container's args and waits for the rollout.
func (d *Deployment) SetArgs(ctx context.Context, container string, args []string) error {
	patch := map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": container, "args": args}},
	}}}}
	raw, _ := json.Marshal(patch)
	if _, err := d.Client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.StrategicMergePatchType, raw, metav1.PatchOptions{FieldManager: "brakebench"}); err != nil {
		return fmt.Errorf("patch %s/%s: %w", d.Namespace, d.Name, err)
	}
	return kube.WaitRollout(ctx, d.Client, d.Namespace, d.Name, 5*time.Minute)
}

// MergeGates sets each "Name=bool" of gates in args' --feature-gates (adding the flag when
// absent), keeping every other gate and argument as it was.
func MergeGates(args, gates []string) []string {
	out := append([]string(nil), args...)
	idx := -1
	var cur []string
	for i, a := range out {
		if v, ok := strings.CutPrefix(a, "--feature-gates="); ok {
			idx = i
			if v != "" {
				cur = strings.Split(v, ",")
			}
		}
	}
	for _, g := range gates {
		name, _, _ := strings.Cut(g, "=")
		replaced := false
		for i, c := range cur {
			if n, _, _ := strings.Cut(c, "="); n == name {
				cur[i] = g
				replaced = true
			}
		}
		if !replaced {
			cur = append(cur, g)
		}
	}
	flag := "--feature-gates=" + strings.Join(cur, ",")
	if idx >= 0 {
		out[idx] = flag
	} else {
		out = append(out, flag)
	}
	return out
}

// GatesIn returns the --feature-gates items in args.
func GatesIn(args []string) []string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--feature-gates="); ok && v != "" {
			return strings.Split(v, ",")
		}
	}
	return nil
}
