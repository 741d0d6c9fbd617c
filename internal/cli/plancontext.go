package cli

import (
	"context"
	"fmt"
	"sync"

	"github.com/brakebench/brakebench/internal/labbuild"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
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
	sources := map[string]agentsandbox.Flags{}
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
	flags := func(version string) (agentsandbox.Flags, error) {
		if version == "" {
			version = versions.AgentSandbox
		}
		mu.Lock()
		defer mu.Unlock()
		defined, ok := sources[version]
		if !ok {
			dir, err := source(version)
			if err != nil {
				return nil, err
			}
			if defined, err = agentsandbox.ControllerFlags(dir); err != nil {
				return nil, fmt.Errorf("agent-sandbox %s: %w", version, err)
			}
			sources[version] = defined
		}
		return defined, nil
	}
	return suites.PlanContext{Source: source,
		Supports: func(version, flag string) (bool, error) {
			defined, err := flags(version)
			if err != nil {
				return false, err
			}
			return defined.Defines(flag), nil
		},
		CheckArg: func(version, arg string) (string, error) {
			defined, err := flags(version)
			if err != nil {
				return "", err
			}
			return defined.CheckValue(arg), nil
		}}
}
