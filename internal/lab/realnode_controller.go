package lab

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
func (l *Lab) deployController(ctx context.Context, s *State, c *kube.Clients, more []string) error {
	rn := s.RealNode
	if rn == nil {
		return fmt.Errorf("lab.controllerMode deployment needs lab.realNode")
	}
	versions := []string{l.versions.AgentSandbox}
	for _, v := range append(append([]string{}, l.cfg.ControllerImages...), more...) {
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

// adaptControllerDeployment makes the upstream controller Deployment run on the lab's real node:
// the lab-built image, the metrics and health servers off, no container ports (see
// OnRealNodeHostNetwork for why), and the rest of OnRealNodeHostNetwork. Everything else
// (service account, RBAC, leader election, the --extensions flag) is upstream's.
func adaptControllerDeployment(o *unstructured.Unstructured, image, server string) error {
	spec, ok, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
	containers, _ := spec["containers"].([]any)
	if !ok || len(containers) == 0 {
		return fmt.Errorf("deployment %s has no containers", o.GetName())
	}
	m := containers[0].(map[string]any)
	m["image"] = image
	args, _ := m["args"].([]any)
	m["args"] = append(args, "--metrics-bind-address=0", "--health-probe-bind-address=0")
	for _, c := range containers {
		delete(c.(map[string]any), "ports")
	}
	if err := OnRealNodeHostNetwork(spec, server); err != nil {
		return err
	}
	return unstructured.SetNestedMap(o.Object, spec, "spec", "template", "spec")
}

// OnRealNodeHostNetwork adapts a pod spec (unstructured) to run on the lab's real node, on the
// host's network. What differs from a cloud cluster, and why:
//   - the pod selects and tolerates the real node (the only node that runs containers) and never
//     pulls (its images were imported; there is no registry);
//   - host network, with KUBERNETES_SERVICE_HOST/PORT set to the apiserver's address: the lab has
//     no kube-proxy, so the kubernetes Service's cluster IP leads nowhere;
//   - on the host network the old and the new pod of a rollout would claim the same host ports
//     and the scheduler would keep the new one Pending: callers drop container ports or choose
//     free ones.
func OnRealNodeHostNetwork(spec map[string]any, server string) error {
	u, err := url.Parse(server)
	if err != nil || u.Hostname() == "" || u.Port() == "" {
		return fmt.Errorf("apiserver address %q: expected https://host:port", server)
	}
	containers, _ := spec["containers"].([]any)
	for _, c := range containers {
		m := c.(map[string]any)
		env, _ := m["env"].([]any)
		m["env"] = append(env,
			map[string]any{"name": "KUBERNETES_SERVICE_HOST", "value": u.Hostname()},
			map[string]any{"name": "KUBERNETES_SERVICE_PORT", "value": u.Port()})
	}
	spec["hostNetwork"] = true
	spec["dnsPolicy"] = "ClusterFirstWithHostNet"
	kube.RealNodePodSpec(spec)
	return nil
}

// DeployController switches a running lab from the local controller process to the upstream
// Deployment on the real node (with controller images for the pinned version, lab.controllerImages
// and more), as lab.controllerMode=deployment does at lab up. UndeployController switches back.
// Both read the lab's saved state (other commands change it) and return it as they left it.
func (l *Lab) DeployController(ctx context.Context, more []string) (*State, error) {
	s, err := l.Load()
	if err != nil {
		return nil, err
	}
	if s.RealNode == nil {
		return s, fmt.Errorf("lab %q has no real node (lab.realNode); the controller Deployment runs there", s.Name)
	}
	c, err := s.clients()
	if err != nil {
		return s, err
	}
	if err := l.StopController(s); err != nil {
		return s, err
	}
	return s, l.deployController(ctx, s, c, more)
}

// UndeployController deletes the controller Deployment (waiting until its pods are gone) and
// starts the local controller process again at the pinned version.
func (l *Lab) UndeployController(ctx context.Context) (*State, error) {
	s, err := l.Load()
	if err != nil {
		return nil, err
	}
	return s, l.undeployController(ctx, s)
}

func (l *Lab) undeployController(ctx context.Context, s *State) error {
	d := s.ControllerDeployment
	if d == nil {
		return nil
	}
	c, err := s.clients()
	if err != nil {
		return err
	}
	fg := metav1.DeletePropagationForeground
	if err := c.Typed.AppsV1().Deployments(d.Namespace).Delete(ctx, d.Name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := waitNoPods(wctx, c, d.Namespace, "", "app=agent-sandbox-controller"); err != nil {
		return fmt.Errorf("controller Deployment's pods: %w", err)
	}
	s.ControllerDeployment = nil
	if err := l.save(s); err != nil {
		return err
	}
	if _, serr := os.Stat(s.ControllerKubeconfig); serr != nil { // a lab that came up in deployment mode
		if err := agentsandbox.ServiceAccountKubeconfig(ctx, c, agentsandbox.ControllerNamespace, agentsandbox.ControllerServiceAcount, s.ControllerKubeconfig, 48*time.Hour); err != nil {
			return err
		}
	}
	_, err = l.StartController(ctx, s, l.versions.AgentSandbox, nil)
	return err
}

// ImportImage imports spec into the lab's real node and records it in the lab's state (lab
// status lists it).
func (l *Lab) ImportImage(ctx context.Context, s *State, spec images.Spec) error {
	if s.RealNode == nil {
		return fmt.Errorf("lab %q has no real node: bring it up with --set lab.realNode=true", s.Name)
	}
	if err := s.RealNode.ImportImage(ctx, spec); err != nil {
		return err
	}
	return l.save(s)
}
