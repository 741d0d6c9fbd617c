// Package gates reads declarative pass/fail expressions over a run's summary statistics and
// evaluates them. A gate file is checked completely (syntax, metric names, cell names) before a
// run starts; every error names file:line.
//
//	gates:
//	- name: capped refill holds the cap
//	  expr: cell(max-refill-rate).ceiling.refill_create_5s <= 1.4 * brake.max_refill_rate
//	- expr: all.claims.failed == 0
//	- expr: cell(both).claim.p99 <= cell(none).claim.p99 * 1.10
//
// Operands: numbers, durations (250ms, 1.5s, 2m: compared in milliseconds), cell(...).METRIC
// (a cell's summary value), all.METRIC (every cell must pass), brake.KEY (a brake's setting as
// the run's cells had it: brake.max_refill_rate, brake.replenish_delay, ...); + - * / and parentheses;
// comparisons <= < >= > == !=. METRIC is a summary key; its _ms/_s unit suffix may be left out.
//
// A cell is selected by its exact name, quoted when it has characters beyond letters, digits,
// '-', '_' and '.' (cell("none@v0.5.5"), cell("none/apf-throttle")), or by its axes:
// cell(brake=none, version=v0.5.5, fault=apf-throttle). A bare word that is not a cell name
// selects by the run's primary axis (the brake, or the arm): cell(none). A selector that leaves
// an axis open (cell(none) in a run over two versions) applies the gate once per value of the
// open axes, pairing the cells of one expression by them, so a default gate file written once
// holds per version, per fault and per argument set.
//
// Every gate is checked when it is loaded: a selector that matches no cell, an unknown metric,
// adding or comparing a duration with a plain number, and a file without gates are errors
// (file:line), never a silent drop or a failure discovered after the run.
package gates

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/brakebench/brakebench/internal/yamldoc"
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
	// Brakes are the brake settings a gate may name as brake.KEY, with their units ("ms" for a
	// duration, "" for a plain number); they come from the brake registry.
	Brakes map[string]string
	Cells  []string // cell names of the run's matrix (empty: not checked)
	// Axes are each cell's axis values (cell name -> axis -> value), and Primary the axis a bare
	// word selects by ("brake", "arm"); both optional.
	Axes    map[string]map[string]string
	Primary string
	// Baseline lists the cells of the --baseline run (nil: no baseline; baseline.cell(...) is
	// then an error) and BaselineAxes their axes.
	Baseline     []string
	BaselineAxes map[string]map[string]string
	// Lenient lets a selector match no cell at parse time (built-in gate files cover every
	// brake; ForCells then skips, and names, the gates about cells the run does not have).
	Lenient bool
}

// Bounds of one gate's expression. The parser recurses once per parenthesis, and evaluation once
// per operator: a gate file holding 100000 '(' overflowed the stack, a Go fatal error instead of
// a message. Real gates are a line long and nest two or three deep.
const (
	MaxExprLen   = 4096 // bytes
	MaxExprDepth = 100  // nested parentheses
	MaxNameLen   = 200  // bytes of a gate's name (a report heading and a JUnit test case name)
)

// boundsError is an expression over MaxExprLen or MaxExprDepth; Parse names the gate with it.
type boundsError struct{ msg string }

func (e *boundsError) Error() string { return e.msg }

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
	root, err := yamldoc.One(raw)
	if err != nil {
		var de *yamldoc.Error
		if errors.As(err, &de) && de.Line > 0 {
			return nil, fmt.Errorf("%s:%d: %s", name, de.Line, de.Msg)
		}
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if root == nil {
		return nil, fmt.Errorf("%s:1: expected a mapping with a `gates:` list (the file is empty)", name)
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: expected a mapping with a `gates:` list (the file is not a mapping)", name, root.Line)
	}
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
	if len(list.Content) == 0 {
		return nil, fmt.Errorf("%s:%d: `gates:` is empty: a gate file must hold at least one gate (use --no-gates to evaluate none)", name, list.Line)
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
		if len(g.Name) > MaxNameLen || strings.ContainsAny(g.Name, "\n\r\t") {
			return nil, fmt.Errorf("%s:%d: gate name %s (%d bytes): expected one line of at most %d bytes (it heads the report's row and names the JUnit test case)",
				name, item.Line, shortQuote(g.Name), len(g.Name), MaxNameLen)
		}
		if g.Name == "" {
			g.Name = g.Expr
		}
		if err := g.parse(s); err != nil {
			var be *boundsError
			if errors.As(err, &be) {
				return nil, fmt.Errorf("%s:%d: gate %s: %v", name, g.Line, shortQuote(g.Name), err)
			}
			return nil, fmt.Errorf("%s:%d: %v", name, g.Line, err)
		}
		out = append(out, g)
	}
	return out, nil
}

