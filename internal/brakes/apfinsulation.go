package brakes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/brakebench/brakebench/internal/config"
)

// InsulationOverlay is agent-sandbox's opt-in APF overlay, inside its module (v0.5.4 and later).
const InsulationOverlay = "examples/apf-insulation/apf-insulation.yaml"

// apfInsulation installs the controller version's own APF overlay (critical and bulk priority
// levels for the controller's traffic) for the cell.
type apfInsulation struct{}

func init() { register(apfInsulation{}) }

func (apfInsulation) Name() string { return "apf-insulation" }

func (apfInsulation) Setting(config.Section) (string, string, error) {
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
	if cell.Source == nil || cell.Install == nil {
		return fmt.Errorf("no source for the controller's manifests, or nothing to install them with")
	}
	dir, err := cell.Source(ctx, cell.Version)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(dir, overlay))
	if err != nil {
		return err
	}
	n, err := cell.Install(ctx, "apf insulation", raw)
	if err != nil {
		return fmt.Errorf("%s: %w", overlay, err)
	}
	cell.Log("apf-insulation", "armed", fmt.Sprintf("%d objects from agent-sandbox %s %s", n, cell.Version, overlay))
	return nil
}
