package brakes

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/brakebench/brakebench/internal/config"
)

// Kind is what a tunable brake's setting holds.
type Kind string

// The kinds of a tunable setting.
const (
	KindFloat    Kind = "float"    // a number (a rate)
	KindInt      Kind = "int"      // a whole number (a count)
	KindDuration Kind = "duration" // a duration; Lo and Hi are in seconds
	KindBool     Kind = "bool"     // a switch: the brake is on or off, it has no value
)

// Dimension is what `brakebench tune` may search of a brake: the config key its value goes to,
// the kind of the value and the range searched unless tune.ranges says otherwise.
type Dimension struct {
	// Key is the brakes.* config key the value sets (the one Setting reads); "" for a switch.
	Key  string `json:"key,omitempty"`
	Kind Kind   `json:"kind"`
	// Lo and Hi bound the default search range (seconds for a duration; unused for a switch).
	Lo float64 `json:"lo,omitempty"`
	Hi float64 `json:"hi,omitempty"`
	// Log samples the range on the log scale (rates, delays, counts spanning decades).
	Log bool `json:"log,omitempty"`
	// Default is what the controller does without the brake's flag, in words ("no limit",
	// "300", "off"): where "keep the defaults" leaves it.
	Default string `json:"default"`
}

// Tunable is a brake whose setting `brakebench tune` can search. One method in the brake's own
// file: a brake with a number, a duration or no value at all (a switch, searched as on/off).
type Tunable interface {
	Space() Dimension
}

// valueRe is what an inline value may hold: it becomes part of a cell name, whose separators
// ('+' brakes, '_' copies, '@' version, '/' fault, '#' repetition, ',' list items) it must not
// contain.
var valueRe = regexp.MustCompile(`^[0-9A-Za-z.]+$`)

// WithValue is the brakes section s with brake b's tunable key set to value (as text, the way
// matrix.brakes writes it inline: "20", "5s"); the brake's own Setting then checks it. It
// refuses a value of the wrong kind, a brake that is not tunable, and a switch (no value).
func WithValue(b Brake, s config.Section, value string) (config.Section, error) {
	t, ok := b.(Tunable)
	if !ok {
		return nil, fmt.Errorf("%s takes no inline value (it is not tunable); write %s alone", b.Name(), b.Name())
	}
	d := t.Space()
	if d.Kind == KindBool || d.Key == "" {
		return nil, fmt.Errorf("%s is a switch and takes no value; write %s alone to turn it on", b.Name(), b.Name())
	}
	if !valueRe.MatchString(value) {
		return nil, fmt.Errorf("expected a value of letters, digits and '.' after %s=, got %q", b.Name(), value)
	}
	if err := checkKind(d.Kind, value); err != nil {
		return nil, fmt.Errorf("%s=%s: %w", b.Name(), value, err)
	}
	key, ok := strings.CutPrefix(strings.ToLower(d.Key), "brakes.")
	if !ok || strings.Contains(key, ".") {
		return nil, fmt.Errorf("%s: tunable key %s is not a key directly under brakes", b.Name(), d.Key)
	}
	out := make(config.Section, len(s)+1)
	for k, v := range s {
		out[k] = v
	}
	out[key] = value
	return out, nil
}

// checkKind says whether value can be a setting of kind k.
func checkKind(k Kind, value string) error {
	switch k {
	case KindFloat:
		if _, err := strconv.ParseFloat(value, 64); err != nil {
			return fmt.Errorf("expected a number")
		}
	case KindInt:
		if _, err := strconv.Atoi(value); err != nil {
			return fmt.Errorf("expected a whole number")
		}
	case KindDuration:
		if _, err := time.ParseDuration(value); err != nil {
			return fmt.Errorf("expected a duration like 5s or 250ms")
		}
	}
	return nil
}

// Tunables are the registered brakes that tune can search, sorted by name.
func Tunables() []string {
	var out []string
	for _, n := range Names() {
		if _, ok := registry[n].(Tunable); ok {
			out = append(out, n)
		}
	}
	return out
}
