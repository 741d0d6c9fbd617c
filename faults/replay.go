package faults

import (
	"context"
	"fmt"
	"strings"

	"github.com/brakebench/brakebench/internal/kube"
)

// Replayer restores one kind of journaled change after a crash (`brakebench cleanup`): whatever
// journals a change registers, next to the code that makes it, how to undo it from the journal
// alone. cleanup loops over the journal and this registry, never over a list of kinds.
type Replayer struct {
	Op, Kind string // the journal entries it handles (Kind "" matches any kind of Op)
	// Early replayers run before labelled objects are deleted (Kueue's webhooks refuse every
	// pod and queue update while the process behind them is gone).
	Early bool
	// What names the restoration in cleanup's report.
	What func(e Entry, run string) string
	// Replay restores e.Original.
	Replay func(ctx context.Context, env ReplayEnv, e Entry) error
}

// ReplayEnv is the cluster a replay runs against.
type ReplayEnv struct {
	Clients *kube.Clients
	Cluster any // the provider's cluster (restarters, controller and add-on restorers)
}

var replayers []Replayer

// RegisterReplayer adds a replayer (from init functions only).
func RegisterReplayer(r Replayer) {
	for _, o := range replayers {
		if o.Op == r.Op && o.Kind == r.Kind {
			panic(fmt.Sprintf("faults: replayer for %s %s registered twice", r.Op, r.Kind))
		}
	}
	replayers = append(replayers, r)
}

// ReplayerFor is the replayer of a pending journal entry.
func ReplayerFor(e Entry) (Replayer, bool) {
	for _, r := range replayers {
		if r.Op == e.Op && r.Kind == e.Kind {
			return r, true
		}
	}
	for _, r := range replayers {
		if r.Op == e.Op && r.Kind == "" {
			return r, true
		}
	}
	return Replayer{}, false
}

func init() {
	RegisterReplayer(Replayer{Op: OpChanged, Kind: "Node",
		What: func(e Entry, run string) string { return fmt.Sprintf("restore node %s (run %s)", e.Name, run) },
		Replay: func(ctx context.Context, env ReplayEnv, e Entry) error {
			return RestoreNodeFromJournal(ctx, env.Clients.Typed, e)
		}})
	RegisterReplayer(Replayer{Op: OpChanged, Kind: "LabComponent",
		What: func(e Entry, run string) string {
			return fmt.Sprintf("restore %s %s (run %s)", strings.ToLower(e.Kind), e.Name, run)
		},
		Replay: func(ctx context.Context, env ReplayEnv, e Entry) error {
			return RestoreComponentFromJournal(ctx, env.Cluster, e)
		}})
}
