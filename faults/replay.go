package faults

import (
	"context"
	"fmt"
	"strings"

	"github.com/brakebench/brakebench/internal/undo"
)

// The changes the faults journal, and how `brakebench cleanup` restores each from the journal
// alone.
func init() {
	undo.RegisterReplayer(undo.Replayer{Op: undo.OpChanged, Kind: "Node",
		What: func(e undo.Entry, run string) string { return fmt.Sprintf("restore node %s (run %s)", e.Name, run) },
		Replay: func(ctx context.Context, env undo.ReplayEnv, e undo.Entry) error {
			return RestoreNodeFromJournal(ctx, env.Clients.Typed, e)
		}})
	undo.RegisterReplayer(undo.Replayer{Op: undo.OpChanged, Kind: "LabComponent",
		What: func(e undo.Entry, run string) string {
			return fmt.Sprintf("restore %s %s (run %s)", strings.ToLower(e.Kind), e.Name, run)
		},
		Replay: func(ctx context.Context, env undo.ReplayEnv, e undo.Entry) error {
			return RestoreComponentFromJournal(ctx, env.Cluster, e)
		}})
}
