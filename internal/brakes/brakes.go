// Package brakes is the seam for the brakes a warm-pool cell can apply. A brake type is one file
// in this package: it registers itself (init) with its name, the config key its value comes from,
// the controller flags the value becomes, and, where it has them, an applicability check against
// the controller version's own source, work it does on the cluster for a cell, an evidence check
// ("did it bind in this cell"), chart marks and gate metrics. Planner, cell runner, assembly,
// reports and gates only loop over the registry; none of them names a brake.
//
// A cell's brakes are a combination chosen in config: matrix.brakes items are "none", a brake
// name, names joined with "+" ("replenish-delay+max-refill-rate"), or an alias for a combination
// ("both"); a tunable brake may carry its value inline ("max-refill-rate=20",
// "replenish-delay=5s+max-refill-rate=40"), so one plan can hold several settings of one brake.
package brakes

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/brakebench/brakebench/internal/catalog"
	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/results"
)

// Brake is one brake type.
type Brake interface {
	// Name is how matrix.brakes, cell names and results.json name it.
	Name() string
	// Setting is the brake's value from the config's brakes section (as the controller gets it)
	// and the key it came from; err says what the key must hold for the brake to engage. A brake
	// with settings (Owner) decodes its own keys from the section.
	Setting(s config.Section) (value, key string, err error)
	// Flags are the controller flags that set value ("--name=value"); none for a brake that
	// works through cluster objects.
	Flags(value string) []string
}

// Owner is a brake with settings of its own: Settings is the struct its keys decode into
// (mapstructure tags naming keys under brakes.), declared to the config loader when the brake
// registers; its defaults are configs/brakes/<name>.yaml.
type Owner interface {
	Settings() any
}

// Applicability is a brake that needs more of a controller version than its flags (which are
// checked against the version's own source for every brake).
type Applicability interface {
	// NotApplicable says why the controller at version (its module source in dir) cannot have
	// the brake, or "" when it can.
	NotApplicable(dir, version string) string
}

// Applier is a brake that acts on the cluster for a cell (after the pool is full, before the
// burst); it registers each revert on c.Reverts before it acts.
type Applier interface {
	Apply(ctx context.Context, c *Cell, value string) error
}

// Evidencer is a brake that can tell from a cell's measurements whether it bound.
type Evidencer interface {
	// Evidence reports whether the brake visibly shaped the cell, and what was seen; ok false
	// when the cell holds nothing to judge by (the text says why).
	Evidence(c *results.Cell, value string) (engaged bool, text string, ok bool)
}

// Marker is a brake drawn on the refill chart.
type Marker interface {
	Marks(value string) []Mark
}

// Mark is a line on the refill chart: a rate (Y) or a time after the burst (X).
type Mark struct {
	Axis  string // "x" (seconds after T0) or "y" (creates/s)
	Value float64
	Label string
}

// Operand is a brake whose setting a gate can name (brake.KEY).
type Operand interface {
	// OperandKey is KEY in brake.KEY and the unit of its value ("ms" for a duration, "" else).
	OperandKey() (key, unit string)
	// OperandValue is the setting as a number in that unit (NaN when unreadable).
	OperandValue(value string) float64
}

// Metricer is a brake with gate metrics of its own (summary rows, per repetition), registered
// in the metric catalogue.
type Metricer interface {
	Metrics() []catalog.Metric
}

// Cell is what an Applier gets from the cell runner. It holds no cluster client: a brake says
// what to install and the cell runner installs it (this package stays free of client-go, so the
// pure layers that read brakes' evidence and metrics do too).
type Cell struct {
	// Version is the controller version of the cell (resolved: never "") and Source its module.
	Version string
	Source  func(ctx context.Context, version string) (string, error)
	// Install creates a manifest's objects (YAML, one or more documents) for the cell, labelled
	// as brakebench's: each is journaled and its deletion registered on the cell's reverts before
	// it is created, and an object of the same name that brakebench did not create fails the
	// cell untouched. It returns how many objects it installed; what names them in the journal.
	Install func(ctx context.Context, what string, manifest []byte) (int, error)
	// Log adds to the cell's timeline (what, event, detail).
	Log func(what, event, detail string)
	// Namespace is the cell's namespace and PodSpec the pool's pod spec as placed (brakes shaped
	// like the pool's pods, PodShaped).
	Namespace string
	PodSpec   map[string]any
}

// PodShaped is a brake that works with the pool's pod spec (headroom shaped like its pods)
// rather than controller flags; a suite whose pool can need new nodes accepts it.
type PodShaped interface {
	PodShaped()
}

// FlagsOrPodShaped keeps the brakes that are only controller flags, and pod-shaped ones.
func FlagsOrPodShaped(b Brake) bool {
	_, shaped := b.(PodShaped)
	return FlagsOnly(b) || shaped
}

