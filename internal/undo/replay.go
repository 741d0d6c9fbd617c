package undo

import (
	"context"
	"fmt"

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

// registry holds replayers; the package's one is filled by the init functions of the packages
// that make changes.
type registry struct{ replayers []Replayer }

func (g *registry) register(r Replayer) {
	for _, o := range g.replayers {
		if o.Op == r.Op && o.Kind == r.Kind {
			panic(fmt.Sprintf("undo: replayer for %s %s registered twice", r.Op, r.Kind))
		}
	}
	g.replayers = append(g.replayers, r)
}

// lookup prefers the replayer of e's Op and Kind over the one of its Op and any kind.
func (g *registry) lookup(e Entry) (Replayer, bool) {
	for _, r := range g.replayers {
		if r.Op == e.Op && r.Kind == e.Kind {
			return r, true
		}
	}
	for _, r := range g.replayers {
		if r.Op == e.Op && r.Kind == "" {
			return r, true
		}
	}
	return Replayer{}, false
}

var replayers registry

// RegisterReplayer adds a replayer (from init functions only).
func RegisterReplayer(r Replayer) { replayers.register(r) }

// ReplayerFor is the replayer of a pending journal entry.
func ReplayerFor(e Entry) (Replayer, bool) { return replayers.lookup(e) }
