package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brakebench/brakebench/configs"
)

// The brake and fault types declare their keys from internal/brakes and faults, which import this
// package: these tests declare the same keys (and configs/brakes/*.yaml, configs/faults/*.yaml
// give their defaults) as the brakes and faults do. The faults' own checks are tested in package
// faults (faults/settings_test.go), the shipped suites with them in package suites.
func init() {
	Own("faults", "apf-throttle", struct {
		APF struct {
			Target      string `mapstructure:"target"`
			Shares      int    `mapstructure:"shares"`
			Queues      int    `mapstructure:"queues"`
			QueueLength int    `mapstructure:"queueLength"`
		} `mapstructure:"apf"`
	}{})
	Own("faults", "gpu", struct {
		GPU struct {
			Nodes                  int           `mapstructure:"nodes"`
			Kind                   string        `mapstructure:"kind"`
			XID                    int           `mapstructure:"xid"`
			Escalate               string        `mapstructure:"escalate"`
			ArmAfter               time.Duration `mapstructure:"armAfter"`
			MaxUnavailableFraction float64       `mapstructure:"maxUnavailableFraction"`
		} `mapstructure:"gpu"`
	}{})
	Own("faults", "control-plane", struct {
		ControlPlane struct {
			SchedulerQPS                int `mapstructure:"schedulerQPS"`
			SchedulerBurst              int `mapstructure:"schedulerBurst"`
			MaxRequestsInflight         int `mapstructure:"maxRequestsInflight"`
			MaxMutatingRequestsInflight int `mapstructure:"maxMutatingRequestsInflight"`
		} `mapstructure:"controlPlane"`
	}{})
	Own("brakes", "replenish-delay", struct {
		D time.Duration `mapstructure:"replenishDelay"`
	}{})
	Own("brakes", "max-refill-rate", struct {
		R float64 `mapstructure:"maxRefillRate"`
	}{})
	Own("brakes", "max-batch-size", struct {
		N int `mapstructure:"maxBatchSize"`
	}{})
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cfg.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// lineOf is the 1-based line of the first line of an embedded config file that starts with prefix.
func lineOf(t *testing.T, path, prefix string) int {
	t.Helper()
	raw, err := configs.FS.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, prefix) {
			return i + 1
		}
	}
	t.Fatalf("%s has no line %q", path, prefix)
	return 0
}

func TestPrecedence(t *testing.T) {
	file := writeFile(t, "workload:\n  claims: 40\n  pool: 40\nmatrix:\n  repetitions: 2\n")
	suiteClaims := fmt.Sprintf("configs/suites/warmpool-burst.yaml:%d", lineOf(t, "suites/warmpool-burst.yaml", "  claims:"))
	cases := []struct {
		name        string
		l           Loader
		wantClaims  int
		wantReps    int
		wantPool    int
		claimSource string
	}{
		{"built-in default", Loader{}, 10, 1, 10, "default"},
		{"suite file over default", Loader{Suite: "warmpool-burst"}, 300, 10, 300, suiteClaims},
		{"user file over suite file", Loader{Suite: "warmpool-burst", Files: []string{file}}, 40, 2, 40, file + ":2"},
		{"env over file", Loader{Suite: "warmpool-burst", Files: []string{file}, Env: []string{"BRAKEBENCH_WORKLOAD_CLAIMS=50", "PATH=/bin"}}, 50, 2, 40, "env BRAKEBENCH_WORKLOAD_CLAIMS"},
		{"--set over env", Loader{Suite: "warmpool-burst", Files: []string{file}, Env: []string{"BRAKEBENCH_WORKLOAD_CLAIMS=50"}, Sets: []string{"workload.claims=60"}}, 60, 2, 40, "--set"},
		{"flag over --set", Loader{Sets: []string{"workload.claims=60"}, Flags: map[string]string{"workload.claims": "70"}}, 70, 1, 10, "flag"},
		{"a named flag", Loader{Flags: map[string]string{"workload.claims": "70"}, FlagNames: map[string]string{"workload.claims": "--claims"}}, 70, 1, 10, "--claims"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := c.l.Load()
			if err != nil {
				t.Fatal(err)
			}
			if r.Workload.Claims != c.wantClaims || r.Matrix.Repetitions != c.wantReps || r.Workload.Pool != c.wantPool {
				t.Errorf("claims=%d reps=%d pool=%d, want %d %d %d", r.Workload.Claims, r.Matrix.Repetitions, r.Workload.Pool, c.wantClaims, c.wantReps, c.wantPool)
			}
			if got := r.Source("workload.claims"); got != c.claimSource {
				t.Errorf("source = %q, want %q", got, c.claimSource)
			}
		})
	}
}