// registry holds every brake type; it is filled by init functions and read-only afterwards.
var registry = map[string]Brake{}

// aliases name combinations.
var aliases = map[string][]string{"both": {"replenish-delay", "max-refill-rate"}}

func register(b Brake) {
	if _, dup := registry[b.Name()]; dup {
		panic("brakes: " + b.Name() + " registered twice")
	}
	registry[b.Name()] = b
	if o, ok := b.(Owner); ok {
		config.Own("brakes", b.Name(), o.Settings())
	}
	if m, ok := b.(Metricer); ok {
		catalog.Default.AddBrakeMetrics(b.Name(), m.Metrics())
	}
}

// Get is the brake type called name.
func Get(name string) (Brake, bool) {
	b, ok := registry[name]
	return b, ok
}

// Names are the registered brake types, sorted.
func Names() []string {
	var out []string
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Items are what matrix.brakes accepts besides combinations: none, every brake and every alias.
func Items(keep func(Brake) bool) []string {
	out := []string{"none"}
	for _, n := range Names() {
		if keep == nil || keep(registry[n]) {
			out = append(out, n)
		}
	}
	var as []string
	for a, parts := range aliases {
		ok := true
		for _, p := range parts {
			ok = ok && (keep == nil || keep(registry[p]))
		}
		if ok {
			as = append(as, a)
		}
	}
	sort.Strings(as)
	return append(out, as...)
}

// FlagsOnly keeps the brakes that are only controller flags (no cluster objects of their own).
func FlagsOnly(b Brake) bool {
	_, applies := b.(Applier)
	return !applies
}

// Part is one brake of a combination with its value.
type Part struct {
	Brake Brake
	Value string
}

// Combination is a matrix.brakes item resolved against the config.
type Combination struct {
	Item  string // as written in matrix.brakes
	Parts []Part // sorted by brake name; none: empty
}

// Resolve parses a matrix.brakes item ("none", a name, an alias, or names joined with "+"),
// checks every part against keep (nil: every brake) and reads its value from cfg. A tunable
// brake's part may carry its value inline, "max-refill-rate=20" ("replenish-delay=5s+max-refill-rate=40"):
// the value replaces the brake's key for this item only, so one matrix holds several settings of
// one brake, and the brake's own Setting checks it. The item as written is the cell's name. The
// error is a config.Error naming the key (matrix.brakes for a refused inline value).
func Resolve(cfg *config.Resolved, item string, keep func(Brake) bool) (Combination, error) {
	cb := Combination{Item: item}
	if item == "none" {
		return cb, nil
	}
	names := aliases[item]
	if names == nil {
		names = strings.Split(item, "+")
	}
	seen := map[string]bool{}
	for _, part := range names {
		n, inline, hasValue := strings.Cut(part, "=")
		b, ok := registry[n]
		if !ok || (keep != nil && !keep(b)) {
			return cb, &config.Error{Source: cfg.Source("matrix.brakes"), Key: "matrix.brakes",
				Msg: fmt.Sprintf("expected items from %s, or brakes joined with + (e.g. replenish-delay+max-refill-rate), each tunable one optionally with its value (max-refill-rate=20); got %q", strings.Join(Items(keep), ", "), item)}
		}
		if seen[n] {
			return cb, &config.Error{Source: cfg.Source("matrix.brakes"), Key: "matrix.brakes", Msg: fmt.Sprintf("%q names %s twice", item, n)}
		}
		seen[n] = true
		section := cfg.Brakes
		if hasValue {
			var err error
			if section, err = WithValue(b, cfg.Brakes, inline); err != nil {
				return cb, &config.Error{Source: cfg.Source("matrix.brakes"), Key: "matrix.brakes", Msg: fmt.Sprintf("%q: %v", item, err)}
			}
		}
		v, key, err := b.Setting(section)
		if err != nil {
			if hasValue && key == b.(Tunable).Space().Key {
				// The value written inline is what the brake refused: name the item, not the key.
				return cb, &config.Error{Source: cfg.Source("matrix.brakes"), Key: "matrix.brakes", Msg: fmt.Sprintf("%q: %s=%s: %v", item, n, inline, err)}
			}
			return cb, &config.Error{Source: cfg.Source(key), Key: key, Msg: fmt.Sprintf("%v because matrix.brakes has %q", err, item)}
		}
		cb.Parts = append(cb.Parts, Part{b, v})
	}
	sort.Slice(cb.Parts, func(i, j int) bool { return cb.Parts[i].Brake.Name() < cb.Parts[j].Brake.Name() })
	return cb, nil
}

// Flags are the controller flags of every part.
func (cb Combination) Flags() []string {
	var out []string
	for _, p := range cb.Parts {
		out = append(out, p.Brake.Flags(p.Value)...)
	}
	return out
}

// Result is the combination as results.json records it.
func (cb Combination) Result() results.Brake {
	var r results.Brake
	for _, p := range cb.Parts {
		if r.Settings == nil {
			r.Settings = map[string]string{}
		}
		r.Settings[p.Brake.Name()] = p.Value
	}
	return r
}

// NotApplicable says why the controller at version cannot run the combination ("" = it can):
// every flag must be one the version defines (supports reads its source), and a brake with
// more needs checks the version's module in dir.
func (cb Combination) NotApplicable(version string, supports func(version, flag string) (bool, error), dir func(version string) (string, error)) (string, error) {
	name := version
	if name == "" {
		name = "(pinned version)"
	}
	for _, p := range cb.Parts {
		if supports != nil {
			for _, f := range p.Brake.Flags(p.Value) {
				flag := strings.TrimPrefix(strings.SplitN(f, "=", 2)[0], "--")
				ok, err := supports(version, flag)
				if err != nil {
					return "", err
				}
				if !ok {
					return fmt.Sprintf("agent-sandbox %s has no --%s", name, flag), nil
				}
			}
		}
		if a, ok := p.Brake.(Applicability); ok && dir != nil {
			d, err := dir(version)
			if err != nil {
				return "", err
			}
			if why := a.NotApplicable(d, name); why != "" {
				return why, nil
			}
		}
	}
	return "", nil
}

// Apply runs every part's cluster work for a cell.
func (cb Combination) Apply(ctx context.Context, c *Cell) error {
	for _, p := range cb.Parts {
		if a, ok := p.Brake.(Applier); ok {
			if err := a.Apply(ctx, c, p.Value); err != nil {
				return fmt.Errorf("%s: %w", p.Brake.Name(), err)
			}
		}
	}
	return nil
}

// each calls f for every brake a recorded cell carries (sorted; unknown names skipped: a
// results.json from a newer brakebench).
func each(b results.Brake, f func(Brake, string)) {
	b = b.Normalized()
	var names []string
	for n := range b.Settings {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if br, ok := registry[n]; ok {
			f(br, b.Settings[n])
		}
	}
}

// Evidence judges a recorded cell by every brake it carries that can be judged: engaged only
// when each of them bound. nil when none can be judged.
func Evidence(c *results.Cell) (engaged *bool, text string) {
	var ev []string
	ok, judged := true, false
	each(c.Brake, func(b Brake, v string) {
		e, isE := b.(Evidencer)
		if !isE {
			return
		}
		bound, t, can := e.Evidence(c, v)
		ev = append(ev, b.Name()+": "+t)
		if can {
			judged = true
			ok = ok && bound
		}
	})
	if !judged {
		return nil, strings.Join(ev, "; ")
	}
	return &ok, strings.Join(ev, "; ")
}

// Marks are the chart marks of a recorded cell's brakes.
func Marks(b results.Brake) []Mark {
	var out []Mark
	each(b, func(br Brake, v string) {
		if m, ok := br.(Marker); ok {
			out = append(out, m.Marks(v)...)
		}
	})
	return out
}

// FromResult is the combination a recorded (or planned) cell carries.
func FromResult(b results.Brake) Combination {
	var cb Combination
	each(b, func(br Brake, v string) { cb.Parts = append(cb.Parts, Part{br, v}) })
	return cb
}

// Operands are the brake.KEY operands gates know (key -> unit).
func Operands() map[string]string {
	out := map[string]string{}
	for _, b := range registry {
		if o, ok := b.(Operand); ok {
			k, u := o.OperandKey()
			out[k] = u
		}
	}
	return out
}

// OperandValues are the brake.KEY values of a run: each brake's setting as its cells had it. A
// brake whose cells had more than one setting (inline values in matrix.brakes) has no single
// value and is left out: a gate naming it is told it has none in this run.
func OperandValues(cells []results.Cell) map[string]float64 {
	out := map[string]float64{}
	several := map[string]bool{}
	for _, c := range cells {
		each(c.Brake, func(b Brake, v string) {
			if o, ok := b.(Operand); ok {
				k, _ := o.OperandKey()
				if f := o.OperandValue(v); !math.IsNaN(f) {
					if old, seen := out[k]; seen && old != f {
						several[k] = true
					}
					out[k] = f
				}
			}
		})
	}
	for k := range several {
		delete(out, k)
	}
	return out
}

// perClaim is one write-accounting figure of a cell ("-" when it has none).
func perClaim(c *results.Cell, key string) string {
	if c.Stats.Writes == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", c.Stats.Writes.PerClaim[key])
}

// setting decodes a brake's settings struct T from the brakes section and lets check validate
// it and format the brake's value; errors name key.
func setting[T any](s config.Section, key string, check func(st T) (string, error)) (string, string, error) {
	var st T
	if err := s.Decode(&st); err != nil {
		return "", key, err
	}
	v, err := check(st)
	return v, key, err
}
