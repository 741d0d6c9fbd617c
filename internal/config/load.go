package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"

	"github.com/brakebench/brakebench/configs"
)

// EnvPrefix is the prefix of environment overrides: lab.nodes.count <- BRAKEBENCH_LAB_NODES_COUNT.
const EnvPrefix = "BRAKEBENCH"

// Error is a configuration error; the CLI maps it to exit code 2.
type Error struct {
	Source string // "file:line", "env NAME", "--set", the flag ("--out"), "default"
	Key    string
	Msg    string
}

func (e *Error) Error() string {
	switch {
	case e.Source != "" && e.Key != "":
		return fmt.Sprintf("%s: key %q: %s", e.Source, e.Key, e.Msg)
	case e.Source != "":
		return fmt.Sprintf("%s: %s", e.Source, e.Msg)
	case e.Key != "":
		return fmt.Sprintf("key %q: %s", e.Key, e.Msg)
	}
	return e.Msg
}

// IsConfigError reports whether err is (or wraps) a configuration error.
func IsConfigError(err error) bool {
	var ce *Error
	return errors.As(err, &ce)
}

// Loader collects the layers of one command's configuration.
type Loader struct {
	Suite string            // when set, configs/suites/<Suite>.yaml is the second layer
	Files []string          // -f, in order
	Env   []string          // os.Environ(); nil means none
	Sets  []string          // --set key=value, in order
	Flags map[string]string // explicit CLI flags, by config key (applied last)
	// FlagNames names the flag of each key in Flags ("cluster.provider": "--cluster") for error
	// messages; a key without one is labelled "flag".
	FlagNames map[string]string
}

// Resolved is a loaded configuration with the layer each key last came from.
type Resolved struct {
	Config
	// Suite is the suite whose defaults were layered in ("" when none).
	Suite   string
	Sources map[string]string
	// layer ranks each key's source as Sources names it: 1 suite file, 2 -f file, 3 env,
	// 4 --set, 5 flag (absent: the built-in default).
	layer map[string]int
}

// Source names where key's value came from: "file:line", "env NAME", "--set", the flag, or
// "default" when nobody set it.
func (r *Resolved) Source(key string) string {
	if s, ok := r.Sources[strings.ToLower(key)]; ok {
		return s
	}
	return "default"
}

type leaf struct {
	key string // canonical (camelCase) dotted key
	typ reflect.Type
}

// schema maps lower-cased dotted keys to leaves, derived from the Config struct's tags and the
// keys owners declared (Own) for its Section fields.
func schema() map[string]leaf {
	out := map[string]leaf{}
	walkStruct("", reflect.TypeOf(Config{}), out)
	for k, l := range out {
		if l.typ == reflect.TypeOf(Section{}) {
			delete(out, k) // an owned section: its owners declare its keys
		}
	}
	ownedLeaves(out)
	return out
}

// lookup finds the leaf for a lower-cased key.
func lookup(s map[string]leaf, key string) (leaf, bool) {
	l, ok := s[key]
	return l, ok
}

func unknownKey(source, key string, s map[string]leaf) error {
	// Suggest the keys of the same section.
	section := key
	if i := strings.LastIndex(key, "."); i >= 0 {
		section = key[:i]
	} else {
		section = ""
	}
	var near []string
	seen := map[string]bool{}
	for k, l := range s {
		switch {
		case section == "": // a top-level key: name the sections
			top, _, _ := strings.Cut(l.key, ".")
			if !seen[top] {
				seen[top] = true
				near = append(near, top)
			}
		case strings.HasPrefix(k, section+"."):
			// A nested section is named once (workload.ceiling), not key by key.
			name := l.key
			if i := strings.Index(name[len(section)+1:], "."); i >= 0 {
				name = name[:len(section)+1+i]
			}
			if !seen[name] {
				seen[name] = true
				near = append(near, name)
			}
		}
	}
	sort.Strings(near)
	if len(near) > 12 {
		near = near[:12]
	}
	return &Error{Source: source, Key: key, Msg: "unknown key (known keys here: " + strings.Join(near, ", ") + ")"}
}