func TestTypedValues(t *testing.T) {
	r, err := Loader{Sets: []string{"workload.claimTimeout=90s", "matrix.brakes=none,both", "brakes.maxRefillRate=2.5", "lab.nodes.labels=topology.kubernetes.io/zone=a"},
		Env: []string{"BRAKEBENCH_LAB_PODBOOTDELAY=1s"}}.Load()
	if err != nil {
		t.Fatal(err)
	}
	if r.Workload.ClaimTimeout != 90*time.Second || r.Lab.PodBootDelay != time.Second || r.Brakes["maxrefillrate"] != "2.5" {
		t.Errorf("typed values not applied: %+v %+v %+v", r.Workload, r.Lab, r.Brakes)
	}
	if strings.Join(r.Matrix.Brakes, ",") != "none,both" || len(r.Lab.Nodes.Labels) != 1 || r.Lab.Nodes.Labels[0] != "topology.kubernetes.io/zone=a" {
		t.Errorf("lists/maps: %v %v", r.Matrix.Brakes, r.Lab.Nodes.Labels)
	}
}

func TestErrors(t *testing.T) {
	badYAML := writeFile(t, "workload: [unclosed\n")
	unknownInFile := writeFile(t, "workload:\n  clams: 3\n")
	badDurationInFile := writeFile(t, "workload:\n  claimTimeout: soon\n")
	negativeInFile := writeFile(t, "lab:\n  nodes:\n    count: -2\n")
	twoDocs := writeFile(t, "workload:\n  claims: 3\n---\nworkload:\n  claims: 0\n")
	kubeconfigFlag := map[string]string{"cluster.provider": "kubeconfig"}
	flagNames := map[string]string{"cluster.provider": "--cluster", "cluster.context": "--context", "out": "--out"}
	cases := []struct {
		name string
		l    Loader
		want string // substring of the one-line error
	}{
		{"missing file", Loader{Files: []string{"/nonexistent/bb.yaml"}}, "/nonexistent/bb.yaml: cannot read config file: no such file or directory"},
		{"invalid yaml", Loader{Files: []string{badYAML}}, badYAML + ":2: not valid YAML: did not find expected ',' or ']'"},
		{"unknown key in file", Loader{Files: []string{unknownInFile}}, unknownInFile + `:2: key "workload.clams": unknown key (known keys here: workload.ceiling, workload.claimTimeout, workload.claims`},
		{"bad duration in file", Loader{Files: []string{badDurationInFile}}, badDurationInFile + `:2: key "workload.claimTimeout": expected a duration like 30s or 1m30s, got "soon"`},
		{"negative count in file", Loader{Files: []string{negativeInFile}}, negativeInFile + `:3: key "lab.nodes.count": expected 1 to 10000, got -2`},
		// A second document used to be dropped without a word.
		{"second YAML document", Loader{Files: []string{twoDocs}}, twoDocs + ":3: a second YAML document starts here (after ---): expected one document per file"},
		{"unknown --set key", Loader{Sets: []string{"nope=1"}}, `--set: key "nope": unknown key`},
		{"--set without =", Loader{Sets: []string{"workload.claims"}}, `--set: "workload.claims" is not key=value`},
		{"bad number", Loader{Sets: []string{"workload.claims=many"}}, `--set: key "workload.claims": expected a whole number, got "many"`},
		{"bad bool-ish float", Loader{Sets: []string{"brakes.maxRefillRate=fast"}}, `--set: key "brakes.maxRefillRate": expected a number, got "fast"`},
		{"unknown env", Loader{Env: []string{"BRAKEBENCH_WORKLOAD_CLAMS=3"}}, "env BRAKEBENCH_WORKLOAD_CLAMS: unknown setting"},
		{"bad env duration", Loader{Env: []string{"BRAKEBENCH_WORKLOAD_CLAIMTIMEOUT=3"}}, `env BRAKEBENCH_WORKLOAD_CLAIMTIMEOUT: key "workload.claimTimeout": expected a duration`},
		{"negative duration", Loader{Sets: []string{"lab.podBootDelay=-1s"}}, `--set: key "lab.podBootDelay": expected a duration from 0s to 24h, got -1s`},
		{"zero timeout", Loader{Sets: []string{"workload.claimTimeout=0s"}}, `--set: key "workload.claimTimeout": expected a positive duration up to 24h, got 0s`},
		{"zero claims", Loader{Sets: []string{"workload.claims=0"}}, `--set: key "workload.claims": expected 1 to 100000, got 0`},
		{"negative pool", Loader{Sets: []string{"workload.pool=-1"}}, `--set: key "workload.pool": expected 0 to 10000, got -1`},
		{"real-node placement without a real node", Loader{Sets: []string{"workload.placement=real-node"}}, `--set: key "workload.placement": expected simulated unless lab.realNode is true (real-node places the sandboxes on the lab's real node), got real-node`},
		{"bad placement", Loader{Sets: []string{"workload.placement=gpu"}}, `--set: key "workload.placement": expected simulated or real-node, got gpu`},
		{"in-cluster runner without an image", Loader{Sets: []string{"loadgen.runner=in-cluster"}}, `--set: key "loadgen.runner": expected local unless loadgen.runnerImage names a brakebench image`},
		{"in-cluster runner as the admin", Loader{Sets: []string{"loadgen.runner=in-cluster", "loadgen.runnerImage=x"}}, `--set: key "loadgen.runner": expected local unless loadgen.identity is serviceaccount`},
		{"in-cluster runner on a lab without a real node", Loader{Sets: []string{"loadgen.runner=in-cluster", "loadgen.runnerImage=x", "loadgen.identity=serviceaccount"}}, `key "loadgen.runner": expected local unless lab.realNode is true`},
		{"in-cluster runner for gang-quota", Loader{Suite: "gang-quota", Sets: []string{"loadgen.runner=in-cluster", "loadgen.runnerImage=x", "loadgen.identity=serviceaccount", "lab.realNode=true"}}, `key "loadgen.runner": expected local for suite gang-quota`},
		{"unknown lab housekeeping", Loader{Sets: []string{"lab.housekeeping=vacuum"}}, `--set: key "lab.housekeeping": expected none, or steps joined by + from etcd-defrag, apiserver-restart (each once), got vacuum`},
		{"lab housekeeping step twice", Loader{Sets: []string{"lab.housekeeping=etcd-defrag+etcd-defrag"}}, `key "lab.housekeeping": expected none, or steps joined by + from etcd-defrag, apiserver-restart (each once), got etcd-defrag+etcd-defrag`},
		{"lab housekeeping empty step", Loader{Sets: []string{"lab.housekeeping=etcd-defrag+"}}, `got etcd-defrag+`},
		{"none among steps", Loader{Sets: []string{"lab.housekeeping=none+etcd-defrag"}}, `got none+etcd-defrag`},
		{"negative warm-up", Loader{Sets: []string{"matrix.warmup=-1"}}, `key "matrix.warmup": expected 0 to 10, got -1`},
		{"too much warm-up", Loader{Sets: []string{"matrix.warmup=11"}}, `key "matrix.warmup": expected 0 to 10, got 11`},
		{"one repetition a side is no first look", Loader{Sets: []string{"matrix.minRepetitions=1"}}, `key "matrix.minRepetitions": expected 2 to 1000`},
		{"an equivalence margin of 100%", Loader{Sets: []string{"matrix.equivalence=100"}}, `key "matrix.equivalence": expected a percentage from 0 (off) to under 100, got 100`},
		{"an unknown spending function", Loader{Sets: []string{"matrix.spending=bonferroni"}}, `key "matrix.spending": expected pocock or obrien-fleming, got bonferroni`},
		{"stopping on a metric without a verdict", Loader{Sets: []string{"matrix.stopOn=claim.p90_ms"}}, `key "matrix.stopOn": expected a non-empty list from claim.p50_ms, claim.p99_ms`},
		{"a sequential maximum over 50", Loader{Sets: []string{"matrix.repetitions=51"}}, `key "matrix.repetitions": expected 1 to 50 with matrix.sequential true`},
		{"deployment mode without a real node", Loader{Sets: []string{"lab.controllerMode=deployment"}}, `--set: key "lab.controllerMode": expected process unless lab.realNode is true (the Deployment's pod runs on the real node), got deployment`},
		{"bad controller image version", Loader{Sets: []string{"lab.realNode=true", "lab.controllerImages=latest"}}, `--set: key "lab.controllerImages": expected versions like v0.5.3, got "latest"`},
		{"bad provider", Loader{Flags: map[string]string{"cluster.provider": "eks"}}, `flag: key "cluster.provider": expected one of lab, kind, kubeconfig, got eks`},
		{"bad provider, named flag", Loader{Flags: map[string]string{"cluster.provider": "eks"}, FlagNames: flagNames}, `--cluster: key "cluster.provider": expected one of lab, kind, kubeconfig, got eks`},
		// A check that the user's own flag or --set triggers is labelled with it, not "default".
		{"kubeconfig needs a context", Loader{Flags: kubeconfigFlag, FlagNames: flagNames}, `--cluster: key "cluster.context": expected the name of the kubeconfig context to use (brakebench never picks a real cluster for you), got "" (because cluster.provider is "kubeconfig")`},
		{"bad mode", Loader{Sets: []string{"workload.mode=ramp"}}, `key "workload.mode": expected one of burst, poisson, steps, ceiling, got ramp`},
		// The ceiling search: each of its keys checked only in ceiling mode, with the mode named.
		{"ceiling factor 1", Loader{Sets: []string{"workload.mode=ceiling", "workload.ceiling.factor=1"}}, `key "workload.ceiling.factor": expected a step factor above 1, at most 10, got 1`},
		{"ceiling max below start", Loader{Sets: []string{"workload.mode=ceiling", "workload.ceiling.start=50", "workload.ceiling.max=10"}}, `key "workload.ceiling.max": expected a rate from workload.ceiling.start up to 100000 claims/s, got 10`},
		{"ceiling warm-up past the probe", Loader{Sets: []string{"workload.mode=ceiling", "workload.ceiling.warmup=30s", "workload.ceiling.probe=20s"}}, `key "workload.ceiling.warmup": expected a duration from 0s to under workload.ceiling.probe, got 30s`},
		{"ceiling unknown criterion", Loader{Sets: []string{"workload.mode=ceiling", "workload.ceiling.criteria=p99,latency"}}, `key "workload.ceiling.criteria": expected a non-empty list from p99, failed, cold, pool, lag, steady, got [p99 latency]`},
		{"ceiling NaN tolerance", Loader{Sets: []string{"workload.mode=ceiling", "workload.ceiling.tolerance=NaN"}}, `key "workload.ceiling.tolerance": expected a finite number, got NaN`},
		{"ceiling with a fault", Loader{Suite: "apf-throttle", Sets: []string{"workload.mode=ceiling"}}, `key "matrix.faults": expected none with workload.mode ceiling`},
		{"poisson needs a rate", Loader{Sets: []string{"workload.mode=poisson", "workload.rate=0"}}, `key "workload.rate": expected a positive rate`},
		{"steps need steps", Loader{Sets: []string{"workload.mode=steps"}}, `--set: key "workload.steps": expected a list of rates in claims/s, got [] (because workload.mode is "steps")`},
		{"bad step", Loader{Sets: []string{"workload.mode=steps", "workload.steps=5,-1"}}, `key "workload.steps": expected positive rates up to 100000 claims/s, item 1 is -1`},
		{"resize to the same size", Loader{Suite: "gang-quota", Sets: []string{"gangQuota.resizeTo=2"}}, `--set: key "gangQuota.resizeTo": expected a group size from 1 to 10000 other than gangQuota.size, got 2`},
		{"quota below the admitted group", Loader{Suite: "gang-quota", Sets: []string{"gangQuota.gpuQuota=1"}}, `--set: key "gangQuota.gpuQuota": expected a quota that admits gangQuota.replicas x size x gpusPerPod = 2 GPUs, got 1`},
		{"group grown past the quota", Loader{Suite: "gang-quota", Sets: []string{"gangQuota.size=5"}}, `--set: key "gangQuota.gpuQuota": expected a quota that admits gangQuota.replicas x size x gpusPerPod = 5 GPUs, got 4 (because gangQuota.size is 5)`},
		{"kind needs an exporter URL", Loader{Suite: "pool-autoscaling", Flags: map[string]string{"cluster.provider": "kind"}, FlagNames: flagNames}, `--cluster: key "poolAutoscaling.exporterURL": expected the URL where KEDA reaches`},
		{"karpenter nodes need the lab", Loader{Suite: "pool-autoscaling", Sets: []string{"poolAutoscaling.nodes=karpenter", "poolAutoscaling.exporterURL=http://x"}, Flags: map[string]string{"cluster.provider": "kind"}, FlagNames: flagNames}, `key "poolAutoscaling.nodes": expected existing unless cluster.provider is lab`},
		{"autoscale gpus per sandbox", Loader{Suite: "pool-autoscaling", Sets: []string{"poolAutoscaling.gpusPerSandbox=0"}}, `--set: key "poolAutoscaling.gpusPerSandbox": expected 1 to 8`},
		{"autoscale nodes", Loader{Suite: "pool-autoscaling", Sets: []string{"poolAutoscaling.nodes=spot"}}, `--set: key "poolAutoscaling.nodes": expected existing or karpenter, got spot`},
		{"unknown gang key", Loader{Suite: "gang-quota", Sets: []string{"gangQuota.sise=3"}}, `gangQuota.sise`},
		{"zero reps", Loader{Sets: []string{"matrix.repetitions=0"}}, `key "matrix.repetitions": expected 1 to 1000, got 0`},
		{"bad quantity", Loader{Sets: []string{"lab.nodes.memory=lots"}}, `key "lab.nodes.memory": expected a Kubernetes quantity like 64 or 256Gi, got "lots"`},
		{"bad identity", Loader{Sets: []string{"loadgen.identity=root"}}, `key "loadgen.identity": expected exempt or serviceaccount, got root`},
		{"zero connections", Loader{Sets: []string{"loadgen.connections=0"}}, `key "loadgen.connections": expected 1 to 1000, got 0`},
		{"zero in flight", Loader{Sets: []string{"loadgen.maxInFlight=0"}}, `key "loadgen.maxInFlight": expected 1 to 100000, got 0`},
		{"zero runner shards", Loader{Sets: []string{"loadgen.runnerShards=0"}}, `--set: key "loadgen.runnerShards": expected 1 to 64 (pods of the in-cluster runner's Job), got 0`},
		{"65 runner shards", Loader{Sets: []string{"loadgen.runner=in-cluster", "loadgen.runnerImage=x", "loadgen.identity=serviceaccount", "lab.realNode=true", "loadgen.runnerShards=65"}}, `--set: key "loadgen.runnerShards": expected 1 to 64 (pods of the in-cluster runner's Job), got 65`},
		{"runner shards on the local runner", Loader{Sets: []string{"loadgen.runnerShards=3"}}, `--set: key "loadgen.runnerShards": expected 1 unless loadgen.runner is in-cluster (only the in-cluster runner's Job is sharded over pods), got 3`},
		{"zero clock skew", Loader{Sets: []string{"loadgen.maxClockSkew=0s"}}, `--set: key "loadgen.maxClockSkew": expected a duration from 1ms to 10s, got 0s`},
		{"a clock skew of a minute", Loader{Sets: []string{"loadgen.maxClockSkew=1m"}}, `key "loadgen.maxClockSkew": expected a duration from 1ms to 10s, got 1m0s`},
		{"bad version", Loader{Sets: []string{"controller.version=latest"}}, `key "controller.version": expected a version like v0.5.5, got latest`},
		{"bad node label", Loader{Sets: []string{"lab.nodes.labels=gpu"}}, `key "lab.nodes.labels": expected key=value items, got "gpu"`},
		{"bad lab name", Loader{Sets: []string{"lab.name=My_Lab"}}, `key "lab.name": expected a lower-case DNS label, got My_Lab`},
		{"unknown suite", Loader{Suite: "nope"}, `no suite named "nope" (the suite is the command's argument, e.g. ` + "`brakebench run SUITE`" + `; known: apf-throttle, gang-quota, gpu-faults, pool-autoscaling, warmpool-burst, warmpool-sustained)`},
		// Upper bounds: a typo's extra zeros is an error, not a million objects or a week's wait.
		{"too many claims", Loader{Sets: []string{"workload.claims=1000000"}}, `--set: key "workload.claims": expected 1 to 100000, got 1000000`},
		{"too big a pool", Loader{Sets: []string{"workload.pool=10001"}}, `key "workload.pool": expected 0 to 10000, got 10001`},
		{"too many repetitions", Loader{Sets: []string{"matrix.repetitions=1001"}}, `key "matrix.repetitions": expected 1 to 1000, got 1001`},
		{"a timeout over a day", Loader{Env: []string{"BRAKEBENCH_WORKLOAD_REFILLTIMEOUT=25h"}}, `env BRAKEBENCH_WORKLOAD_REFILLTIMEOUT: key "workload.refillTimeout": expected a positive duration up to 24h, got 25h0m0s`},
		{"a poisson run over a day", Loader{Sets: []string{"workload.mode=poisson", "workload.duration=48h"}}, `key "workload.duration": expected a positive duration up to 24h, got 48h0m0s`},
		{"qps too high", Loader{Sets: []string{"loadgen.qps=1e6"}}, `key "loadgen.qps": expected 0 (unlimited) or a positive rate up to 100000, got 1e+06`},
		{"too many lab nodes", Loader{Sets: []string{"lab.nodes.count=20000"}}, `key "lab.nodes.count": expected 1 to 10000, got 20000`},
		{"gang observed for days", Loader{Suite: "gang-quota", Sets: []string{"gangQuota.observe=72h"}}, `key "gangQuota.observe": expected a positive duration up to 24h, got 72h0m0s`},
		{"profile step too big", Loader{Suite: "pool-autoscaling", Sets: []string{"poolAutoscaling.profiles=0-200000-0"}}, `key "poolAutoscaling.profiles": expected at most 100000 claims in a step, profile "0-200000-0" holds 200000`},
		// controller.args reach only the lab's controller (and pool-autoscaling's cells): refused
		// where a suite would ignore them.
		{"controller.args on a kubeconfig cluster", Loader{Suite: "warmpool-burst", Sets: []string{"controller.args=--a=1,--b"}, Flags: map[string]string{"cluster.provider": "kubeconfig", "cluster.context": "c"}},
			`--set: key "controller.args": suite warmpool-burst ignores it on a kubeconfig cluster (only the lab starts the controller with it); put flags every cell should add in matrix.controllerArgs instead, got the list ["--a=1", "--b"]`},
		{"controller.args on kind", Loader{Suite: "gang-quota", Files: []string{writeFile(t, "controller:\n  args: [--a]\n")}, Flags: map[string]string{"cluster.provider": "kind"}}, `:2: key "controller.args": suite gang-quota ignores it on a kind cluster`},
		{"unknown top-level --set key", Loader{Sets: []string{"workloads=3"}}, `--set: key "workloads": unknown key (known keys here: brakes, cluster, controller,`},
		// NaN and Inf are rejected in every float key (a Poisson schedule at rate NaN never ended).
		{"NaN rate", Loader{Sets: []string{"workload.mode=poisson", "workload.rate=NaN"}}, `key "workload.rate": expected a finite number, got NaN`},
		{"Inf rate", Loader{Sets: []string{"workload.mode=poisson", "workload.rate=+Inf"}}, `key "workload.rate": expected a finite number, got +Inf`},
		{"Inf brake rate", Loader{Sets: []string{"brakes.maxRefillRate=inf"}}, `key "brakes.maxRefillRate": expected a finite number, got +Inf`},
		{"NaN step", Loader{Sets: []string{"workload.mode=steps", "workload.steps=1,NaN"}}, `key "workload.steps": item 1: expected a finite number, got NaN`},
		{"NaN qps", Loader{Sets: []string{"loadgen.qps=nan"}}, `key "loadgen.qps": expected a finite number, got NaN`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.l.Load()
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			if !IsConfigError(err) {
				t.Errorf("not a config error: %T", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q\ndoes not contain %q", err.Error(), c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err.Error())
			}
			// Every case here is the user's doing: never labelled as a default, never Go syntax.
			for _, bad := range []string{"default:", "interface {}", "map[", "<nil>", "--suite"} {
				if strings.Contains(err.Error(), bad) {
					t.Errorf("error %q contains %q", err.Error(), bad)
				}
			}
		})
	}
}

