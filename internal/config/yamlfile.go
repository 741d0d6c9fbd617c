package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/brakebench/brakebench/internal/yamldoc"
)

// fileLayer is one configuration file read: its values as a nested map (viper's shape) and, per
// lower-cased dotted key, "file:line" of the key that set it.
type fileLayer struct {
	name    string
	schema  map[string]leaf
	values  map[string]any
	sources map[string]string
}

// parseFile reads one YAML configuration file: exactly one document (a later document is an
// error, never silently dropped), whose top level maps known keys to values of their types.
// Every error names the file and the 1-based line of the offending key.
func parseFile(name string, raw []byte, s map[string]leaf) (*fileLayer, error) {
	f := &fileLayer{name: name, schema: s, values: map[string]any{}, sources: map[string]string{}}
	node, err := yamldoc.One(raw)
	if err != nil {
		var de *yamldoc.Error
		if errors.As(err, &de) && de.Line > 0 {
			msg := de.Msg
			if strings.HasPrefix(msg, "a second YAML document") {
				msg += " (merge the keys into one, or give each document its own -f)"
			}
			return nil, &Error{Source: f.at(de.Line), Msg: msg}
		}
		return nil, &Error{Source: f.name, Msg: err.Error()}
	}
	if node == nil {
		return f, nil // empty, or only comments
	}
	root := resolve(node)
	if root.Kind != yaml.MappingNode {
		return nil, &Error{Source: f.at(root.Line), Msg: "expected a mapping of keys at the top level (like `workload:`), got " + nodeKind(root)}
	}
	if err := f.mapping(root, "", f.values); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *fileLayer) at(line int) string { return fmt.Sprintf("%s:%d", f.name, line) }

func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = resolve(n)
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return strconv.Quote(n.Value)
	}
	return describe(v)
}

// section says whether key (lower-cased, dotted) has keys below it.
func (f *fileLayer) section(key string) bool {
	for k := range f.schema {
		if strings.HasPrefix(k, key+".") {
			return true
		}
	}
	return false
}

type pair struct{ k, v *yaml.Node }

// pairs are a mapping's key/value pairs, the explicit ones first and then those of YAML merge
// keys (<<: *anchor), which explicit keys override.
func pairs(n *yaml.Node) (explicit, merged []pair) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Tag == "!!merge" {
			v = resolve(v)
			srcs := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				srcs = v.Content
			}
			for _, m := range srcs {
				if m = resolve(m); m.Kind == yaml.MappingNode {
					e, mm := pairs(m)
					merged = append(merged, append(e, mm...)...)
				}
			}
			continue
		}
		explicit = append(explicit, pair{k, v})
	}
	return explicit, merged
}

func (f *fileLayer) mapping(n *yaml.Node, prefix string, out map[string]any) error {
	explicit, merged := pairs(n)
	seen := map[string]int{}
	for i, p := range append(explicit, merged...) {
		key := p.k.Value
		full := key
		if prefix != "" {
			full = prefix + "." + key
		}
		lk := strings.ToLower(full)
		src := f.at(p.k.Line)
		if first, dup := seen[strings.ToLower(key)]; dup {
			if i >= len(explicit) {
				continue // a merged key the mapping sets itself
			}
			return &Error{Source: src, Key: full, Msg: fmt.Sprintf("is set twice (also on line %d); keys are not case-sensitive", first)}
		}
		seen[strings.ToLower(key)] = p.k.Line
		v := resolve(p.v)
		if lf, ok := f.schema[lk]; ok {
			var val any
			if err := v.Decode(&val); err != nil {
				return &Error{Source: src, Key: lf.key, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
			}
			if err := checkValue(lf.typ, val); err != nil {
				return &Error{Source: src, Key: lf.key, Msg: err.Error()}
			}
			out[strings.ToLower(key)] = val
			f.sources[lk] = src
			continue
		}
		if !f.section(lk) {
			return unknownKey(src, full, f.schema)
		}
		switch {
		case v.Kind == yaml.MappingNode:
			sub := map[string]any{}
			if err := f.mapping(v, full, sub); err != nil {
				return err
			}
			out[strings.ToLower(key)] = sub
		case isNull(v): // an empty section (every key below it commented out)
		default:
			return &Error{Source: src, Key: full, Msg: "expected a mapping of the keys below it, got " + nodeKind(v)}
		}
	}
	return nil
}
