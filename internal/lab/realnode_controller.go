package lab

import (
	"context"
	"fmt"
	"net/url"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/brakebench/brakebench/internal/images"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/labbuild"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
)

// ControllerImage is the lab-built image of the agent-sandbox controller at version: one layer
// with the controller binary this lab built from the module proxy. Its tag is the version, as
// with the published images, so `--preset upgrade` switches versions by tag.
func ControllerImage(version string) string {
	return "brakebench.local/agent-sandbox-controller:" + version
}

// ControllerDeployment is the agent-sandbox controller running as its upstream Deployment on the
// real node (lab.controllerMode: deployment).
type ControllerDeployment struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Version   string   `json:"version"`
	Images    []string `json:"images"`
}

// deployController builds the controller image of every version asked for, imports them into the
// real node's containerd and installs the upstream Deployment, adapted to the lab (see
// adaptControllerDeployment), then waits for its rollout.
func (l *Lab) deployController(ctx context.Context, s *State, c *kube.Clients) error {
	rn := s.RealNode
	if rn == nil {
		return fmt.Errorf("lab.controllerMode deployment needs lab.realNode")
	}
	versions := []string{l.versions.AgentSandbox}
	for _, v := range l.cfg.ControllerImages {
		if !slices.Contains(versions, v) {
			versions = append(versions, v)
		}
	}
	cd := &ControllerDeployment{Namespace: agentsandbox.ControllerNamespace, Name: "agent-sandbox-controller", Version: l.versions.AgentSandbox}
	for _, v := range versions {
		r, err := l.builder.Build(ctx, labbuild.AgentSandboxComponent(v))
		if err != nil {
			return err
		}
		spec := images.Spec{Ref: ControllerImage(v), Files: map[string]string{"/agent-sandbox-controller": r.Path("agent-sandbox-controller")}}
		if err := rn.ImportImage(ctx, spec); err != nil {
			return err
		}
		cd.Images = append(cd.Images, spec.Ref)
	}
	mod, err := l.builder.ModuleDir(ctx, "sigs.k8s.io/agent-sandbox", l.versions.AgentSandbox)
	if err != nil {
		return err
	}
	objs, err := agentsandbox.InClusterManifests(mod, l.versions.AgentSandbox)
	if err != nil {
		return err
	}
	var deps []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			if err := adaptControllerDeployment(o, ControllerImage(l.versions.AgentSandbox), s.Server); err != nil {
				return err
			}
			cd.Name = o.GetName()
			deps = append(deps, o)
		}
	}
	if len(deps) != 1 {
		return fmt.Errorf("agent-sandbox %s manifests: expected one controller Deployment, found %d", l.versions.AgentSandbox, len(deps))
	}
	if err := c.Apply(ctx, deps, map[string]string{kube.ManagedByKey: kube.ManagedByValue}); err != nil {
		return err
	}
	s.ControllerDeployment = cd
	if err := l.save(s); err != nil {
		return err
	}
	if err := kube.WaitRollout(ctx, c.Typed, cd.Namespace, cd.Name, l.cfg.UpTimeout); err != nil {
		return fmt.Errorf("agent-sandbox controller Deployment on the real node: %w", err)
	}
	return nil
}

// adaptControllerDeployment makes the upstream controller Deployment run on the lab's real node.
// What differs from a cloud cluster, and why:
//   - the image is the lab-built one (no registry here), never pulled;
//   - the pod selects and tolerates the real node (the only node that runs containers);
//   - host network, with KUBERNETES_SERVICE_HOST/PORT set to the apiserver's address: the lab has
//     no kube-proxy, so the kubernetes Service's cluster IP leads nowhere;
//   - no container ports and the metrics and health servers off: on the host network the old and
//     the new pod of a rollout would claim the same host ports, and the scheduler would keep the
//     new one Pending until the old one left (which it never does in a rolling update).
//
// Everything else (service account, RBAC, leader election, the --extensions flag) is upstream's.
func adaptControllerDeployment(o *unstructured.Unstructured, image, server string) error {
	u, err := url.Parse(server)
	if err != nil || u.Hostname() == "" || u.Port() == "" {
		return fmt.Errorf("apiserver address %q: expected https://host:port", server)
	}
	containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		return fmt.Errorf("deployment %s has no containers", o.GetName())
	}
	for i, c := range containers {
		m := c.(map[string]any)
		if i == 0 {
			m["image"] = image
			args, _ := m["args"].([]any)
			m["args"] = append(args, "--metrics-bind-address=0", "--health-probe-bind-address=0")
		}
		m["imagePullPolicy"] = "Never"
		delete(m, "ports")
		env, _ := m["env"].([]any)
		m["env"] = append(env,
			map[string]any{"name": "KUBERNETES_SERVICE_HOST", "value": u.Hostname()},
			map[string]any{"name": "KUBERNETES_SERVICE_PORT", "value": u.Port()})
	}
	spec := map[string]any{}
	if v, ok, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec"); ok {
		spec = v
	}
	spec["containers"] = containers
	spec["hostNetwork"] = true
	spec["dnsPolicy"] = "ClusterFirstWithHostNet"
	spec["nodeSelector"] = map[string]any{RealNodeKey: "true"}
	spec["tolerations"] = []any{map[string]any{"key": RealNodeKey, "operator": "Equal", "value": "true", "effect": "NoSchedule"}}
	return unstructured.SetNestedMap(o.Object, spec, "spec", "template", "spec")
}
