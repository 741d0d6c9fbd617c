package labprovider

import (
	"context"
	"encoding/json"
	"slices"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/brakebench/brakebench/internal/lab"
	"github.com/brakebench/brakebench/internal/provider"
)

// labKueue is the lab's own Kueue process.
type labKueue struct{ c *Cluster }

// gangOriginal is what the lab journals before starting Kueue and LWS: whether they ran.
type gangOriginal struct {
	Running bool     `json:"running"`
	Gates   []string `json:"gates,omitempty"`
}

// Kueue implements provider.KueueCluster: it starts the lab's Kueue and LWS controller (built on
// first use) unless they already run; restore stops them again if this call started them.
func (c *Cluster) Kueue(ctx context.Context, journal func([]byte) error) (provider.Kueue, func(context.Context) error, error) {
	orig := gangOriginal{Running: c.state.Gang != nil}
	if orig.Running {
		orig.Gates = c.state.Gang.KueueGates
	}
	raw, _ := json.Marshal(orig)
	if err := journal(raw); err != nil {
		return nil, nil, err
	}
	restore := func(ctx context.Context) error { return c.RestoreKueue(ctx, raw) }
	if _, err := c.lab.StartGang(ctx, c.state, nil); err != nil {
		return nil, restore, err
	}
	return &labKueue{c}, restore, nil
}

// RestoreKueue implements provider.KueueCluster.
func (c *Cluster) RestoreKueue(ctx context.Context, original []byte) error {
	var orig gangOriginal
	if err := json.Unmarshal(original, &orig); err != nil {
		return err
	}
	if !orig.Running {
		return c.lab.StopGang(ctx, c.state)
	}
	_, err := c.lab.StartGang(ctx, c.state, withoutBase(orig.Gates))
	return err
}

func withoutBase(gates []string) []string {
	var out []string
	for _, g := range gates {
		if !slices.Contains(lab.KueueBaseGates(), g) {
			out = append(out, g)
		}
	}
	return out
}

func (k *labKueue) SetGates(ctx context.Context, gates []string) error {
	_, err := k.c.lab.StartGang(ctx, k.c.state, gates)
	return err
}

func (k *labKueue) Gates() []string {
	if g := k.c.state.Gang; g != nil {
		return append([]string(nil), g.KueueGates...)
	}
	return nil
}

func (k *labKueue) Version() string { return k.c.lab.Versions().Kueue }

// Metrics is Kueue's HTTPS /metrics, authenticated with Kueue's own ServiceAccount token (it
// is bound to upstream's metrics-reader role).
func (k *labKueue) Metrics() *provider.MetricsTarget {
	g := k.c.state.Gang
	if g == nil {
		return nil
	}
	cfg, err := clientcmd.LoadFromFile(g.KueueKubeconfig)
	if err != nil {
		return nil
	}
	token := ""
	for _, a := range cfg.AuthInfos {
		token = a.Token
	}
	return &provider.MetricsTarget{Component: "kueue", URL: g.KueueMetricsURL, Insecure: true, BearerToken: token}
}
