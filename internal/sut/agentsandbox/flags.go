package agentsandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// flagDef matches a flag definition of Go's flag package in the controller's main.go:
// flag.BoolVar(&x, "name", ...), flag.Duration("name", ...), fs.Float64Var(&x,\n"name", ...).
var flagDef = regexp.MustCompile(`\b\w+\.(Bool|String|Int|Int64|Uint|Uint64|Float64|Duration|Func|BoolFunc|TextVar|Var)(?:Var)?\(\s*(?:&?[\w.]+\s*,\s*)?"([A-Za-z0-9][A-Za-z0-9._-]*)"`)

// frameworkFlags are flags the controller gets from the libraries it links rather than from its
// own main.go: controller-runtime registers --kubeconfig on the command line in an init function
// of its config package, and main.go's opts.BindFlags adds zap's logging flags.
var frameworkFlags = []string{"kubeconfig"}
var zapFlags = []string{"zap-devel", "zap-encoder", "zap-log-level", "zap-stacktrace-level", "zap-time-encoding"}

// Flags are the command-line flags the agent-sandbox controller defines at a version, read from
// the version's own source (cmd/agent-sandbox-controller/main.go in moduleDir), each with its
// kind (the flag package's function: "Bool", "Duration", ...; "" for a flag defined elsewhere):
// the only honest answer to "may brakebench pass --x=v to this version" (an undefined flag or a
// value of the wrong kind makes the controller exit at start with its usage).
type Flags map[string]string

// ControllerFlags reads the flags of the controller in moduleDir.
func ControllerFlags(moduleDir string) (Flags, error) {
	path := filepath.Join(moduleDir, "cmd", "agent-sandbox-controller", "main.go")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("agent-sandbox controller flags: %w", err)
	}
	return parseFlags(string(raw)), nil
}

func parseFlags(src string) Flags {
	f := Flags{}
	for _, m := range flagDef.FindAllStringSubmatch(src, -1) {
		f[m[2]] = m[1]
	}
	if len(f) == 0 {
		return f // not a flag-package main: say nothing is defined rather than guess
	}
	for _, n := range frameworkFlags {
		f[n] = "String"
	}
	if strings.Contains(src, ".BindFlags(") {
		for _, n := range zapFlags {
			f[n] = ""
		}
	}
	return f
}

// Defines reports whether the controller defines flag ("--name=value", "--name" or "name").
func (f Flags) Defines(flag string) bool {
	_, ok := f[FlagName(flag)]
	return ok
}

// CheckValue says what is wrong with arg's value for the flag's kind ("" when it parses as Go's
// flag package would parse it, or the kind is not checked). arg is "--name=value" or "--name"
// (a bare boolean).
func (f Flags) CheckValue(arg string) string {
	name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	kind, ok := f[name]
	if !ok {
		return ""
	}
	if !hasValue {
		if kind == "Bool" || kind == "BoolFunc" || kind == "" {
			return ""
		}
		return fmt.Sprintf("--%s needs a value (--%s=...)", name, name)
	}
	var err error
	switch kind {
	case "Bool":
		_, err = strconv.ParseBool(value)
	case "Int", "Int64":
		_, err = strconv.ParseInt(value, 0, 64)
	case "Uint", "Uint64":
		_, err = strconv.ParseUint(value, 0, 64)
	case "Float64":
		_, err = strconv.ParseFloat(value, 64)
	case "Duration":
		_, err = time.ParseDuration(value)
	}
	if err != nil {
		return fmt.Sprintf("--%s=%s is not a valid %s", name, value, strings.ToLower(kind))
	}
	return ""
}

// Undefined returns the flags of args the controller does not define (as given), in order.
// Arguments that are not flags (no leading "-") are kept out of the check.
func (f Flags) Undefined(args []string) []string {
	var out []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		if !f.Defines(a) {
			out = append(out, a)
		}
	}
	return out
}

// Names lists the defined flags, sorted.
func (f Flags) Names() []string {
	out := make([]string, 0, len(f))
	for n := range f {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// FlagName is a flag's bare name: "--a=b" -> "a", "-a" -> "a".
func FlagName(flag string) string {
	n, _, _ := strings.Cut(flag, "=")
	return strings.TrimLeft(n, "-")
}

// StartupFailure names why a controller process exited at start from its log: Go's flag package
// ("flag provided but not defined: -x", "invalid value ..."), a fatal or panic line, or the last
// line that reports an error. The usage text that follows a flag error is left out.
func StartupFailure(log string) string {
	lines := strings.Split(log, "\n")
	// The flag package prints the error, then "Usage of <binary>:" and every flag.
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "flag provided but not defined:") || strings.HasPrefix(l, "invalid value ") || strings.HasPrefix(l, "invalid boolean ") || strings.HasPrefix(l, "bad flag syntax") {
			return l
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		low := strings.ToLower(l)
		if strings.HasPrefix(l, "panic:") || strings.Contains(low, `"level":"error"`) || strings.Contains(low, "fatal") || strings.Contains(low, "error") {
			if len(l) > 400 {
				l = l[:400] + "..."
			}
			return l
		}
	}
	return ""
}

// Module is agent-sandbox's Go module path.
const Module = "sigs.k8s.io/agent-sandbox"

// FlagsAt reads a version's controller flags from its module, found by moduleDir (the Go module
// cache, downloading on first use).
func FlagsAt(moduleDir func(ctx context.Context, mod, version string) (string, error)) func(ctx context.Context, version string) (Flags, error) {
	return func(ctx context.Context, version string) (Flags, error) {
		dir, err := moduleDir(ctx, Module, version)
		if err != nil {
			return nil, fmt.Errorf("agent-sandbox %s: %w", version, err)
		}
		return ControllerFlags(dir)
	}
}
