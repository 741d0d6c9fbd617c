package faults

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/brakebench/brakebench/configs"
	"github.com/brakebench/brakebench/internal/config"
)

// precheck loads l and runs fault's checks that need no cluster, as a suite's plan does.
func precheck(t *testing.T, fault string, l config.Loader) error {
	t.Helper()
	cfg, err := l.Load()
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	f, ok := CellFaultNamed(fault)
	if !ok || f == nil {
		t.Fatalf("no fault %q", fault)
	}
	return f.(Prechecker).Precheck(cfg)
}

// Each fault type checks its own keys when a plan has its cells, before any cluster is touched:
// the error is a config error naming where the value came from, the key and what was expected.
func TestFaultSettingsErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "faults.yaml")
	if err := os.WriteFile(file, []byte("faults:\n  gpu:\n    kind: xid\n    xid: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		fault  string
		l      config.Loader
		source string
		key    string
		want   string // the message after the key
	}{
		{"apf target", "apf-throttle", config.Loader{Sets: []string{"faults.apf.target=scheduler"}}, "--set", "faults.apf.target", `expected controller or loadgen, got scheduler`},
		{"apf shares", "apf-throttle", config.Loader{Sets: []string{"faults.apf.shares=-1"}}, "--set", "faults.apf.shares", `expected 0 to 10000, got -1`},
		{"apf queues", "apf-throttle", config.Loader{Sets: []string{"faults.apf.queues=0"}}, "--set", "faults.apf.queues", `expected 1 to 10000, got 0`},
		{"apf queue length", "apf-throttle", config.Loader{Env: []string{"BRAKEBENCH_FAULTS_APF_QUEUELENGTH=20000"}}, "env BRAKEBENCH_FAULTS_APF_QUEUELENGTH", "faults.apf.queueLength", `expected 1 to 10000, got 20000`},
		{"apf loadgen as admin", "apf-throttle", config.Loader{Sets: []string{"faults.apf.target=loadgen", "loadgen.identity=exempt"}}, "--set", "faults.apf.target", `expected controller, or loadgen with loadgen.identity=serviceaccount (the admin identity is exempt from APF)`},
		{"gpu nodes", "gpu", config.Loader{Sets: []string{"faults.gpu.nodes=0"}}, "--set", "faults.gpu.nodes", `expected 1 to 10000, got 0`},
		{"gpu kind", "gpu", config.Loader{Sets: []string{"faults.gpu.kind=plasma"}}, "--set", "faults.gpu.kind", `expected one of xid, ecc, nvlink, device-count, kernel, networking, runtime, storage, got plasma`},
		{"gpu xid", "gpu", config.Loader{Sets: []string{"faults.gpu.xid=0"}}, "--set", "faults.gpu.xid", `expected an XID code like 79, got 0`},
		{"gpu xid in a file", "gpu", config.Loader{Files: []string{file}}, file + ":4", "faults.gpu.xid", `expected an XID code like 79, got 0`},
		// The check applies because of kind: labelled with where kind came from, and saying so.
		{"gpu xid because of kind", "gpu", config.Loader{Files: []string{file}, Sets: []string{"faults.gpu.kind=xid"}}, "--set", "faults.gpu.xid", `expected an XID code like 79, got 0 (because faults.gpu.kind is "xid")`},
		{"gpu escalate", "gpu", config.Loader{Sets: []string{"faults.gpu.escalate=reboot"}}, "--set", "faults.gpu.escalate", `expected one of none, taint, notready, got reboot`},
		{"gpu arm after", "gpu", config.Loader{Sets: []string{"faults.gpu.armAfter=25h"}}, "--set", "faults.gpu.armAfter", `expected a duration from 0s to 24h, got 25h0m0s`},
		{"gpu negative arm after", "gpu", config.Loader{Sets: []string{"faults.gpu.armAfter=-1s"}}, "--set", "faults.gpu.armAfter", `expected a duration from 0s to 24h, got -1s`},
		{"gpu unavailable fraction", "gpu", config.Loader{Sets: []string{"faults.gpu.maxUnavailableFraction=1.5"}}, "--set", "faults.gpu.maxUnavailableFraction", `expected a fraction between 0 and 1, got 1.5`},
		{"scheduler qps", "scheduler-qps", config.Loader{Sets: []string{"faults.controlPlane.schedulerQPS=0"}}, "--set", "faults.controlPlane.schedulerQPS", `expected 1 to 100000, got 0`},
		{"scheduler burst", "scheduler-qps", config.Loader{Sets: []string{"faults.controlPlane.schedulerBurst=200000"}}, "--set", "faults.controlPlane.schedulerBurst", `expected 1 to 100000, got 200000`},
		{"max requests inflight", "apiserver-inflight", config.Loader{Sets: []string{"faults.controlPlane.maxRequestsInflight=0"}}, "--set", "faults.controlPlane.maxRequestsInflight", `expected 1 to 100000, got 0`},
		{"max mutating requests inflight", "apiserver-inflight", config.Loader{Sets: []string{"faults.controlPlane.maxMutatingRequestsInflight=0"}}, "--set", "faults.controlPlane.maxMutatingRequestsInflight", `expected 1 to 100000, got 0`},
		{"repair gpus per sandbox", "node-repair", config.Loader{Sets: []string{"faults.nodeRepair.gpusPerSandbox=9"}}, "--set", "faults.nodeRepair.gpusPerSandbox", `expected 1 to 8 (the lab's GPU instance type has 8), got 9`},
		{"repair toleration scale", "node-repair", config.Loader{Sets: []string{"faults.nodeRepair.tolerationScale=0"}}, "--set", "faults.nodeRepair.tolerationScale", `expected a factor in (0, 1], got 0`},
		{"repair storage kind", "node-repair-blocked", config.Loader{Sets: []string{"faults.nodeRepair.kind=storage"}}, "--set", "faults.nodeRepair.kind", `expected one of xid, ecc, nvlink, device-count, kernel, networking, runtime (storage is warning-only: nothing to repair), got storage`},
		{"repair settle timeout", "node-repair", config.Loader{Sets: []string{"faults.nodeRepair.settleTimeout=0s"}}, "--set", "faults.nodeRepair.settleTimeout", `expected a duration from 1s to 24h, got 0s`},
		// The control-plane fault types share their keys: each checks all of them.
		{"shared control-plane keys", "scheduler-qps", config.Loader{Sets: []string{"faults.controlPlane.maxRequestsInflight=0"}}, "--set", "faults.controlPlane.maxRequestsInflight", `expected 1 to 100000, got 0`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.l.Sets = append(tc.l.Sets, "lab.nodes.gpus=8")
			err := precheck(t, tc.fault, tc.l)
			var ce *config.Error
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a config error", err)
			}
			if ce.Source != tc.source || ce.Key != tc.key || ce.Msg != tc.want {
				t.Errorf("got source %q key %q msg %q\nwant      %q     %q     %q", ce.Source, ce.Key, ce.Msg, tc.source, tc.key, tc.want)
			}
			if want := tc.source + `: key "` + tc.key + `": ` + tc.want; err.Error() != want {
				t.Errorf("error %q\nwant  %q", err, want)
			}
		})
	}
}

