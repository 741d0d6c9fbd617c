// Package agentsandbox knows the system under test: agent-sandbox's API resources, how its
// upstream CRDs and RBAC are installed from the pinned module, and which flags its brakes are.
package agentsandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/brakebench/brakebench/internal/kube"
)

// Resources of agent-sandbox v1beta1.
var (
	SandboxGVR  = schema.GroupVersionResource{Group: "agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxes"}
	ClaimGVR    = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxclaims"}
	TemplateGVR = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxtemplates"}
	PoolGVR     = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxwarmpools"}
	CRDGVR      = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// Well-known labels and annotations of agent-sandbox.
const (
	LaunchTypeLabel        = "agents.x-k8s.io/launch-type"
	WarmPoolSandboxLabel   = "agents.x-k8s.io/warm-pool-sandbox"
	SandboxNameHashLabel   = "agents.x-k8s.io/sandbox-name-hash"
	ClientRequestedAtAnnot = "agents.x-k8s.io/client-first-requested-at"
	// AnnotationPrefix is the prefix of agent-sandbox's labels and annotations.
	AnnotationPrefix        = "agents.x-k8s.io/"
	ControllerNamespace     = "agent-sandbox-system"
	ControllerServiceAcount = "agent-sandbox-controller"
)

// CRDs reads the four upstream CRDs from the module directory and makes them work without the
// conversion webhook: only v1beta1 (the storage version every client here uses) is kept and the
// conversion strategy is None. Keeping v1alpha1 served with None would be wrong: the schemas differ.
func CRDs(moduleDir string) ([]*unstructured.Unstructured, error) {
	return kube.OneVersionCRDs(filepath.Join(moduleDir, "k8s", "crds", "*.yaml"), kube.KeepVersion("v1beta1"))
}

// RBAC returns the upstream namespace, ServiceAccount, roles and bindings of the controller (the
// core and extensions controllers), leaving out the Deployment and Services.
func RBAC(moduleDir string) ([]*unstructured.Unstructured, error) {
	keepKinds := map[string]bool{"Namespace": true, "ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true}
	var out []*unstructured.Unstructured
	for _, name := range []string{"controller.yaml", "rbac.generated.yaml", "extensions-rbac.generated.yaml", "extensions.yaml"} {
		raw, err := os.ReadFile(filepath.Join(moduleDir, "k8s", name))
		if err != nil {
			return nil, fmt.Errorf("agent-sandbox manifest: %w", err)
		}
		objs, err := kube.DecodeYAML(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, o := range objs {
			if keepKinds[o.GetKind()] {
				out = append(out, o)
			}
		}
	}
	// Namespaces first so namespaced objects can land.
	sort.SliceStable(out, func(i, j int) bool { return out[i].GetKind() == "Namespace" && out[j].GetKind() != "Namespace" })
	return out, nil
}

// WaitCRDsEstablished waits until every CRD reports Established.
func WaitCRDsEstablished(ctx context.Context, c *kube.Clients, names []string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			crd, err := c.Dynamic.Resource(CRDGVR).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			ok := false
			for _, cd := range conds {
				m, _ := cd.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					ok = true
				}
			}
			if !ok {
				return false, nil
			}
		}
		c.Mapper.Reset()
		return true, nil
	})
}

// ServiceAccountKubeconfig writes a kubeconfig that authenticates as namespace/name through a
// TokenRequest, so the process using it is an ordinary identity that APF and RBAC apply to.
func ServiceAccountKubeconfig(ctx context.Context, c *kube.Clients, namespace, name, path string, ttl time.Duration) error {
	secs := int64(ttl / time.Second)
	var tok *authv1.TokenRequest
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		tok, err = c.Typed.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
			&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("token for %s/%s: %w", namespace, name, err)
	}
	return WriteTokenKubeconfig(c.Config, tok.Status.Token, "system:serviceaccount:"+namespace+":"+name, path)
}

// WriteTokenKubeconfig writes a kubeconfig for base's server and CA with a bearer token.
func WriteTokenKubeconfig(base *rest.Config, token, user, path string) error {
	cfg := clientcmdapi.NewConfig()
	ca := base.CAData
	if len(ca) == 0 && base.CAFile != "" {
		b, err := os.ReadFile(base.CAFile)
		if err != nil {
			return err
		}
		ca = b
	}
	cfg.Clusters["lab"] = &clientcmdapi.Cluster{Server: base.Host, CertificateAuthorityData: ca, InsecureSkipTLSVerify: base.Insecure}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["default"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: user}
	cfg.CurrentContext = "default"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*cfg, path)
}

// ControllerImage is the published controller image of a release.
func ControllerImage(version string) string {
	return "registry.k8s.io/agent-sandbox/agent-sandbox-controller:" + version
}

// InClusterManifests are the release manifests for a real cluster (kind): the webhook-free CRDs,
// the upstream RBAC, and the upstream extensions Deployment with the published image of version
// and the webhook off where the version has one (no conversion is needed with v1beta1-only CRDs).
func InClusterManifests(moduleDir, version string) ([]*unstructured.Unstructured, error) {
	crds, err := CRDs(moduleDir)
	if err != nil {
		return nil, err
	}
	rbac, err := RBAC(moduleDir)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(moduleDir, "k8s", "extensions.controller.yaml"))
	if err != nil {
		return nil, err
	}
	objs, err := kube.DecodeYAML(raw)
	if err != nil {
		return nil, err
	}
	defined, err := ControllerFlags(moduleDir)
	if err != nil {
		return nil, err
	}
	args := []any{"--leader-elect=true", "--extensions"}
	if defined.Defines("enable-webhook") { // v1.0.1 has no webhook and no flag for it
		args = append(args, "--enable-webhook=false")
	}
	out := append(crds, rbac...)
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			m := c.(map[string]any)
			m["image"] = ControllerImage(version)
			m["args"] = append([]any(nil), args...)
		}
		_ = unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers")
		out = append(out, o)
	}
	return out, nil
}