func TestSettingsRoundTrip(t *testing.T) {
	r, err := Loader{Suite: "warmpool-burst"}.Load()
	if err != nil {
		t.Fatal(err)
	}
	s := r.Settings()
	wl := s["workload"].(map[string]any)
	if wl["claims"] != 300 || wl["claimTimeout"] != "3m0s" {
		t.Errorf("settings: %v", wl)
	}
}

func TestAxes(t *testing.T) {
	r, err := Loader{Sets: []string{"controller.versions=v0.5.3,v0.5.5", "matrix.controllerArgs=--sandbox-warm-pool-max-batch-size=50"}}.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Controller.Versions) != 2 || r.Matrix.ControllerArgs[0] != "--sandbox-warm-pool-max-batch-size=50" {
		t.Errorf("axes %v %v", r.Controller.Versions, r.Matrix.ControllerArgs)
	}
	for _, c := range []struct{ set, want string }{
		{"controller.versions=v0.5.5,latest", `key "controller.versions": expected versions like v0.5.5, got "latest"`},
		{"controller.versions=v0.5.5,v0.5.5", `version "v0.5.5" is listed twice`},
		{"matrix.controllerArgs=workers=4", `key "matrix.controllerArgs": expected flags like --sandbox-warm-pool-max-batch-size=50, got "workers=4"`},
	} {
		if _, err := (Loader{Sets: []string{c.set}}).Load(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.set, err)
		}
	}
}

