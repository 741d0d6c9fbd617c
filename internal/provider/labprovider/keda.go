package labprovider

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/brakebench/brakebench/internal/flagset"
	"github.com/brakebench/brakebench/internal/provider"
)

// kedaOriginal is what the lab journals before starting KEDA: whether it ran, and
// kube-controller-manager's arguments when the run changes its HPA sync period.
type kedaOriginal struct {
	Running bool     `json:"running"`
	KCMArgs []string `json:"kcmArgs,omitempty"`
}

type labKEDA struct {
	c    *Cluster
	sync string
}

// KEDA implements provider.KEDACluster: it starts the lab's KEDA (built on first use) and, when
// hpaSyncPeriod differs from kube-controller-manager's, restarts it with that period; restore
// undoes both.
func (c *Cluster) KEDA(ctx context.Context, hpaSyncPeriod string, journal func([]byte) error) (provider.KEDA, func(context.Context) error, error) {
	orig := kedaOriginal{Running: c.state.KEDA != nil}
	cur, err := c.lab.HPASyncPeriod()
	if err != nil {
		return nil, nil, err
	}
	change := false
	if hpaSyncPeriod != "" {
		want, err := time.ParseDuration(hpaSyncPeriod)
		if err != nil {
			return nil, nil, err
		}
		change = want != cur
	}
	if change {
		if orig.KCMArgs, err = c.lab.ComponentArgs("kube-controller-manager"); err != nil {
			return nil, nil, err
		}
	}
	raw, _ := json.Marshal(orig)
	if err := journal(raw); err != nil {
		return nil, nil, err
	}
	restore := func(ctx context.Context) error { return c.RestoreKEDA(ctx, raw) }
	if change {
		args := flagset.Merge(orig.KCMArgs, []string{"--horizontal-pod-autoscaler-sync-period=" + hpaSyncPeriod})
		if err := c.lab.RestartComponent(ctx, "kube-controller-manager", args); err != nil {
			return nil, restore, err
		}
	}
	if _, err := c.lab.StartKEDA(ctx, c.state); err != nil {
		return nil, restore, err
	}
	now, _ := c.lab.HPASyncPeriod()
	return &labKEDA{c: c, sync: now.String()}, restore, nil
}

// RestoreKEDA implements provider.KEDACluster.
func (c *Cluster) RestoreKEDA(ctx context.Context, original []byte) error {
	var orig kedaOriginal
	if err := json.Unmarshal(original, &orig); err != nil {
		return err
	}
	var errs []error
	if !orig.Running {
		errs = append(errs, c.lab.StopKEDA(ctx, c.state))
	}
	if len(orig.KCMArgs) > 0 {
		errs = append(errs, c.lab.RestartComponent(ctx, "kube-controller-manager", orig.KCMArgs))
	}
	return errors.Join(errs...)
}

func (k *labKEDA) Version() string                 { return k.c.lab.Versions().KEDA }
func (k *labKEDA) HPASyncPeriod() string           { return k.sync }
func (k *labKEDA) ExporterURL(local string) string { return local }
func (k *labKEDA) ServesExporter() bool            { return true }
