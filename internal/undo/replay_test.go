package undo

import "testing"

// A replayer of an entry's Op and Kind wins over its Op's catch-all (Kind ""); an Op nobody
// registered has none.
func TestRegistryLookup(t *testing.T) {
	var g registry
	g.register(Replayer{Op: OpChanged, Kind: "Node", What: func(Entry, string) string { return "node" }})
	g.register(Replayer{Op: OpChanged, What: func(Entry, string) string { return "any change" }})
	g.register(Replayer{Op: OpController, Early: true, What: func(Entry, string) string { return "controller" }})
	tests := []struct {
		name string
		e    Entry
		want string // "" when no replayer is found
	}{
		{"exact kind", Entry{Op: OpChanged, Kind: "Node"}, "node"},
		{"catch-all of the op", Entry{Op: OpChanged, Kind: "KEDA"}, "any change"},
		{"op without kinds", Entry{Op: OpController, Ref: "controller"}, "controller"},
		{"unregistered op", Entry{Op: OpCreated, Kind: "Node"}, ""},
	}
	for _, tc := range tests {
		r, ok := g.lookup(tc.e)
		got := ""
		if ok {
			got = r.What(tc.e, "run1")
		}
		if got != tc.want {
			t.Errorf("%s: replayer %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Registering the same Op and Kind twice is a programming error.
func TestRegistryDuplicatePanics(t *testing.T) {
	tests := []struct {
		name   string
		second Replayer
		panics bool
	}{
		{"same op and kind", Replayer{Op: OpChanged, Kind: "Node"}, true},
		{"same op, other kind", Replayer{Op: OpChanged, Kind: "Kueue"}, false},
		{"other op, same kind", Replayer{Op: OpController, Kind: "Node"}, false},
	}
	for _, tc := range tests {
		var g registry
		g.register(Replayer{Op: OpChanged, Kind: "Node"})
		func() {
			defer func() {
				if got := recover() != nil; got != tc.panics {
					t.Errorf("%s: panicked %v, want %v", tc.name, got, tc.panics)
				}
			}()
			g.register(tc.second)
		}()
	}
}