// Errors in a file name the file and the 1-based line of the offending key (yaml.v3 numbers the
// lines of its parser errors from 0: they were reported one line early).
func TestFileLines(t *testing.T) {
	cases := []struct {
		name, body string
		want       string // after "<file>"
	}{
		{"unclosed list", "workload:\n  claims: 3\n  steps: [1, 2\n", `:3: not valid YAML: did not find expected ',' or ']'`},
		{"unclosed mapping", "workload:\n  claims: 3\n  pool: {a: 1\n", `:3: not valid YAML: did not find expected ',' or '}'`},
		{"bad indentation", "workload:\n  claims: 3\n pool: 4\n", `:3: not valid YAML: did not find expected key`},
		{"scanner error", "workload:\n  claims: 3\n  pool: 4\n    x: 1\n", `:4: not valid YAML: mapping values are not allowed in this context`},
		{"bad value", "# comment\n\nworkload:\n  claims: 3\n  claimTimeout: soon\n", `:5: key "workload.claimTimeout": expected a duration like 30s or 1m30s, got "soon"`},
		{"unknown key", "workload:\n  claims: 3\n\n  clams: 3\n", `:4: key "workload.clams": unknown key`},
		{"unknown section", "matrix:\n  repetitions: 2\nworkloads:\n  claims: 3\n", `:3: key "workloads": unknown key (known keys here: brakes, cluster, controller,`},
		{"validation", "lab:\n  name: x\n  nodes:\n    cpu: \"8\"\n    count: 0\n", `:5: key "lab.nodes.count": expected 1 to 10000, got 0`},
		{"key set twice", "workload:\n  claims: 3\n  Claims: 4\n", `:3: key "workload.Claims": is set twice (also on line 2)`},
		{"second document", "workload:\n  claims: 3\n\n---\nmatrix:\n  repetitions: 0\n", `:4: a second YAML document starts here (after ---): expected one document per file`},
		{"invalid second document", "workload:\n  claims: 3\n---\nmatrix: [\n", `:5: not valid YAML: did not find expected node content`},
		{"a list at the top", "- workload\n", `:1: expected a mapping of keys at the top level (like ` + "`workload:`" + `), got a list`},
		{"a value for a section", "workload: 3\n", `:1: key "workload": expected a mapping of the keys below it, got 3`},
		{"a list for a number", "workload:\n  claims: [1, 2]\n", `:2: key "workload.claims": expected a whole number, got the list [1, 2]`},
		{"a list for a string", "lab:\n  name: [a, b]\n", `:2: key "lab.name": expected a string, got the list ["a", "b"]`},
		{"a mapping for a string", "workload:\n  image: {}\n", `:2: key "workload.image": expected a string, got the mapping {}`},
		{"true for a string", "lab:\n  name: true\n", `:2: key "lab.name": expected a string, got true (quote it to mean the word)`},
		{"nothing for a number", "workload:\n  claims:\n", `:2: key "workload.claims": expected a whole number, got an empty value`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := writeFile(t, c.body)
			_, err := Loader{Files: []string{f}}.Load()
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			if !IsConfigError(err) || !strings.HasPrefix(err.Error(), f+c.want) {
				t.Errorf("error %q\nwant      %q", err.Error(), f+c.want)
			}
		})
	}
	// What one document may hold: a leading ---, a trailing empty document, an empty section,
	// anchors and merge keys (explicit keys win), and nothing at all.
	for _, body := range []string{
		"---\nworkload:\n  claims: 30\n",
		"workload:\n  claims: 30\n---\n",
		"matrix:\nworkload:\n  claims: 30\n",
		"workload:\n  <<: {claims: 7, pool: 30}\n  claims: 30\n",
		"",
		"# only a comment\n",
	} {
		r, err := Loader{Files: []string{writeFile(t, body)}}.Load()
		if err != nil {
			t.Errorf("%q: %v", body, err)
			continue
		}
		if body != "" && !strings.HasPrefix(body, "#") && r.Workload.Claims != 30 {
			t.Errorf("%q: claims %d, want 30", body, r.Workload.Claims)
		}
	}
}

