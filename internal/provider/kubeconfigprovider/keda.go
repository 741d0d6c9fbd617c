package kubeconfigprovider

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/brakebench/brakebench/internal/provider"
)

// installedKEDA is the KEDA a kind or real cluster already runs; brakebench changes nothing of
// it (ScaledObjects are created in the run's namespaces and deleted with them).
type installedKEDA struct{ exporter string }

// KEDA implements provider.KEDACluster: KEDA must be installed (its ScaledObject CRD served).
func (c *Cluster) KEDA(ctx context.Context, hpaSyncPeriod string, journal func([]byte) error) (provider.KEDA, func(context.Context) error, error) {
	dc, err := dynamic.NewForConfig(c.rc)
	if err != nil {
		return nil, nil, err
	}
	crd := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dc.Resource(crd).Get(ctx, "scaledobjects.keda.sh", metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("KEDA is not installed on context %q (no scaledobjects.keda.sh CRD); install KEDA, or use the lab", c.p.Context)
		}
		return nil, nil, err
	}
	if hpaSyncPeriod != "" {
		return nil, nil, fmt.Errorf("poolAutoscaling.hpaSyncPeriod cannot be changed on %s clusters (the HPA sync period is the control plane's); leave it at 0", c.p.Name_)
	}
	if err := journal([]byte(`{}`)); err != nil {
		return nil, nil, err
	}
	return installedKEDA{exporter: c.p.ExporterURL}, func(context.Context) error { return nil }, nil
}

// RestoreKEDA implements provider.KEDACluster: nothing of KEDA was changed.
func (c *Cluster) RestoreKEDA(context.Context, []byte) error { return nil }

func (k installedKEDA) Version() string           { return "" }
func (k installedKEDA) HPASyncPeriod() string     { return "" }
func (k installedKEDA) ExporterURL(string) string { return k.exporter }
func (k installedKEDA) ServesExporter() bool      { return false }
