// Package kube holds the client plumbing shared by providers, installers and suites: one set of
// clients per cluster, applying manifests by server-side apply, and watch-based waits.
package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// Labels every object brakebench creates carries.
const (
	ManagedByKey   = "app.kubernetes.io/managed-by"
	ManagedByValue = "brakebench"
	RunIDKey       = "brakebench.io/run-id"
	FieldManager   = "brakebench"
)

// Clients bundles the clients of one cluster.
type Clients struct {
	Config  *rest.Config
	Typed   kubernetes.Interface
	Dynamic dynamic.Interface
	Mapper  meta.ResettableRESTMapper
}

// NewClients builds clients from a rest.Config.
func NewClients(cfg *rest.Config) (*Clients, error) {
	typed, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("typed client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(typed.Discovery()))
	return &Clients{Config: cfg, Typed: typed, Dynamic: dyn, Mapper: mapper}, nil
}

// RESTConfig loads a kubeconfig file (empty path: the default loading rules) and context.
func RESTConfig(path, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %q context %q: %w", path, context, err)
	}
	return cfg, nil
}

// DecodeYAML splits a multi-document manifest into objects.
func DecodeYAML(raw []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := map[string]any{}
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
}

// Apply server-side-applies objects in order, labelling each as brakebench's.
func (c *Clients) Apply(ctx context.Context, objs []*unstructured.Unstructured, labels map[string]string) error {
	for _, obj := range objs {
		l := obj.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		for k, v := range labels {
			l[k] = v
		}
		obj.SetLabels(l)
		gvk := obj.GroupVersionKind()
		mapping, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			c.Mapper.Reset()
			if mapping, err = c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				return fmt.Errorf("apply %s %s: %w", gvk.Kind, obj.GetName(), err)
			}
		}
		var ri dynamic.ResourceInterface = c.Dynamic.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = c.Dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace())
		}
		if _, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return fmt.Errorf("apply %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}

// RunSelector selects what runs created: labelled managed-by=brakebench and carrying a run id
// (runID "" = any run). The lab's own nodes, CRDs and RBAC carry no run id and never match.
func RunSelector(runID string) string {
	s := ManagedByKey + "=" + ManagedByValue + "," + RunIDKey
	if runID != "" {
		s += "=" + runID
	}
	return s
}

// ShortErr trims long API errors for one-line messages.
func ShortErr(err error) string {
	s := err.Error()
	if i := strings.Index(s, "\n"); i > 0 {
		s = s[:i]
	}
	return s
}
