// Package yamldoc reads a file that must hold one YAML document (configs, gate files) and says
// where it is wrong with the 1-based line yaml.v3 does not always give.
package yamldoc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is a problem at a line of the document (0: the line is not known).
type Error struct {
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

// One decodes raw as exactly one YAML document and returns its root node, or nil when the
// document is empty or only comments. A second document with content is an error at the line
// it starts (a trailing empty `---` is not).
func One(raw []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxError(err)
	}
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, syntaxError(err)
		}
		if len(next.Content) > 0 && !IsNull(next.Content[0]) {
			return nil, &Error{Line: next.Line, Msg: "a second YAML document starts here (after ---): expected one document per file"}
		}
	}
	if len(doc.Content) == 0 || IsNull(doc.Content[0]) {
		return nil, nil
	}
	return doc.Content[0], nil
}

// IsNull reports whether n is an explicit or implicit null.
func IsNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// yamlLine is the "line N: " yaml.v3 puts in front of a syntax error.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError turns a yaml.v3 syntax error into an Error at its 1-based line. yaml.v3 numbers
// the lines of parser errors from 0 and those of scanner errors from 1 (decode.go, parser.fail:
// only scanner errors get line++); parser problems are the "did not find expected ..." ones and
// the few below, so those are shifted to count from 1.
func syntaxError(err error) error {
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return &Error{Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	line, _ := strconv.Atoi(m[1])
	problem := m[2]
	switch {
	case strings.HasPrefix(problem, "did not find expected"),
		strings.HasPrefix(problem, "found duplicate %"),
		problem == "found incompatible YAML document",
		problem == "found undefined tag handle":
		line++
	}
	return &Error{Line: line, Msg: "not valid YAML: " + problem}
}
