package faults

import (
	"slices"
	"time"

	"github.com/brakebench/brakebench/internal/config"
)

// Bounds of the fault settings, as the loader's own (generous: they catch a typo's extra zeros).
const (
	maxObjects  = 10000          // nodes, shares, queues
	maxLimit    = 100000         // control-plane QPS and in-flight limits
	maxDuration = 24 * time.Hour // every duration key
)

// check is one rule a fault type's settings must keep.
type check struct {
	bad  bool
	key  string // the whole key, faults.<...>
	want string // what the key must hold, as the user reads it
	got  any
	// also are the keys whose values decide whether the check applies at all.
	also []string
}

// checked is a fault type's settings struct: its keys' rules.
type checked interface {
	checks() []check
}

// settingsOf decodes a fault type's settings T from the configuration's faults section and checks
// them: an error is a config.Error naming the key, where its value came from (or the key that made
// the check apply) and what was expected.
func settingsOf[T checked](cfg *config.Resolved) (T, error) {
	var st T
	if err := cfg.Faults.Decode(&st); err != nil {
		return st, &config.Error{Key: "faults", Msg: "cannot decode the fault settings: " + err.Error()}
	}
	for _, c := range st.checks() {
		if c.bad {
			return st, cfg.Fail(c.key, c.also, "expected %s, got %v", c.want, c.got)
		}
	}
	return st, nil
}

// outside reports whether v lies outside [lo, hi].
func outside[T int | float64 | time.Duration](v, lo, hi T) bool { return v < lo || v > hi }

func oneOf(v string, allowed ...string) bool { return slices.Contains(allowed, v) }