// Load resolves all layers, checks every key and value, and validates the result.
func (l Loader) Load() (*Resolved, error) {
	s := schema()
	v := viper.New()
	sources := map[string]string{}

	// 1. defaults
	def := map[string]any{}
	flatten("", Default(), def)
	for k, val := range def {
		v.SetDefault(k, val)
	}
	// ... and the owners' defaults (configs/brakes/*.yaml)
	od, err := ownedDefaults()
	if err != nil {
		return nil, err
	}
	for k, val := range od {
		v.SetDefault(k, val)
	}
	// 2. suite defaults, 3. user files
	var files []struct {
		name string
		raw  []byte
	}
	if l.Suite != "" {
		raw, err := configs.FS.ReadFile("suites/" + l.Suite + ".yaml")
		if err != nil {
			return nil, &Error{Msg: fmt.Sprintf("no suite named %q (the suite is the command's argument, e.g. `brakebench run SUITE`; known: %s)", l.Suite, strings.Join(KnownSuites(), ", "))}
		}
		files = append(files, struct {
			name string
			raw  []byte
		}{"configs/suites/" + l.Suite + ".yaml", raw})
	}
	for _, f := range l.Files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, &Error{Source: f, Msg: "cannot read config file: " + errors.Unwrap(err).Error()}
		}
		files = append(files, struct {
			name string
			raw  []byte
		}{f, raw})
	}
	layer := map[string]int{}
	for i, f := range files {
		fl, err := parseFile(f.name, f.raw, s)
		if err != nil {
			return nil, err
		}
		rank := 2
		if l.Suite != "" && i == 0 {
			rank = 1
		}
		for k, src := range fl.sources {
			sources[k], layer[k] = src, rank
		}
		if err := v.MergeConfigMap(fl.values); err != nil {
			return nil, &Error{Source: f.name, Msg: err.Error()}
		}
	}
	// 4. environment
	envKeys := map[string]string{}
	for k := range s {
		envKeys[EnvPrefix+"_"+strings.ToUpper(strings.ReplaceAll(k, ".", "_"))] = k
	}
	envs := append([]string(nil), l.Env...)
	sort.Strings(envs)
	for _, kv := range envs {
		name, val, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix+"_") {
			continue
		}
		k, ok := envKeys[name]
		if !ok {
			return nil, &Error{Source: "env " + name, Msg: "unknown setting (environment overrides are BRAKEBENCH_<KEY>, e.g. BRAKEBENCH_LAB_NODES_COUNT)"}
		}
		if err := l.setString(v, s[k], val, "env "+name, sources, layer, 3); err != nil {
			return nil, err
		}
	}
	// 5. --set, then explicit flags
	for _, kv := range l.Sets {
		key, val, ok := strings.Cut(kv, "=")
		if !ok || key == "" {
			return nil, &Error{Source: "--set", Msg: fmt.Sprintf("%q is not key=value", kv)}
		}
		lf, ok := lookup(s, strings.ToLower(key))
		if !ok {
			return nil, unknownKey("--set", key, s)
		}
		if err := l.setString(v, lf, val, "--set", sources, layer, 4); err != nil {
			return nil, err
		}
	}
	flagKeys := make([]string, 0, len(l.Flags))
	for k := range l.Flags {
		flagKeys = append(flagKeys, k)
	}
	sort.Strings(flagKeys)
	for _, k := range flagKeys {
		src := "flag"
		if n := l.FlagNames[k]; n != "" {
			src = n
		}
		lf, ok := lookup(s, strings.ToLower(k))
		if !ok {
			return nil, unknownKey(src, k, s)
		}
		if err := l.setString(v, lf, l.Flags[k], src, sources, layer, 5); err != nil {
			return nil, err
		}
	}

	var cfg Config
	err = v.Unmarshal(&cfg, func(dc *mapstructure.DecoderConfig) {
		dc.ErrorUnused = true
		dc.WeaklyTypedInput = true
		dc.DecodeHook = mapstructure.ComposeDecodeHookFunc(
			mapstructure.StringToTimeDurationHookFunc(),
			mapstructure.StringToSliceHookFunc(","),
		)
	})
	if err != nil {
		return nil, &Error{Msg: "cannot decode configuration: " + err.Error()}
	}
	r := &Resolved{Config: cfg, Sources: sources, Suite: l.Suite, layer: layer}
	if err := r.validate(); err != nil {
		return nil, err
	}
	return r, nil
}

func (l Loader) setString(v *viper.Viper, lf leaf, val, source string, sources map[string]string, layer map[string]int, rank int) error {
	if err := checkValue(lf.typ, val); err != nil {
		return &Error{Source: source, Key: lf.key, Msg: err.Error()}
	}
	lk := strings.ToLower(lf.key)
	switch lf.typ.Kind() {
	case reflect.Slice:
		parts := []string{}
		for _, p := range strings.Split(val, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		v.Set(lk, parts)
	default:
		v.Set(lk, val)
	}
	sources[lk], layer[lk] = source, rank
	return nil
}

// checkValue says whether val can become a value of type t, in words a user understands.
func checkValue(t reflect.Type, val any) error {
	if t == reflect.TypeOf(time.Duration(0)) {
		s, ok := val.(string)
		if !ok {
			if n, isInt := val.(int); isInt && n == 0 {
				return nil
			}
			return fmt.Errorf("expected a duration like 30s or 1m30s, got %s", describe(val))
		}
		if _, err := time.ParseDuration(s); err != nil {
			return fmt.Errorf("expected a duration like 30s or 1m30s, got %q", s)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		switch x := val.(type) {
		case int, int64, int32:
			return nil
		case float64:
			if x == float64(int64(x)) {
				return nil
			}
		case string:
			if _, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
				return nil
			}
		}
		return fmt.Errorf("expected a whole number, got %s", describe(val))
	case reflect.Float64:
		switch x := val.(type) {
		case int, int64, int32:
			return nil
		case float64:
			return finite(x)
		case string:
			if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
				return finite(f)
			}
		}
		return fmt.Errorf("expected a number, got %s", describe(val))
	case reflect.Bool:
		switch x := val.(type) {
		case bool:
			return nil
		case string:
			if _, err := strconv.ParseBool(x); err == nil {
				return nil
			}
		}
		return fmt.Errorf("expected true or false, got %s", describe(val))
	case reflect.String:
		switch val.(type) {
		case string, int, int64, float64:
			return nil
		case bool:
			return fmt.Errorf("expected a string, got %s (quote it to mean the word)", describe(val))
		}
		return fmt.Errorf("expected a string, got %s", describe(val))
	case reflect.Slice:
		var items []any
		switch x := val.(type) {
		case string:
			for _, p := range strings.Split(x, ",") {
				if p = strings.TrimSpace(p); p != "" {
					items = append(items, p)
				}
			}
		case []any:
			items = x
		case []string:
			for _, p := range x {
				items = append(items, p)
			}
		default:
			return fmt.Errorf("expected a list, got %s", describe(val))
		}
		for i, it := range items {
			if err := checkValue(t.Elem(), it); err != nil {
				return fmt.Errorf("item %d: %w", i, err)
			}
		}
		return nil
	}
	return nil
}

