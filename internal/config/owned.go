package config

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-viper/mapstructure/v2"

	"github.com/brakebench/brakebench/configs"
)

// Owned keys: a brake type or a fault type declares the keys it reads under its section
// ("brakes", "faults") as a struct with mapstructure tags, from its own file (init), and ships its
// defaults as configs/<section>/<owner>.yaml. Load checks their values, names where each came
// from, and accepts them from files, the environment and --set like any built-in key; the
// owner decodes its struct from the section once (Decode) and validates what it needs. Neither
// config.go nor validate.go names an owner's key.

type owner struct {
	section, name string
	typ           reflect.Type
}

type ownedRegistry struct {
	mu     sync.RWMutex
	owners []owner
}

// owned holds the declared keys; filled by init functions, read by Load.
var owned ownedRegistry

// Own declares the keys owner reads under section: settings is a struct (or a pointer to one)
// whose mapstructure tags name them. Two owners may not declare one key.
func Own(section, name string, settings any) {
	t := reflect.TypeOf(settings)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("config: %s %s: settings must be a struct, got %s", section, name, t))
	}
	owned.mu.Lock()
	defer owned.mu.Unlock()
	mine := map[string]leaf{}
	walkStruct(section, t, mine)
	for _, o := range owned.owners {
		if o.section != section {
			continue
		}
		theirs := map[string]leaf{}
		walkStruct(section, o.typ, theirs)
		for k := range mine {
			if _, dup := theirs[k]; dup {
				panic(fmt.Sprintf("config: key %s declared by %s and %s", k, o.name, name))
			}
		}
	}
	owned.owners = append(owned.owners, owner{section, name, t})
}

// ownedLeaves adds every declared key to s.
func ownedLeaves(s map[string]leaf) {
	owned.mu.RLock()
	defer owned.mu.RUnlock()
	for _, o := range owned.owners {
		walkStruct(o.section, o.typ, s)
	}
}

// ownedDefaults reads each owner's defaults, configs/<section>/<owner>.yaml (none: an owner with
// nothing to default), as lower-cased dotted keys. A file may set only its owner's keys; a file
// of no registered owner is not read.
func ownedDefaults() (map[string]any, error) {
	owned.mu.RLock()
	owners := append([]owner(nil), owned.owners...)
	owned.mu.RUnlock()
	sort.Slice(owners, func(i, j int) bool { return owners[i].name < owners[j].name })
	out := map[string]any{}
	for _, o := range owners {
		name := o.section + "/" + o.name + ".yaml"
		raw, err := configs.FS.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		mine := map[string]leaf{}
		walkStruct(o.section, o.typ, mine)
		fl, err := parseFile("configs/"+name, raw, mine)
		if err != nil {
			return nil, err
		}
		flattenMap("", fl.values, out)
	}
	return out, nil
}

func flattenMap(prefix string, m map[string]any, out map[string]any) {
	for k, v := range m {
		key := strings.ToLower(k)
		if prefix != "" {
			key = prefix + "." + key
		}
		if sub, ok := v.(map[string]any); ok {
			flattenMap(key, sub, out)
			continue
		}
		out[key] = v
	}
}

// walkStruct adds the leaves of struct type t under prefix to out.
func walkStruct(prefix string, t reflect.Type, out map[string]leaf) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("mapstructure")
		if tag == "" || tag == "-" {
			continue
		}
		key := tag
		if prefix != "" {
			key = prefix + "." + tag
		}
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(time.Duration(0)) {
			walkStruct(key, f.Type, out)
			continue
		}
		out[strings.ToLower(key)] = leaf{key: key, typ: f.Type}
	}
}

// Section is an owned section's values as Load resolved them (lower-cased keys, nested).
type Section map[string]any

// Decode fills settings (a pointer to the owner's struct) from the section: the values were
// checked against their types by Load, so an error here is a programming error or a value
// outside what the type can hold.
func (s Section) Decode(settings any) error {
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result: settings, WeaklyTypedInput: true,
		DecodeHook: mapstructure.ComposeDecodeHookFunc(mapstructure.StringToTimeDurationHookFunc(), mapstructure.StringToSliceHookFunc(",")),
	})
	if err != nil {
		return err
	}
	return dec.Decode(map[string]any(s))
}
