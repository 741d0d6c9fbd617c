package kubeconfigprovider

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/sut/kueuelws"
)

// deploymentOriginal is the journaled manager container before brakebench changed its gates.
type deploymentOriginal struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Container string   `json:"container"`
	Args      []string `json:"args"`
}

// Kueue implements provider.KueueCluster: it uses the Kueue installed on the cluster (Deployment
// gangQuota.kueueNamespace/kueueDeployment); changing its gates needs cluster.allowContext.
func (c *Cluster) Kueue(ctx context.Context, journal func([]byte) error) (provider.Kueue, func(context.Context) error, error) {
	if c.kueue == nil {
		return nil, nil, fmt.Errorf("no Kueue Deployment configured")
	}
	container, args, image, err := c.kueue.Args(ctx)
	if err != nil {
		return nil, nil, err
	}
	raw, _ := json.Marshal(deploymentOriginal{Namespace: c.kueue.Namespace, Name: c.kueue.Name, Container: container, Args: args})
	if err := journal(raw); err != nil {
		return nil, nil, err
	}
	k := &deployedKueue{c: c, container: container, orig: args, args: args, image: image}
	return k, func(ctx context.Context) error { return c.RestoreKueue(ctx, raw) }, nil
}

// RestoreKueue implements provider.KueueCluster: the manager's args go back as journaled.
func (c *Cluster) RestoreKueue(ctx context.Context, original []byte) error {
	var orig deploymentOriginal
	if err := json.Unmarshal(original, &orig); err != nil {
		return err
	}
	if err := (&guarded{c: c}).allowed(); err != nil {
		return err
	}
	_, cur, _, err := c.kueue.Args(ctx)
	if err != nil {
		return err
	}
	if strings.Join(cur, "\x00") == strings.Join(orig.Args, "\x00") {
		return nil
	}
	return c.kueue.SetArgs(ctx, orig.Container, orig.Args)
}

type deployedKueue struct {
	c         *Cluster
	container string
	orig      []string
	args      []string
	image     string
}

func (k *deployedKueue) SetGates(ctx context.Context, gates []string) error {
	if err := (&guarded{c: k.c}).allowed(); err != nil {
		return err
	}
	next := kueuelws.MergeGates(k.orig, gates)
	if strings.Join(next, "\x00") == strings.Join(k.args, "\x00") {
		return nil
	}
	if err := k.c.kueue.SetArgs(ctx, k.container, next); err != nil {
		return err
	}
	k.args = next
	return nil
}

func (k *deployedKueue) Gates() []string { return kueuelws.GatesIn(k.args) }

// Metrics: Kueue's metrics Service is not reachable from outside the cluster here.
func (k *deployedKueue) Metrics() *provider.MetricsTarget { return nil }

func (k *deployedKueue) Version() string {
	if i := strings.LastIndex(k.image, ":"); i > strings.LastIndex(k.image, "/") {
		return k.image[i+1:]
	}
	return ""
}