// selectors lists the gate's cell(...) references.
func (g Gate) selectors() []ref {
	var out []ref
	var walk func(n node)
	walk = func(n node) {
		switch t := n.(type) {
		case ref:
			if t.scope == "cell" || t.scope == "baseline" {
				out = append(out, t)
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

// ForCells keeps the gates every cell(...) of which selects at least one cell of the run, and
// says which it skipped and why (a default gate about a brake the matrix does not include has
// nothing to judge).
func ForCells(gs []Gate, s Schema) (kept []Gate, skipped []string) {
	for _, g := range gs {
		var missing []string
		for _, r := range g.selectors() {
			if r.scope == "cell" && len(r.sel.matches(s)) == 0 {
				missing = append(missing, r.sel.String())
			}
		}
		if len(missing) == 0 {
			kept = append(kept, g)
		} else {
			skipped = append(skipped, fmt.Sprintf("%s:%d: gate %q skipped: this run has no cell %s", g.File, g.Line, g.Name, strings.Join(missing, ", ")))
		}
	}
	return kept, skipped
}

// selector picks cells: by exact name, or by axis values (a bare word: the primary axis).
type selector struct {
	name string            // exact cell name ("" when selecting by axes)
	axes map[string]string // axis -> value
	bare string            // the bare word written, for messages
	id   int               // position among the gate's selectors
}

func (sl selector) String() string {
	if sl.bare != "" {
		return sl.bare
	}
	if sl.name != "" {
		return strconv.Quote(sl.name)
	}
	var parts []string
	for _, k := range sortedKeys(sl.axes) {
		parts = append(parts, k+"="+sl.axes[k])
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// matchesCell reports whether cell (with its axes) is selected.
func (sl selector) matchesCell(cell string, axes map[string]string) bool {
	if sl.name != "" {
		return cell == sl.name
	}
	for k, v := range sl.axes {
		if axes[k] != v {
			return false
		}
	}
	return true
}

func (sl selector) matches(s Schema) []string {
	var out []string
	for _, c := range s.Cells {
		if sl.matchesCell(c, s.Axes[c]) {
			out = append(out, c)
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
	sel   selector
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
	if len(expr) > MaxExprLen {
		return &boundsError{fmt.Sprintf("expression is %d bytes long; expected at most %d", len(expr), MaxExprLen)}
	}
	for _, c := range comparators {
		if i := strings.Index(expr, c); i >= 0 {
			g.cmp = c
			lhs, rhs := expr[:i], expr[i+len(c):]
			var err error
			n := 0
			if g.l, err = parseArith(lhs, s, &n); err != nil {
				return fmt.Errorf("left of %s: %w", c, err)
			}
			if g.r, err = parseArith(rhs, s, &n); err != nil {
				return fmt.Errorf("right of %s: %w", c, err)
			}
			ld, lerr := durOf(g.l)
			rd, rerr := durOf(g.r)
			if err := errors.Join(lerr, rerr); err != nil {
				return err
			}
			if ld != rd && !isZero(g.l) && !isZero(g.r) {
				return fmt.Errorf("compares a duration with a plain number; give the number a unit (e.g. 1500ms) or compare like with like")
			}
			return nil
		}
	}
	return fmt.Errorf("expression %q has no comparison (one of %s)", expr, strings.Join(comparators, " "))
}

type parser struct {
	toks  []string
	pos   int
	s     Schema
	nsel  *int // selectors of the gate parsed so far (ids for binding)
	depth int  // parentheses open at pos
}

func tokenize(s string) ([]string, error) {
	var toks []string
	for i := 0; i < len(s); {
		c := rune(s[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case strings.ContainsRune("+-*/()=,", c):
			toks = append(toks, string(c))
			i++
		case c == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				return nil, fmt.Errorf("unterminated quoted cell name")
			}
			toks = append(toks, s[i:i+j+2])
			i += j + 2
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

func parseArith(src string, s Schema, nsel *int) (node, error) {
	toks, err := tokenize(src)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("empty operand")
	}
	p := &parser{toks: toks, s: s, nsel: nsel}
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
		if p.depth++; p.depth > MaxExprDepth {
			return nil, &boundsError{fmt.Sprintf("parentheses nest more than %d deep; expected at most %d levels", MaxExprDepth, MaxExprDepth)}
		}
		n, err := p.sum()
		if err != nil {
			return nil, err
		}
		if p.peek() != ")" {
			return nil, fmt.Errorf("missing )")
		}
		p.pos++
		p.depth--
		return n, nil
	case unicode.IsDigit(rune(t[0])) || t[0] == '.':
		return parseNumber(t)
	case t == "cell":
		sel, err := p.selector()
		if err != nil {
			return nil, err
		}
		rest := p.peek()
		p.pos++
		if !strings.HasPrefix(rest, ".") {
			return nil, fmt.Errorf("cell(...) must be followed by .METRIC")
		}
		if len(p.s.Cells) > 0 && !p.s.Lenient && len(sel.matches(p.s)) == 0 {
			return nil, fmt.Errorf("cell %s matches no cell of this run (cells: %s%s)", sel, strings.Join(p.s.Cells, ", "), axesHint(p.s))
		}
		sel.id = *p.nsel
		*p.nsel++
		return p.metric("cell", sel, rest[1:])
	case t == "baseline.cell":
		if p.s.Baseline == nil {
			return nil, fmt.Errorf("baseline.cell(...) needs a baseline run (--baseline OLD.json)")
		}
		sel, err := p.selector()
		if err != nil {
			return nil, err
		}
		rest := p.peek()
		p.pos++
		if !strings.HasPrefix(rest, ".") {
			return nil, fmt.Errorf("baseline.cell(...) must be followed by .METRIC")
		}
		bs := Schema{Cells: p.s.Baseline, Axes: p.s.BaselineAxes, Primary: p.s.Primary}
		if sel.bare != "" && !contains(bs.Cells, sel.bare) && p.s.Primary != "" {
			sel.name, sel.axes = "", map[string]string{p.s.Primary: sel.bare}
		}
		if len(sel.matches(bs)) == 0 {
			return nil, fmt.Errorf("baseline.cell %s matches no cell of the baseline run (cells: %s)", sel, strings.Join(bs.Cells, ", "))
		}
		return p.metric("baseline", sel, rest[1:])
	case strings.HasPrefix(t, "all."):
		return p.metric("all", selector{}, t[len("all."):])
	case strings.HasPrefix(t, "brake."):
		if unit, ok := p.s.Brakes[t[len("brake."):]]; ok {
			return ref{scope: "brake", key: t[len("brake."):], unit: unit}, nil
		}
	}
	var brakes []string
	for _, k := range sortedKeys(p.s.Brakes) {
		brakes = append(brakes, "brake."+k)
	}
	return nil, fmt.Errorf("unknown operand %q (expected a number, a duration, cell(NAME).METRIC, all.METRIC or a brake setting: %s)", t, strings.Join(brakes, ", "))
}

// selector parses what follows `cell`: ("quoted name"), (name) or (axis=value, ...).
func (p *parser) selector() (selector, error) {
	if p.peek() != "(" {
		return selector{}, fmt.Errorf(`cell must be written cell(NAME).METRIC, cell("NAME").METRIC or cell(axis=value, ...).METRIC`)
	}
	p.pos++
	var sel selector
	t := p.peek()
	p.pos++
	switch {
	case strings.HasPrefix(t, `"`):
		sel.name = strings.Trim(t, `"`)
	case t == "" || t == ")" || !isWord(t):
		return selector{}, fmt.Errorf("cell(: expected a cell name or axis=value, got %q", t)
	case p.peek() == "=":
		sel.axes = map[string]string{}
		for {
			if p.peek() != "=" {
				return selector{}, fmt.Errorf("cell(...): expected axis=value after %q", t)
			}
			p.pos++
			v := p.peek()
			p.pos++
			if !isWord(v) && !strings.HasPrefix(v, `"`) {
				return selector{}, fmt.Errorf("cell(...): %s= needs a value", t)
			}
			if _, dup := sel.axes[t]; dup {
				return selector{}, fmt.Errorf("cell(...): axis %s given twice", t)
			}
			sel.axes[t] = strings.Trim(v, `"`)
			if p.peek() != "," {
				break
			}
			p.pos++
			t = p.peek()
			p.pos++
		}
	default:
		// A bare word: the cell of that name, else the cells whose primary axis has that value.
		sel.bare = t
		if len(p.s.Cells) > 0 && !contains(p.s.Cells, t) && p.s.Primary != "" {
			sel.axes = map[string]string{p.s.Primary: t}
		} else {
			sel.name = t
		}
	}
	if p.peek() != ")" {
		return selector{}, fmt.Errorf("cell(%s: missing )", sel)
	}
	p.pos++
	return sel, nil
}

// shortQuote quotes s for a message, cut to its first 40 characters (a gate's name defaults to
// its expression, which may be long).
func shortQuote(s string) string {
	if r := []rune(s); len(r) > 40 {
		return strconv.Quote(string(r[:40])) + "..."
	}
	return strconv.Quote(s)
}

func isWord(t string) bool {
	return t != "" && (unicode.IsLetter(rune(t[0])) || unicode.IsDigit(rune(t[0])) || t[0] == '_' || t[0] == '.')
}

func axesHint(s Schema) string {
	keys := map[string]map[string]bool{}
	for _, ax := range s.Axes {
		for k, v := range ax {
			if keys[k] == nil {
				keys[k] = map[string]bool{}
			}
			keys[k][v] = true
		}
	}
	if len(keys) == 0 {
		return ""
	}
	var parts []string
	for k, vs := range keys {
		var vals []string
		for v := range vs {
			vals = append(vals, v)
		}
		sort.Strings(vals)
		parts = append(parts, k+" in {"+strings.Join(vals, ", ")+"}")
	}
	sort.Strings(parts)
	return "; axes: " + strings.Join(parts, "; ")
}

func (p *parser) metric(scope string, sel selector, key string) (node, error) {
	for _, k := range []string{key, key + "_ms", key + "_s"} {
		if unit, ok := p.s.Metrics[k]; ok {
			return ref{scope: scope, sel: sel, key: k, unit: unit}, nil
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

// durOf tells whether a node is a duration, and rejects adding or subtracting a duration and a
// plain number (the same rules evaluation applies, checked before the run).
func durOf(n node) (bool, error) {
	switch t := n.(type) {
	case num:
		return t.dur, nil
	case ref:
		return t.unit == "ms" || t.unit == "s", nil
	case binop:
		l, err := durOf(t.l)
		if err != nil {
			return false, err
		}
		r, err := durOf(t.r)
		if err != nil {
			return false, err
		}
		switch t.op {
		case '+', '-':
			if l != r && !isZero(t.l) && !isZero(t.r) {
				return false, fmt.Errorf("cannot add or subtract a duration and a plain number")
			}
			return l || r, nil
		case '*':
			return l || r, nil
		}
		return l && !r, nil
	}
	return false, nil
}

func isZero(n node) bool {
	t, ok := n.(num)
	return ok && t.v == 0
}

// ---- evaluation ----

// Values is what gates are evaluated against.
type Values struct {
	// Metric returns a cell's summary value of key, and whether it exists.
	Metric func(cell, key string) (float64, bool)
	Cells  []string
	Brakes map[string]float64 // brake setting operands (durations in ms), as the run's cells had them
	// Axes are each cell's axis values (selectors by axis need them).
	Axes map[string]map[string]string
	// Baseline returns a cell's summary value in the --baseline run (nil: none).
	Baseline func(cell, key string) (float64, bool)
	// BaselineCells and BaselineAxes describe the baseline run's cells.
	BaselineCells []string
	BaselineAxes  map[string]map[string]string
}

type evalEnv struct {
	vals  *Values
	cell  string         // the cell all.* refers to in this pass
	bound map[int]string // selector id -> the cell it stands for in this pass
	// label is the pass's open-axis values ("version=v0.5.5"): a baseline selector picks the
	// baseline cell with the same values.
	free map[string]string
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
			return value{}, fmt.Errorf("brake.%s is not set in this run, or set to more than one value (inline matrix.brakes settings: compare the cells by name)", r.key)
		}
		return toValue(v, r.unit), nil
	}
	cell := r.sel.name
	if b, ok := env.bound[r.sel.id]; ok && r.scope == "cell" {
		cell = b
	}
	if r.scope == "all" {
		cell = env.cell
	}
	if r.scope == "baseline" {
		if env.vals.Baseline == nil {
			return value{}, fmt.Errorf("no baseline run")
		}
		if cell == "" { // by axes: the baseline cell with this pass's open-axis values
			var m []string
			for _, c := range env.vals.BaselineCells {
				ax := env.vals.BaselineAxes[c]
				ok := r.sel.matchesCell(c, ax)
				for k, v := range env.free {
					if _, constrained := r.sel.axes[k]; !constrained && ax[k] != v {
						ok = false
					}
				}
				if ok {
					m = append(m, c)
				}
			}
			if len(m) != 1 {
				return value{}, fmt.Errorf("baseline.cell %s selects %d baseline cells for %v", r.sel, len(m), env.free)
			}
			cell = m[0]
		}
		v, ok := env.vals.Baseline(cell, r.key)
		if !ok {
			return value{}, fmt.Errorf("baseline cell %q has no %s", cell, r.key)
		}
		return toValue(v, r.unit), nil
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
		groups, err := bindings(g.selectors(), vals)
		if err != nil {
			v.Passed, v.Message = false, err.Error()
			out = append(out, v)
			continue
		}
		for _, grp := range groups {
			for _, cell := range cells {
				env := &evalEnv{vals: &vals, cell: cell, bound: grp.bound, free: grp.free}
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
								label := strings.TrimSpace(grp.label + " " + cell)
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

// binding is one way to read a gate's selectors: the cell each stands for, and a label naming
// the values of the axes the selectors left open ("" when there are none).
type binding struct {
	label string
	bound map[int]string
	free  map[string]string // the open axes' values of this pass
}

// bindings groups the run's cells by the axes no selector of the gate constrains, and binds every
// selector to its one cell in each group: cell(none) in a run over two versions gives one binding
// per version. Groups where a selector has no cell are skipped; a selector with several cells in
// one group is ambiguous; a gate that binds in no group selects nothing. Exact names bind alone.
func bindings(sels []ref, vals Values) ([]binding, error) {
	constrained := map[string]bool{}
	byAxes := false
	for _, r := range sels {
		for k := range r.sel.axes {
			constrained[k] = true
		}
		byAxes = byAxes || r.sel.name == ""
	}
	if !byAxes {
		b := binding{bound: map[int]string{}}
		for _, r := range sels {
			b.bound[r.sel.id] = r.sel.name
		}
		return []binding{b}, nil
	}
	free := map[string]bool{}
	for _, c := range vals.Cells {
		for k := range vals.Axes[c] {
			if !constrained[k] {
				free[k] = true
			}
		}
	}
	freeKeys := make([]string, 0, len(free))
	for k := range free {
		freeKeys = append(freeKeys, k)
	}
	sort.Strings(freeKeys)
	groups := map[string][]string{}
	var labels []string
	for _, c := range vals.Cells {
		var parts []string
		for _, k := range freeKeys {
			if v := vals.Axes[c][k]; v != "" {
				parts = append(parts, k+"="+v)
			}
		}
		label := strings.Join(parts, ",")
		if _, ok := groups[label]; !ok {
			labels = append(labels, label)
		}
		groups[label] = append(groups[label], c)
	}
	var out []binding
	for _, label := range labels {
		b := binding{label: label, bound: map[int]string{}, free: map[string]string{}}
		for _, kv := range strings.Split(label, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				b.free[k] = v
			}
		}
		if label != "" {
			b.label = "[" + label + "]"
		}
		ok := true
		for _, r := range sels {
			if r.scope == "baseline" { // resolved in the baseline run, with this pass's open axes
				continue
			}
			var m []string
			for _, c := range groups[label] {
				if r.sel.matchesCell(c, vals.Axes[c]) {
					m = append(m, c)
				}
			}
			if r.sel.name != "" && len(m) == 0 {
				m = []string{r.sel.name} // an exact name holds in every group
			}
			switch len(m) {
			case 0:
				ok = false
			case 1:
				b.bound[r.sel.id] = m[0]
			default:
				return nil, fmt.Errorf("cell %s is ambiguous: it selects %s; add the axis that tells them apart", r.sel, strings.Join(m, ", "))
			}
		}
		if ok {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the gate's cells select no cell of this run")
	}
	return out, nil
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
