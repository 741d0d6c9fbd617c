// Package gates reads declarative pass/fail expressions over a run's summary statistics and
// evaluates them. A gate file is checked completely (syntax, metric names, cell names) before a
// run starts; every error names file:line.
//
//	gates:
//	- name: capped refill holds the cap
//	  expr: cell(max-refill-rate).ceiling.refill_create_5s <= 1.25 * brake.max_refill_rate
//	- expr: all.claims.failed == 0
//	- expr: cell(both).claim.p99 <= cell(none).claim.p99 * 1.10
//
// Operands: numbers, durations (250ms, 1.5s, 2m: compared in milliseconds), cell(NAME).METRIC
// (the cell's summary value), all.METRIC (every cell must pass), brake.max_refill_rate and
// brake.replenish_delay (the run's configured brake values); + - * / and parentheses;
// comparisons <= < >= > == !=. METRIC is a summary key; its _ms/_s unit suffix may be left out.
package gates

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// Gate is one parsed gate.
type Gate struct {
	Name string
	Expr string
	Line int
	File string
	cmp  string
	l, r node
}

// Schema is what a gate may refer to.
type Schema struct {
	Metrics map[string]string // summary key -> unit ("ms", "s", "/s", "claims")
	Cells   []string          // cell names of the run's matrix (empty: not checked)
}

// Load parses and checks a gate file.
func Load(path string, s Schema) ([]Gate, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return Parse(path, raw, s)
}

// Parse parses gate YAML (name is used in errors).
func Parse(name string, raw []byte, s Schema) ([]Gate, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: not valid YAML: %v", name, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:1: expected a mapping with a `gates:` list", name)
	}
	root := doc.Content[0]
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		if k.Value != "gates" {
			return nil, fmt.Errorf("%s:%d: unknown key %q (expected `gates:`)", name, k.Line, k.Value)
		}
		list = root.Content[i+1]
	}
	if list == nil || list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s:%d: `gates:` must be a list", name, root.Line)
	}
	var out []Gate
	for _, item := range list.Content {
		if item.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s:%d: each gate is a mapping with expr (and optional name)", name, item.Line)
		}
		g := Gate{File: name, Line: item.Line}
		for i := 0; i+1 < len(item.Content); i += 2 {
			k, v := item.Content[i], item.Content[i+1]
			switch k.Value {
			case "name":
				g.Name = v.Value
			case "expr":
				g.Expr, g.Line = v.Value, v.Line
			default:
				return nil, fmt.Errorf("%s:%d: unknown gate key %q (expected name, expr)", name, k.Line, k.Value)
			}
		}
		if g.Expr == "" {
			return nil, fmt.Errorf("%s:%d: gate has no expr", name, item.Line)
		}
		if g.Name == "" {
			g.Name = g.Expr
		}
		if err := g.parse(s); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, g.Line, err)
		}
		out = append(out, g)
	}
	return out, nil
}

// Cells lists the cell names the gate refers to with cell(NAME).
func (g Gate) Cells() []string {
	var out []string
	var walk func(n node)
	walk = func(n node) {
		switch t := n.(type) {
		case ref:
			if t.scope == "cell" {
				out = append(out, t.cell)
			}
		case binop:
			walk(t.l)
			walk(t.r)
		}
	}
	walk(g.l)
	walk(g.r)
	return out
}

// ForCells keeps the gates whose cell(NAME) references all name cells of the run (a default gate
// about a brake cell the matrix does not include has nothing to judge).
func ForCells(gs []Gate, cells []string) []Gate {
	var out []Gate
	for _, g := range gs {
		ok := true
		for _, c := range g.Cells() {
			ok = ok && contains(cells, c)
		}
		if ok {
			out = append(out, g)
		}
	}
	return out
}

// ---- expression parsing ----

type node interface {
	eval(env *evalEnv) (value, error)
}

type value struct {
	v   float64
	dur bool // milliseconds
}

type num struct{ value }

func (n num) eval(*evalEnv) (value, error) { return n.value, nil }

type ref struct {
	scope string // "cell", "all", "brake"
	cell  string
	key   string // summary key, or brake name
	unit  string
}

type binop struct {
	op   byte
	l, r node
}

var comparators = []string{"<=", ">=", "==", "!=", "<", ">"}

func (g *Gate) parse(s Schema) error {
	expr := g.Expr
	for _, c := range comparators {
		if i := strings.Index(expr, c); i >= 0 {
			g.cmp = c
			lhs, rhs := expr[:i], expr[i+len(c):]
			var err error
			if g.l, err = parseArith(lhs, s); err != nil {
				return fmt.Errorf("left of %s: %v", c, err)
			}
			if g.r, err = parseArith(rhs, s); err != nil {
				return fmt.Errorf("right of %s: %v", c, err)
			}
			return nil
		}
	}
	return fmt.Errorf("expression %q has no comparison (one of %s)", expr, strings.Join(comparators, " "))
}

