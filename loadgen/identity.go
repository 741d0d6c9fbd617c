package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
)

// APF is how API Priority and Fairness classified a request.
type APF struct {
	FlowSchema    string `json:"flowSchema"`
	PriorityLevel string `json:"priorityLevel"`
}

// Exempt reports whether the request bypasses APF queueing.
func (a APF) Exempt() bool { return a.PriorityLevel == "exempt" }

// CheckAPF sends a dry-run claim create as cfg's identity and reads the APF classification from
// the response headers (X-Kubernetes-PF-FlowSchema-UID / -PriorityLevel-UID), then names them.
func CheckAPF(ctx context.Context, cfg *rest.Config, admin kubernetes.Interface, ns, pool string) (APF, error) {
	g := &Generator{Namespace: ns, Pool: pool, Prefix: "apf-check-"}
	body := g.Body(0, time.Now())
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return APF{}, err
	}
	url := fmt.Sprintf("%s/apis/%s/%s/namespaces/%s/%s?dryRun=All", strings.TrimSuffix(cfg.Host, "/"),
		agentsandbox.ClaimGVR.Group, agentsandbox.ClaimGVR.Version, ns, agentsandbox.ClaimGVR.Resource)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return APF{}, fmt.Errorf("APF check: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return APF{}, fmt.Errorf("APF check: dry-run create returned HTTP %d: %s", resp.StatusCode, msg)
	}
	fsUID, plUID := resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID"), resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID")
	out := APF{FlowSchema: fsUID, PriorityLevel: plUID}
	if fss, err := admin.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{}); err == nil {
		for _, f := range fss.Items {
			if string(f.UID) == fsUID {
				out.FlowSchema = f.Name
			}
		}
	}
	if pls, err := admin.FlowcontrolV1().PriorityLevelConfigurations().List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pls.Items {
			if string(p.UID) == plUID {
				out.PriorityLevel = p.Name
			}
		}
	}
	return out, nil
}

// ServiceAccountConfig creates (in ns, labelled) a ServiceAccount allowed to create and read
// SandboxClaims there, and returns a rest.Config that authenticates as it: an ordinary identity,
// as a real agent platform's would be, so APF classifies it like one.
func ServiceAccountConfig(ctx context.Context, base *rest.Config, admin kubernetes.Interface, ns string, labels map[string]string) (*rest.Config, error) {
	const name = "brakebench-loadgen"
	meta := metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	role := &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{agentsandbox.ClaimGVR.Group}, Resources: []string{agentsandbox.ClaimGVR.Resource},
		Verbs: []string{"create", "get", "list", "watch", "delete"},
	}}}
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: meta,
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	secs := int64(3600)
	tok, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for %s/%s: %w", ns, name, err)
	}
	cfg := rest.AnonymousClientConfig(base)
	cfg.BearerToken = tok.Status.Token
	return cfg, nil
}