// Every shipped suite file loads as it is, and every suite takes controller.args on the lab.
func TestShippedSuitesLoad(t *testing.T) {
	for _, s := range KnownSuites() {
		if _, err := (Loader{Suite: s}).Load(); err != nil {
			t.Errorf("%s: %v", s, err)
		}
		if _, err := (Loader{Suite: s, Sets: []string{"controller.args=--sandbox-warm-pool-max-batch-size=300"}}).Load(); err != nil {
			t.Errorf("%s with controller.args on the lab: %v", s, err)
		}
	}
	// pool-autoscaling passes controller.args to its cells on every cluster.
	if _, err := (Loader{Suite: "pool-autoscaling", Sets: []string{"controller.args=--a", "poolAutoscaling.exporterURL=http://x:8080/demand"},
		Flags: map[string]string{"cluster.provider": "kubeconfig", "cluster.context": "c"}}).Load(); err != nil {
		t.Error(err)
	}
}

// lab.housekeeping accepts none and any order of the known steps, and Steps splits it in order.
func TestLabHousekeepingSteps(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"none", ""},
		{"etcd-defrag", "etcd-defrag"},
		{"apiserver-restart", "apiserver-restart"},
		{"apiserver-restart+etcd-defrag", "apiserver-restart,etcd-defrag"},
		{"etcd-defrag+apiserver-restart", "etcd-defrag,apiserver-restart"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			r, err := (&Loader{Sets: []string{"lab.housekeeping=" + tc.in, "matrix.warmup=2"}}).Load()
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(r.Lab.Steps(), ","); got != tc.want {
				t.Errorf("steps %q, want %q", got, tc.want)
			}
			if r.Matrix.Warmup != 2 {
				t.Errorf("warm-up %d", r.Matrix.Warmup)
			}
		})
	}
}