type parser struct {
	toks []string
	pos  int
	s    Schema
}

func tokenize(s string) ([]string, error) {
	var toks []string
	for i := 0; i < len(s); {
		c := rune(s[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case strings.ContainsRune("+-*/()", c):
			toks = append(toks, string(c))
			i++
		case unicode.IsLetter(c) || unicode.IsDigit(c) || c == '.' || c == '_':
			j := i
			for j < len(s) && (unicode.IsLetter(rune(s[j])) || unicode.IsDigit(rune(s[j])) || strings.ContainsRune("._-", rune(s[j]))) {
				// a '-' continues a word only inside cell(...) names or metric names, never after a digit-only token
				if s[j] == '-' && j+1 < len(s) && !unicode.IsLetter(rune(s[j+1])) {
					break
				}
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		default:
			return nil, fmt.Errorf("unexpected character %q", c)
		}
	}
	return toks, nil
}

func parseArith(src string, s Schema) (node, error) {
	toks, err := tokenize(src)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("empty operand")
	}
	p := &parser{toks: toks, s: s}
	n, err := p.sum()
	if err != nil {
		return nil, err
	}
	if p.pos != len(p.toks) {
		return nil, fmt.Errorf("unexpected %q", p.toks[p.pos])
	}
	return n, nil
}

func (p *parser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *parser) sum() (node, error) {
	l, err := p.product()
	if err != nil {
		return nil, err
	}
	for p.peek() == "+" || p.peek() == "-" {
		op := p.toks[p.pos][0]
		p.pos++
		r, err := p.product()
		if err != nil {
			return nil, err
		}
		l = binop{op, l, r}
	}
	return l, nil
}

func (p *parser) product() (node, error) {
	l, err := p.atom()
	if err != nil {
		return nil, err
	}
	for p.peek() == "*" || p.peek() == "/" {
		op := p.toks[p.pos][0]
		p.pos++
		r, err := p.atom()
		if err != nil {
			return nil, err
		}
		l = binop{op, l, r}
	}
	return l, nil
}

func (p *parser) atom() (node, error) {
	t := p.peek()
	if t == "" {
		return nil, fmt.Errorf("expression ends early")
	}
	p.pos++
	switch {
	case t == "(":
		n, err := p.sum()
		if err != nil {
			return nil, err
		}
		if p.peek() != ")" {
			return nil, fmt.Errorf("missing )")
		}
		p.pos++
		return n, nil
	case unicode.IsDigit(rune(t[0])) || t[0] == '.':
		return parseNumber(t)
	case t == "cell":
		if p.peek() != "(" {
			return nil, fmt.Errorf("cell must be written cell(NAME).METRIC")
		}
		p.pos++
		name := p.peek()
		p.pos++
		if p.peek() != ")" {
			return nil, fmt.Errorf("cell(%s: missing )", name)
		}
		p.pos++
		rest := p.peek()
		p.pos++
		if !strings.HasPrefix(rest, ".") {
			return nil, fmt.Errorf("cell(%s) must be followed by .METRIC", name)
		}
		if len(p.s.Cells) > 0 && !contains(p.s.Cells, name) {
			return nil, fmt.Errorf("unknown cell %q (this run's cells: %s)", name, strings.Join(p.s.Cells, ", "))
		}
		return p.metric("cell", name, rest[1:])
	case strings.HasPrefix(t, "all."):
		return p.metric("all", "", t[len("all."):])
	case t == "brake.max_refill_rate":
		return ref{scope: "brake", key: "max_refill_rate"}, nil
	case t == "brake.replenish_delay":
		return ref{scope: "brake", key: "replenish_delay", unit: "ms"}, nil
	}
	return nil, fmt.Errorf("unknown operand %q (expected a number, a duration, cell(NAME).METRIC, all.METRIC, brake.max_refill_rate or brake.replenish_delay)", t)
}

func (p *parser) metric(scope, cell, key string) (node, error) {
	for _, k := range []string{key, key + "_ms", key + "_s"} {
		if unit, ok := p.s.Metrics[k]; ok {
			return ref{scope: scope, cell: cell, key: k, unit: unit}, nil
		}
	}
	return nil, fmt.Errorf("unknown metric %q (known: %s)", key, strings.Join(sortedKeys(p.s.Metrics), ", "))
}

func parseNumber(t string) (node, error) {
	if f, err := strconv.ParseFloat(t, 64); err == nil {
		return num{value{v: f}}, nil
	}
	if d, err := time.ParseDuration(t); err == nil {
		return num{value{v: float64(d) / float64(time.Millisecond), dur: true}}, nil
	}
	return nil, fmt.Errorf("%q is neither a number nor a duration like 250ms or 1.5s", t)
}

// ---- evaluation ----

// Values is what gates are evaluated against.
type Values struct {
	// Metric returns a cell's summary value of key, and whether it exists.
	Metric func(cell, key string) (float64, bool)
	Cells  []string
	Brakes map[string]float64 // max_refill_rate (per s), replenish_delay (ms)
}

type evalEnv struct {
	vals *Values
	cell string // the cell all.* refers to in this pass
}

func toValue(v float64, unit string) value {
	switch unit {
	case "ms":
		return value{v: v, dur: true}
	case "s":
		return value{v: v * 1000, dur: true}
	}
	return value{v: v}
}

func (r ref) eval(env *evalEnv) (value, error) {
	switch r.scope {
	case "brake":
		v, ok := env.vals.Brakes[r.key]
		if !ok {
			return value{}, fmt.Errorf("brake.%s is not set in this run", r.key)
		}
		return toValue(v, r.unit), nil
	}
	cell := r.cell
	if r.scope == "all" {
		cell = env.cell
	}
	v, ok := env.vals.Metric(cell, r.key)
	if !ok {
		return value{}, fmt.Errorf("cell %q has no %s", cell, r.key)
	}
	return toValue(v, r.unit), nil
}

func (b binop) eval(env *evalEnv) (value, error) {
	l, err := b.l.eval(env)
	if err != nil {
		return value{}, err
	}
	r, err := b.r.eval(env)
	if err != nil {
		return value{}, err
	}
	switch b.op {
	case '+', '-':
		if l.dur != r.dur {
			return value{}, fmt.Errorf("cannot add or subtract a duration and a plain number")
		}
		if b.op == '+' {
			return value{l.v + r.v, l.dur}, nil
		}
		return value{l.v - r.v, l.dur}, nil
	case '*':
		return value{l.v * r.v, l.dur || r.dur}, nil
	}
	return value{l.v / r.v, l.dur && !r.dur}, nil
}

// Verdict is one evaluated gate.
type Verdict struct {
	Name      string  `json:"name"`
	Expr      string  `json:"expr"`
	Passed    bool    `json:"passed"`
	Measured  float64 `json:"measured"`  // left side (the worst cell for all.*)
	Threshold float64 `json:"threshold"` // right side
	Unit      string  `json:"unit"`
	Message   string  `json:"message"`
}

func compare(op string, l, r float64) bool {
	switch op {
	case "<=":
		return l <= r
	case "<":
		return l < r
	case ">=":
		return l >= r
	case ">":
		return l > r
	case "==":
		return l == r
	}
	return l != r
}

func usesAll(n node) bool {
	switch t := n.(type) {
	case ref:
		return t.scope == "all"
	case binop:
		return usesAll(t.l) || usesAll(t.r)
	}
	return false
}

// Evaluate runs every gate.
func Evaluate(gs []Gate, vals Values) []Verdict {
	var out []Verdict
	for _, g := range gs {
		v := Verdict{Name: g.Name, Expr: g.Expr, Passed: true}
		cells := []string{""}
		if usesAll(g.l) || usesAll(g.r) {
			cells = vals.Cells
		}
		var failures []string
		for _, cell := range cells {
			env := &evalEnv{vals: &vals, cell: cell}
			l, err := g.l.eval(env)
			if err == nil {
				var r value
				if r, err = g.r.eval(env); err == nil {
					if l.dur != r.dur && !(r.v == 0 || l.v == 0) {
						err = fmt.Errorf("compares a duration with a plain number; give the number a unit (e.g. 1500ms)")
					} else {
						ok := compare(g.cmp, l.v, r.v)
						if !ok || cell == "" || (v.Passed && worse(g.cmp, l.v, v.Measured)) {
							v.Measured, v.Threshold = l.v, r.v
						}
						if l.dur {
							v.Unit = "ms"
						}
						if !ok {
							v.Passed = false
							label := cell
							if label == "" {
								label = "run"
							}
							failures = append(failures, fmt.Sprintf("%s: %s %s %s is false", label, fmtV(l), g.cmp, fmtV(r)))
						}
					}
				}
			}
			if err != nil {
				v.Passed = false
				failures = append(failures, err.Error())
			}
		}
		if v.Passed {
			v.Message = fmt.Sprintf("passed: %s", strings.TrimSpace(g.Expr))
		} else {
			v.Message = strings.Join(failures, "; ")
		}
		out = append(out, v)
	}
	return out
}

func worse(cmp string, cand, cur float64) bool {
	if strings.HasPrefix(cmp, "<") {
		return cand > cur
	}
	return cand < cur
}

func fmtV(v value) string {
	if math.IsInf(v.v, 1) {
		return "+Inf"
	}
	if v.dur {
		return strconv.FormatFloat(v.v, 'f', 1, 64) + "ms"
	}
	return strconv.FormatFloat(v.v, 'g', 6, 64)
}

// Failed counts failed verdicts.
func Failed(vs []Verdict) int {
	n := 0
	for _, v := range vs {
		if !v.Passed {
			n++
		}
	}
	return n
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
