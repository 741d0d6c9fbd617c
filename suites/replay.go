package suites

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/brakebench/brakebench/internal/karpool"
	"github.com/brakebench/brakebench/internal/provider"
	"github.com/brakebench/brakebench/internal/undo"
)

// The changes the suites journal themselves (the controller's version and flags, Kueue's and
// KEDA's state), and how `brakebench cleanup` restores each from the journal alone.
func init() {
	undo.RegisterReplayer(undo.Replayer{Op: undo.OpController,
		What: func(_ undo.Entry, run string) string {
			return fmt.Sprintf("restore agent-sandbox controller flags (run %s)", run)
		},
		Replay: func(ctx context.Context, env undo.ReplayEnv, e undo.Entry) error {
			cl, ok := env.Cluster.(provider.Cluster)
			if !ok {
				return fmt.Errorf("no cluster to restore the controller on")
			}
			var orig controllerOriginal
			if err := json.Unmarshal(e.Original, &orig); err != nil {
				return fmt.Errorf("journal entry for the controller: %w", err)
			}
			return cl.Controller().Restore(ctx, orig.Version, orig.Flags)
		}})
	undo.RegisterReplayer(undo.Replayer{Op: undo.OpChanged, Kind: "Kueue", Early: true,
		What: func(_ undo.Entry, run string) string {
			return fmt.Sprintf("restore Kueue / stop the lab's Kueue and LWS (run %s)", run)
		},
		Replay: func(ctx context.Context, env undo.ReplayEnv, e undo.Entry) error {
			kc, ok := env.Cluster.(provider.KueueCluster)
			if !ok {
				return fmt.Errorf("cluster provider %s cannot restore Kueue", providerName(env.Cluster))
			}
			return kc.RestoreKueue(ctx, e.Original)
		}})
	undo.RegisterReplayer(undo.Replayer{Op: undo.OpChanged, Kind: "KEDA",
		What: func(_ undo.Entry, run string) string {
			return fmt.Sprintf("restore KEDA / stop the lab's KEDA and its APIService, HPA sync period (run %s)", run)
		},
		Replay: func(ctx context.Context, env undo.ReplayEnv, e undo.Entry) error {
			kc, ok := env.Cluster.(provider.KEDACluster)
			if !ok {
				return fmt.Errorf("cluster provider %s cannot restore KEDA", providerName(env.Cluster))
			}
			return kc.RestoreKEDA(ctx, e.Original)
		}})
	undo.RegisterReplayer(undo.Replayer{Op: undo.OpChanged, Kind: karpool.JournalKind,
		What: func(_ undo.Entry, run string) string {
			return fmt.Sprintf("restore Karpenter / stop the lab's Karpenter, remove its NodePool, NodeClaims and nodes (run %s)", run)
		},
		Replay: func(ctx context.Context, env undo.ReplayEnv, e undo.Entry) error {
			kc, ok := env.Cluster.(provider.KarpenterCluster)
			if !ok {
				return fmt.Errorf("cluster provider %s cannot restore Karpenter", providerName(env.Cluster))
			}
			return kc.RestoreKarpenter(ctx, e.Original)
		}})
}

func providerName(c any) string {
	if cl, ok := c.(provider.Cluster); ok {
		return cl.Info().Provider
	}
	return "(none)"
}