// describe writes a value as a user reads it in YAML or JSON: strings quoted, lists [a, b],
// mappings {k: v} (never Go's type names or [a b] slice syntax).
func describe(v any) string {
	return describeValue(reflect.ValueOf(v), true)
}

func describeValue(rv reflect.Value, top bool) string {
	if !rv.IsValid() {
		return "an empty value"
	}
	if d, ok := rv.Interface().(time.Duration); ok {
		return d.String()
	}
	switch rv.Kind() {
	case reflect.Interface, reflect.Pointer:
		if rv.IsNil() {
			return "an empty value"
		}
		return describeValue(rv.Elem(), top)
	case reflect.String:
		return strconv.Quote(rv.String())
	case reflect.Slice, reflect.Array:
		items := make([]string, rv.Len())
		for i := range items {
			items[i] = describeValue(rv.Index(i), false)
		}
		s := "[" + strings.Join(items, ", ") + "]"
		if top {
			s = "the list " + s
		}
		return s
	case reflect.Map:
		keys := rv.MapKeys()
		items := make([]string, 0, len(keys))
		for _, k := range keys {
			items = append(items, fmt.Sprint(k.Interface())+": "+describeValue(rv.MapIndex(k), false))
		}
		sort.Strings(items)
		s := "{" + strings.Join(items, ", ") + "}"
		if top {
			s = "the mapping " + s
		}
		return s
	}
	return fmt.Sprint(rv.Interface())
}

// KnownSuites are the suites with a default file (configs/suites/<name>.yaml), sorted.
func KnownSuites() []string {
	entries, _ := configs.FS.ReadDir("suites")
	var out []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// flatten turns a struct into dotted keys (lower-cased, as viper keys are).
func flatten(prefix string, val any, out map[string]any) {
	rv := reflect.ValueOf(val)
	rt := rv.Type()
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		tag := f.Tag.Get("mapstructure")
		if tag == "" || tag == "-" {
			continue
		}
		key := strings.ToLower(tag)
		if prefix != "" {
			key = prefix + "." + key
		}
		fv := rv.Field(i)
		if sec, ok := fv.Interface().(Section); ok {
			flattenMap(key, sec, out)
			continue
		}
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(time.Duration(0)) {
			flatten(key, fv.Interface(), out)
			continue
		}
		if f.Type == reflect.TypeOf(time.Duration(0)) {
			out[key] = fv.Interface().(time.Duration).String()
			continue
		}
		out[key] = fv.Interface()
	}
}

// Settings returns the configuration as a nested map with canonical keys and durations as
// strings, for printing and for recording in results.
func (r *Resolved) Settings() map[string]any {
	flat := map[string]any{}
	flatten("", r.Config, flat)
	s := schema()
	out := map[string]any{}
	for k, v := range flat {
		v = typedValue(s[k].typ, v)
		key := s[k].key
		parts := strings.Split(key, ".")
		m := out
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = v
	}
	return out
}

// finite refuses NaN and the infinities (a float key holds a measurement or a setting).
func finite(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("expected a finite number, got %v", f)
	}
	return nil
}

// typedValue is an owned key's value as its type holds it (values from the environment and
// --set arrive as strings); anything it cannot parse stays as it is.
func typedValue(t reflect.Type, v any) any {
	str, ok := v.(string)
	if !ok || t == nil {
		return v
	}
	switch t.Kind() {
	case reflect.Float64:
		if f, err := strconv.ParseFloat(strings.TrimSpace(str), 64); err == nil {
			return f
		}
	case reflect.Int, reflect.Int64:
		if n, err := strconv.ParseInt(strings.TrimSpace(str), 10, 64); err == nil {
			return n
		}
	case reflect.Bool:
		if b, err := strconv.ParseBool(strings.TrimSpace(str)); err == nil {
			return b
		}
	}
	return v
}