// The fault keys are known to the loader like built-in ones: an unknown key under faults. or a
// value of the wrong type is refused when the configuration loads, wherever it came from.
func TestFaultKeysAtLoad(t *testing.T) {
	file := filepath.Join(t.TempDir(), "faults.yaml")
	if err := os.WriteFile(file, []byte("faults:\n  apf:\n    target: controller\n    queus: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		l    config.Loader
		want string
	}{
		{"unknown key by --set", config.Loader{Sets: []string{"faults.gpu.kinds=xid"}}, `--set: key "faults.gpu.kinds": unknown key (known keys here: faults.gpu.armAfter, faults.gpu.escalate, faults.gpu.kind, faults.gpu.maxUnavailableFraction, faults.gpu.nodes, faults.gpu.xid)`},
		{"unknown key in a file", config.Loader{Files: []string{file}}, file + `:4: key "faults.apf.queus": unknown key`},
		{"unknown fault section", config.Loader{Sets: []string{"faults.disk.kind=full"}}, `--set: key "faults.disk.kind": unknown key`},
		{"unknown key in the environment", config.Loader{Env: []string{"BRAKEBENCH_FAULTS_GPU_KINDS=xid"}}, `env BRAKEBENCH_FAULTS_GPU_KINDS: unknown setting`},
		{"not a number", config.Loader{Sets: []string{"faults.gpu.nodes=many"}}, `--set: key "faults.gpu.nodes": expected a whole number, got "many"`},
		{"not a duration", config.Loader{Sets: []string{"faults.gpu.armAfter=soon"}}, `--set: key "faults.gpu.armAfter": expected a duration like 30s or 1m30s, got "soon"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.l.Load()
			if !config.IsConfigError(err) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got %v\nwant a config error starting %q", err, tc.want)
			}
		})
	}
	// Set from every layer, each over the one before.
	file2 := filepath.Join(t.TempDir(), "cp.yaml")
	if err := os.WriteFile(file2, []byte("faults:\n  controlPlane:\n    schedulerQPS: 300\n    schedulerBurst: 600\n    maxRequestsInflight: 70\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Loader{Files: []string{file2}, Env: []string{"BRAKEBENCH_FAULTS_CONTROLPLANE_SCHEDULERBURST=700", "BRAKEBENCH_FAULTS_CONTROLPLANE_MAXREQUESTSINFLIGHT=80"},
		Sets: []string{"faults.controlPlane.maxRequestsInflight=90"}}.Load()
	if err != nil {
		t.Fatal(err)
	}
	st, err := settingsOf[controlPlaneSettings](cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := (controlPlaneKeys{SchedulerQPS: 300, SchedulerBurst: 700, MaxRequestsInflight: 90, MaxMutatingRequestsInflight: 50}); st.ControlPlane != want {
		t.Errorf("got %+v, want %+v", st.ControlPlane, want)
	}
	for key, src := range map[string]string{"faults.controlPlane.schedulerQPS": file2 + ":3", "faults.controlPlane.schedulerBurst": "env BRAKEBENCH_FAULTS_CONTROLPLANE_SCHEDULERBURST",
		"faults.controlPlane.maxRequestsInflight": "--set", "faults.controlPlane.maxMutatingRequestsInflight": "default"} {
		if got := cfg.Source(key); got != src {
			t.Errorf("source of %s: %q, want %q", key, got, src)
		}
	}
}

// Each fault owner ships its defaults as configs/faults/<owner>.yaml, and they decode to the
// values the fault types have always had; they pass their own checks.
func TestFaultDefaults(t *testing.T) {
	cfg, err := config.Loader{Sets: []string{"lab.nodes.gpus=8"}}.Load()
	if err != nil {
		t.Fatal(err)
	}
	for owner := range owners {
		if _, err := configs.FS.ReadFile("faults/" + owner + ".yaml"); err != nil {
			t.Errorf("owner %s: no defaults file: %v", owner, err)
		}
	}
	if len(owners) != 4 {
		t.Errorf("owners %v, want apf-throttle, control-plane, gpu, node-repair", owners)
	}
	apf, err := settingsOf[apfSettings](cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wantAPF apfSettings
	wantAPF.APF.Target, wantAPF.APF.Shares, wantAPF.APF.Queues, wantAPF.APF.QueueLength = "controller", 1, 1, 16
	if apf != wantAPF {
		t.Errorf("apf-throttle defaults %+v, want %+v", apf, wantAPF)
	}
	gpu, err := settingsOf[gpuSettings](cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := (gpuKeys{Nodes: 1, Kind: "xid", XID: 79, Escalate: "taint", ArmAfter: time.Second, MaxUnavailableFraction: 0.2}); gpu.GPU != want {
		t.Errorf("gpu defaults %+v, want %+v", gpu.GPU, want)
	}
	nr, err := settingsOf[nodeRepairSettings](cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := (nodeRepairKeys{GPUsPerSandbox: 1, TolerationScale: 0.01, Kind: "xid", XID: 79, ArmAfter: time.Second, SettleTimeout: 2 * time.Minute}); nr.NodeRepair != want {
		t.Errorf("node-repair defaults %+v, want %+v", nr.NodeRepair, want)
	}
	cp, err := settingsOf[controlPlaneSettings](cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := (controlPlaneKeys{SchedulerQPS: 200, SchedulerBurst: 400, MaxRequestsInflight: 100, MaxMutatingRequestsInflight: 50}); cp.ControlPlane != want {
		t.Errorf("control-plane defaults %+v, want %+v", cp.ControlPlane, want)
	}
	for _, key := range []string{"faults.apf.target", "faults.gpu.armAfter", "faults.controlPlane.schedulerQPS"} {
		if src := cfg.Source(key); src != "default" {
			t.Errorf("source of %s: %q, want default", key, src)
		}
	}
	// Every fault type passes its checks with the defaults, and names them in the plan.
	for _, name := range CellFaultNames() {
		f, _ := CellFaultNamed(name)
		if pre, ok := f.(Prechecker); ok {
			if err := pre.Precheck(cfg); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		if ch := f.Change(cfg); strings.Contains(ch, "key ") {
			t.Errorf("%s: change %q", name, ch)
		}
	}
	// The settings are recorded with the run as the user wrote them.
	s := cfg.Settings()["faults"].(map[string]any)
	gs := s["gpu"].(map[string]any)
	if gs["armAfter"] != "1s" || gs["maxUnavailableFraction"] != 0.2 || !reflect.DeepEqual(s["controlPlane"].(map[string]any)["schedulerQPS"], 200) {
		t.Errorf("recorded settings %v", s)
	}
}
