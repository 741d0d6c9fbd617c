package labprovider

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/brakebench/brakebench/internal/lab"
	"github.com/brakebench/brakebench/internal/provider"
)

// karpenterOriginal is what the lab journals before starting Karpenter: whether it ran, and
// with which options.
type karpenterOriginal struct {
	Running bool                       `json:"running"`
	Options *provider.KarpenterOptions `json:"options,omitempty"`
}

// Karpenter implements provider.KarpenterCluster: it starts the lab's Karpenter (built on first
// use) with opts; restore stops it (or restarts it with its earlier options) and sweeps what it
// and brakebench made of it.
func (c *Cluster) Karpenter(ctx context.Context, opts provider.KarpenterOptions, journal func([]byte) error) (provider.Karpenter, func(context.Context) error, error) {
	orig := karpenterOriginal{}
	if k := c.state.Karpenter; k != nil {
		orig.Running = true
		orig.Options = &provider.KarpenterOptions{NodeRepair: k.NodeRepair, CapacityBuffer: k.CapacityBuffer, TolerationScale: k.TolerationScale}
	}
	raw, _ := json.Marshal(orig)
	if err := journal(raw); err != nil {
		return provider.Karpenter{}, nil, err
	}
	restore := func(ctx context.Context) error { return c.RestoreKarpenter(ctx, raw) }
	k, err := c.lab.StartKarpenter(ctx, c.state, lab.KarpenterOptions{NodeRepair: opts.NodeRepair, CapacityBuffer: opts.CapacityBuffer, TolerationScale: opts.TolerationScale})
	if err != nil {
		return provider.Karpenter{}, restore, err
	}
	return provider.Karpenter{Version: k.Version, MetricsURL: k.MetricsURL, Policies: k.Policies}, restore, nil
}

// RestoreKarpenter implements provider.KarpenterCluster.
func (c *Cluster) RestoreKarpenter(ctx context.Context, original []byte) error {
	var orig karpenterOriginal
	if err := json.Unmarshal(original, &orig); err != nil {
		return fmt.Errorf("journaled Karpenter state: %w", err)
	}
	// Stop first, sweep, then bring back what ran before (the sweep must not race a Karpenter
	// that reconciles the pools away under it).
	if err := c.lab.StopKarpenter(ctx, c.state); err != nil {
		return err
	}
	if !orig.Running || orig.Options == nil {
		return nil
	}
	o := orig.Options
	_, err := c.lab.StartKarpenter(ctx, c.state, lab.KarpenterOptions{NodeRepair: o.NodeRepair, CapacityBuffer: o.CapacityBuffer, TolerationScale: o.TolerationScale})
	return err
}
