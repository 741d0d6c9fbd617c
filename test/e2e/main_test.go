//go:build e2e

// Package e2e holds the end-to-end tests on the embedded lab. One lab serves the whole test
// binary (TestMain brings it up once and takes it down at the end, then fails the binary if any
// process or state of it is left); run this package alone (-p 1): two labs on 2 cores distort
// every number and compete for ports.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/lab"
	"github.com/brakebench/brakebench/internal/labbuild"
	"github.com/brakebench/brakebench/internal/progress"
)

const labName = "bb-e2e"

var (
	testenv  env.Environment
	theLab   *lab.Lab
	labState *lab.State
	stateDir string
)

// labConfig is the test lab's configuration (BRAKEBENCH_* overrides apply, e.g. the cache dir).
func labConfig(name, dir string) (*config.Resolved, error) {
	// GPU capacity on every node lets the gpu-faults tests run on the same lab.
	// One real node (containerd, runc, kubelet) for the in-cluster paths (realnode_test.go).
	return config.Loader{Env: os.Environ(), Sets: []string{"lab.name=" + name, "lab.stateDir=" + dir, "lab.nodes.gpus=8", "lab.realNode=true"}}.Load()
}

func newLab(name, dir string) (*lab.Lab, error) {
	cfg, err := labConfig(name, dir)
	if err != nil {
		return nil, err
	}
	v, err := labbuild.LoadVersions()
	if err != nil {
		return nil, err
	}
	return lab.New(cfg.Lab, v, progress.New(os.Stderr))
}

func TestMain(m *testing.M) {
	var err error
	stateDir, err = os.MkdirTemp("", "brakebench-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	theLab, err = newLab(labName, stateDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	// Building is part of setup: on a fresh machine it takes ~20 minutes, cached seconds.
	labState, err = theLab.Up(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lab up:", err)
		_ = theLab.Down(context.Background())
		os.Exit(1)
	}
	testenv = env.NewWithConfig(envconf.NewWithKubeConfig(labState.Kubeconfig))
	code := testenv.Run(m)

	// Lab down must leave no process and no state directory, and nothing of the real node: no
	// process, mount, cgroup, container, veth, bridge or iptables rule, no changed sysctl.
	realNode := labState.RealNode
	if err := theLab.Down(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: lab down:", err)
		code = 1
	}
	if left := theLab.Leftovers(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: lab down left processes running: %v\n", left)
		code = 1
	}
	if _, err := os.Stat(filepath.Join(stateDir, labName)); !os.IsNotExist(err) {
		fmt.Fprintf(os.Stderr, "FAIL: lab down left its state directory %s\n", filepath.Join(stateDir, labName))
		code = 1
	}
	if realNode == nil {
		fmt.Fprintln(os.Stderr, "FAIL: the test lab had no real node")
		code = 1
	} else if left := realNode.Leftovers(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: lab down left of the real node: %v\n", left)
		code = 1
	}
	if code == 0 {
		fmt.Println("lab down: no process and no state directory left, nothing of the real node (processes, mounts, cgroups, links, iptables rules, sysctls)")
	}
	_ = os.RemoveAll(stateDir)
	// The brakebench binaries the tests built (~100 MB each) go too.
	if cliPath != "" {
		_ = os.RemoveAll(filepath.Dir(cliPath))
	}
	if staticPath != "" {
		_ = os.Remove(staticPath)
	}
	os.Exit(code)
}

func clients(t testing.TB) *kube.Clients {
	t.Helper()
	rc, err := kube.RESTConfig(labState.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS, rc.Burst = -1, 0 // like the harness: no client-side limiter (the loadgen benchmark's plain loop uses this)
	c, err := kube.NewClients(rc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
