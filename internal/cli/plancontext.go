package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/brakebench/brakebench/internal/labbuild"
	"github.com/brakebench/brakebench/suites"
)

// fetchModule returns a module's directory in the Go module cache, downloading it on first use;
// ctx ends the download.
func (a *app) fetchModule(ctx context.Context, mod, version string) (string, error) {
	if a.moduleDir != nil {
		return a.moduleDir(ctx, mod, version)
	}
	return (&labbuild.Builder{}).ModuleDir(ctx, mod, version)
}

// planContext answers "does agent-sandbox at version know this flag" from the version's own
// source in the Go module cache (downloaded on first use). A version the proxy does not serve is
// an error here, before anything touches a cluster. ctx is the command's signal context: Ctrl-C
// or SIGTERM ends a download in progress.
func (a *app) planContext(ctx context.Context) suites.PlanContext {
	versions, _ := labbuild.LoadVersions()
	var mu sync.Mutex
	sources := map[string]string{}
	source := func(version string) (string, error) {
		if version == "" {
			version = versions.AgentSandbox
		}
		dir, err := a.fetchModule(ctx, "sigs.k8s.io/agent-sandbox", version)
		if err != nil {
			return "", fmt.Errorf("agent-sandbox %s cannot be had here: %w", version, err)
		}
		return dir, nil
	}
	return suites.PlanContext{Source: source, Supports: func(version, flag string) (bool, error) {
		if version == "" {
			version = versions.AgentSandbox
		}
		mu.Lock()
		defer mu.Unlock()
		src, ok := sources[version]
		if !ok {
			dir, err := source(version)
			if err != nil {
				return false, err
			}
			raw, err := os.ReadFile(filepath.Join(dir, "cmd", "agent-sandbox-controller", "main.go"))
			if err != nil {
				return false, fmt.Errorf("agent-sandbox %s: %w", version, err)
			}
			src = string(raw)
			sources[version] = src
		}
		return strings.Contains(src, `"`+flag+`"`), nil
	}}
}