// loadgen.runnerShards defaults to one pod and takes 1 to 64 with the in-cluster runner;
// loadgen.maxClockSkew defaults to 50ms.
func TestRunnerShards(t *testing.T) {
	inCluster := []string{"loadgen.runner=in-cluster", "loadgen.runnerImage=x", "loadgen.identity=serviceaccount", "lab.realNode=true"}
	cases := []struct {
		name      string
		sets      []string
		wantN     int
		wantSkew  time.Duration
		wantError string
	}{
		{"defaults", nil, 1, 50 * time.Millisecond, ""},
		{"three shards in-cluster", append(inCluster, "loadgen.runnerShards=3"), 3, 50 * time.Millisecond, ""},
		{"64 shards, a tighter bound", append(inCluster, "loadgen.runnerShards=64", "loadgen.maxClockSkew=5ms"), 64, 5 * time.Millisecond, ""},
		{"one shard on the local runner", []string{"loadgen.runnerShards=1"}, 1, 50 * time.Millisecond, ""},
		{"two shards on the local runner", []string{"loadgen.runnerShards=2"}, 0, 0, `key "loadgen.runnerShards": expected 1 unless loadgen.runner is in-cluster`},
		{"negative shards", append(inCluster, "loadgen.runnerShards=-1"), 0, 0, `key "loadgen.runnerShards": expected 1 to 64`},
		{"a negative skew", []string{"loadgen.maxClockSkew=-1ms"}, 0, 0, `key "loadgen.maxClockSkew": expected a duration from 1ms to 10s, got -1ms`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Loader{Suite: "warmpool-burst", Sets: c.sets}.Load()
			if c.wantError != "" {
				if err == nil || !IsConfigError(err) || !strings.Contains(err.Error(), c.wantError) {
					t.Fatalf("error %v, want a config error containing %q", err, c.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Loadgen.RunnerShards != c.wantN || r.Loadgen.MaxClockSkew != c.wantSkew {
				t.Errorf("runnerShards %d maxClockSkew %s, want %d %s", r.Loadgen.RunnerShards, r.Loadgen.MaxClockSkew, c.wantN, c.wantSkew)
			}
		})
	}
}
