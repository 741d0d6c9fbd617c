package suites

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/brakebench/brakebench/faults"
	"github.com/brakebench/brakebench/internal/provider"
)

// The changes the suites journal themselves (the controller's version and flags, Kueue's and
// KEDA's state), and how `brakebench cleanup` restores each from the journal alone.
func init() {
	faults.RegisterReplayer(faults.Replayer{Op: faults.OpController,
		What: func(_ faults.Entry, run string) string {
			return fmt.Sprintf("restore agent-sandbox controller flags (run %s)", run)
		},
		Replay: func(ctx context.Context, env faults.ReplayEnv, e faults.Entry) error {
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
	faults.RegisterReplayer(faults.Replayer{Op: faults.OpChanged, Kind: "Kueue", Early: true,
		What: func(_ faults.Entry, run string) string {
			return fmt.Sprintf("restore Kueue / stop the lab's Kueue and LWS (run %s)", run)
		},
		Replay: func(ctx context.Context, env faults.ReplayEnv, e faults.Entry) error {
			kc, ok := env.Cluster.(provider.KueueCluster)
			if !ok {
				return fmt.Errorf("cluster provider %s cannot restore Kueue", providerName(env.Cluster))
			}
			return kc.RestoreKueue(ctx, e.Original)
		}})
	faults.RegisterReplayer(faults.Replayer{Op: faults.OpChanged, Kind: "KEDA",
		What: func(_ faults.Entry, run string) string {
			return fmt.Sprintf("restore KEDA / stop the lab's KEDA and its APIService, HPA sync period (run %s)", run)
		},
		Replay: func(ctx context.Context, env faults.ReplayEnv, e faults.Entry) error {
			kc, ok := env.Cluster.(provider.KEDACluster)
			if !ok {
				return fmt.Errorf("cluster provider %s cannot restore KEDA", providerName(env.Cluster))
			}
			return kc.RestoreKEDA(ctx, e.Original)
		}})
}

func providerName(c any) string {
	if cl, ok := c.(provider.Cluster); ok {
		return cl.Info().Provider
	}
	return "(none)"
}
