package brakes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/brakebench/brakebench/faults"
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/kube"
)

// InsulationOverlay is agent-sandbox's opt-in APF overlay, inside its module (v0.5.4 and later).
const InsulationOverlay = "examples/apf-insulation/apf-insulation.yaml"

// apfInsulation installs the controller version's own APF overlay (critical and bulk priority
// levels for the controller's traffic) for the cell.
type apfInsulation struct{}

func init() { register(apfInsulation{}) }

func (apfInsulation) Name() string { return "apf-insulation" }

func (apfInsulation) Setting(config.Brakes) (string, string, error) {
	return InsulationOverlay, "", nil
}

func (apfInsulation) Flags(string) []string { return nil }

func (apfInsulation) NotApplicable(dir, version string) string {
	if _, err := os.Stat(filepath.Join(dir, InsulationOverlay)); err != nil {
		return fmt.Sprintf("agent-sandbox %s has no %s", version, InsulationOverlay)
	}
	return ""
}

// Apply installs the overlay. Objects of the same names that brakebench did not create (an
// operator installed the overlay) are left alone and the cell fails instead.
func (apfInsulation) Apply(ctx context.Context, cell *Cell, overlay string) error {
	if cell.Source == nil {
		return fmt.Errorf("no source for the controller's manifests")
	}
	dir, err := cell.Source(ctx, cell.Version)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(dir, overlay))
	if err != nil {
		return err
	}
	objs, err := kube.DecodeYAML(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", overlay, err)
	}
	c := cell.Clients
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return err
		}
		existing, err := c.Dynamic.Resource(m.Resource).Get(ctx, o.GetName(), metav1.GetOptions{})
		if err == nil && existing.GetLabels()[kube.ManagedByKey] != kube.ManagedByValue {
			return fmt.Errorf("%s %s already exists and is not brakebench's: the overlay is installed; not touching it", gvk.Kind, o.GetName())
		}
		if err := cell.Journal.Record(faults.Entry{Op: faults.OpCreated, APIVersion: o.GetAPIVersion(), Kind: gvk.Kind, Resource: m.Resource.Resource, Name: o.GetName()}); err != nil {
			return err
		}
		gvr, name := m.Resource, o.GetName()
		cell.Reverts.Push("apf insulation "+name, func(ctx context.Context) error {
			err := c.Dynamic.Resource(gvr).Delete(ctx, name, metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
	}
	if err := c.Apply(ctx, objs, cell.Labels); err != nil {
		return err
	}
	cell.Log("apf-insulation", "armed", fmt.Sprintf("%d objects from agent-sandbox %s %s", len(objs), cell.Version, overlay))
	return nil
}
