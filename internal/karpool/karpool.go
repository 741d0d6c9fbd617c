// Package karpool gives a suite or a fault a Karpenter NodePool for its run: the cluster's
// Karpenter started with the options asked (its original state journaled first, so `brakebench
// cleanup` can put it back after a crash, and its restore registered before anything changes),
// then the pool's KWOKNodeClass and NodePool.
package karpool

import (
	"context"
	"fmt"

	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/sut/karpenter"
	"github.com/brakebench/brakebench/internal/undo"
)

// JournalKind is the journal entries' kind (restored by the replayer registered in suites).
const JournalKind = "Karpenter"

// Start starts Karpenter on cluster (a provider.KarpenterCluster) with opts and creates pool,
// labelled. The restore (stop Karpenter, or restart it as it was, and remove brakebench's pools,
// NodeClaims and nodes) is on reverts whatever happens after the journal entry is written.
func Start(ctx context.Context, cluster any, c *kube.Clients, j *undo.Journal, reverts *undo.Stack, opts provider.KarpenterOptions,
	pool karpenter.PoolSpec, labels map[string]string) (*provider.Karpenter, error) {
	kc, ok := cluster.(provider.KarpenterCluster)
	if !ok {
		return nil, fmt.Errorf("this cluster cannot run Karpenter (only the lab can)")
	}
	k, restore, err := kc.Karpenter(ctx, opts, func(orig []byte) error {
		return j.Record(undo.Entry{Op: undo.OpChanged, Kind: JournalKind, Ref: "karpenter", Original: orig})
	})
	if restore != nil {
		reverts.Push("Karpenter and its NodePool", func(ctx context.Context) error {
			if err := restore(ctx); err != nil {
				return err
			}
			return j.Record(undo.Entry{Op: undo.OpReverted, Ref: "karpenter"})
		})
	}
	if err != nil {
		return nil, fmt.Errorf("start Karpenter: %w", err)
	}
	if err := karpenter.CreatePool(ctx, c, pool, labels); err != nil {
		return nil, err
	}
	return &k, nil
}
