package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cfg.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPrecedence(t *testing.T) {
	file := writeFile(t, "workload:\n  claims: 40\n  pool: 40\nmatrix:\n  repetitions: 2\n")
	cases := []struct {
		name        string
		l           Loader
		wantClaims  int
		wantReps    int
		wantPool    int
		claimSource string
	}{
		{"built-in default", Loader{}, 10, 1, 10, "default"},
		{"suite file over default", Loader{Suite: "warmpool-burst"}, 300, 5, 300, "configs/suites/warmpool-burst.yaml"},
		{"user file over suite file", Loader{Suite: "warmpool-burst", Files: []string{file}}, 40, 2, 40, file},
		{"env over file", Loader{Suite: "warmpool-burst", Files: []string{file}, Env: []string{"BRAKEBENCH_WORKLOAD_CLAIMS=50", "PATH=/bin"}}, 50, 2, 40, "env BRAKEBENCH_WORKLOAD_CLAIMS"},
		{"--set over env", Loader{Suite: "warmpool-burst", Files: []string{file}, Env: []string{"BRAKEBENCH_WORKLOAD_CLAIMS=50"}, Sets: []string{"workload.claims=60"}}, 60, 2, 40, "--set"},
		{"flag over --set", Loader{Sets: []string{"workload.claims=60"}, Flags: map[string]string{"workload.claims": "70"}}, 70, 1, 10, "flag"},
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
	if r.Workload.ClaimTimeout != 90*time.Second || r.Lab.PodBootDelay != time.Second || r.Brakes.MaxRefillRate != 2.5 {
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
	cases := []struct {
		name string
		l    Loader
		want string // substring of the one-line error
	}{
		{"missing file", Loader{Files: []string{"/nonexistent/bb.yaml"}}, "/nonexistent/bb.yaml: cannot read config file: no such file or directory"},
		{"invalid yaml", Loader{Files: []string{badYAML}}, badYAML + ": not valid YAML"},
		{"unknown key in file", Loader{Files: []string{unknownInFile}}, unknownInFile + `: key "workload.clams": unknown key (known keys here: workload.claimTimeout, workload.claims`},
		{"bad duration in file", Loader{Files: []string{badDurationInFile}}, badDurationInFile + `: key "workload.claimTimeout": expected a duration like 30s or 1m30s, got "soon"`},
		{"negative count in file", Loader{Files: []string{negativeInFile}}, negativeInFile + `: key "lab.nodes.count": expected at least 1, got -2`},
		{"unknown --set key", Loader{Sets: []string{"nope=1"}}, `--set: key "nope": unknown key`},
		{"--set without =", Loader{Sets: []string{"workload.claims"}}, `--set: "workload.claims" is not key=value`},
		{"bad number", Loader{Sets: []string{"workload.claims=many"}}, `--set: key "workload.claims": expected a whole number, got "many"`},
		{"bad bool-ish float", Loader{Sets: []string{"brakes.maxRefillRate=fast"}}, `--set: key "brakes.maxRefillRate": expected a number, got "fast"`},
		{"unknown env", Loader{Env: []string{"BRAKEBENCH_WORKLOAD_CLAMS=3"}}, "env BRAKEBENCH_WORKLOAD_CLAMS: unknown setting"},
		{"bad env duration", Loader{Env: []string{"BRAKEBENCH_WORKLOAD_CLAIMTIMEOUT=3"}}, `env BRAKEBENCH_WORKLOAD_CLAIMTIMEOUT: key "workload.claimTimeout": expected a duration`},
		{"negative duration", Loader{Sets: []string{"lab.podBootDelay=-1s"}}, `--set: key "lab.podBootDelay": expected a duration of 0 or more, got -1s`},
		{"zero timeout", Loader{Sets: []string{"workload.claimTimeout=0s"}}, `--set: key "workload.claimTimeout": expected a positive duration, got 0s`},
		{"zero claims", Loader{Sets: []string{"workload.claims=0"}}, `key "workload.claims": expected at least 1, got 0`},
		{"negative pool", Loader{Sets: []string{"workload.pool=-1"}}, `key "workload.pool": expected 0 or more, got -1`},
		{"bad provider", Loader{Flags: map[string]string{"cluster.provider": "eks"}}, `flag: key "cluster.provider": expected one of lab, kind, kubeconfig, got eks`},
		{"kubeconfig needs a context", Loader{Flags: map[string]string{"cluster.provider": "kubeconfig"}}, `key "cluster.context": expected the name of the kubeconfig context`},
		{"bad mode", Loader{Sets: []string{"workload.mode=ramp"}}, `key "workload.mode": expected one of burst, poisson, steps, got ramp`},
		{"poisson needs a rate", Loader{Sets: []string{"workload.mode=poisson", "workload.rate=0"}}, `key "workload.rate": expected a positive rate`},
		{"steps need steps", Loader{Sets: []string{"workload.mode=steps"}}, `key "workload.steps": expected a list of rates`},
		{"bad step", Loader{Sets: []string{"workload.mode=steps", "workload.steps=5,-1"}}, `key "workload.steps": expected positive rates, item 1 is -1`},
		{"resize to the same size", Loader{Suite: "gang-quota", Sets: []string{"gangQuota.resizeTo=2"}}, `key "gangQuota.resizeTo": expected a group size other than gangQuota.size, got 2`},
		{"quota below the admitted group", Loader{Suite: "gang-quota", Sets: []string{"gangQuota.gpuQuota=1"}}, `key "gangQuota.gpuQuota": expected a quota that admits`},
		{"unknown gang key", Loader{Suite: "gang-quota", Sets: []string{"gangQuota.sise=3"}}, `gangQuota.sise`},
		{"zero reps", Loader{Sets: []string{"matrix.repetitions=0"}}, `key "matrix.repetitions": expected at least 1, got 0`},
		{"bad quantity", Loader{Sets: []string{"lab.nodes.memory=lots"}}, `key "lab.nodes.memory": expected a Kubernetes quantity like 64 or 256Gi, got "lots"`},
		{"bad identity", Loader{Sets: []string{"loadgen.identity=root"}}, `key "loadgen.identity": expected exempt or serviceaccount, got root`},
		{"zero connections", Loader{Sets: []string{"loadgen.connections=0"}}, `key "loadgen.connections": expected at least 1, got 0`},
		{"zero in flight", Loader{Sets: []string{"loadgen.maxInFlight=0"}}, `key "loadgen.maxInFlight": expected 1 to 100000, got 0`},
		{"bad version", Loader{Sets: []string{"controller.version=latest"}}, `key "controller.version": expected a version like v0.5.5, got latest`},
		{"bad node label", Loader{Sets: []string{"lab.nodes.labels=gpu"}}, `key "lab.nodes.labels": expected key=value items, got "gpu"`},
		{"bad lab name", Loader{Sets: []string{"lab.name=My_Lab"}}, `key "lab.name": expected a lower-case DNS label, got My_Lab`},
		{"unknown suite", Loader{Suite: "nope"}, `no suite named "nope"`},
		// NaN and Inf are rejected in every float key (a Poisson schedule at rate NaN never ended).
		{"NaN rate", Loader{Sets: []string{"workload.mode=poisson", "workload.rate=NaN"}}, `key "workload.rate": expected a finite number, got NaN`},
		{"Inf rate", Loader{Sets: []string{"workload.mode=poisson", "workload.rate=+Inf"}}, `key "workload.rate": expected a finite number, got +Inf`},
		{"Inf brake rate", Loader{Sets: []string{"brakes.maxRefillRate=inf"}}, `key "brakes.maxRefillRate": expected a finite number, got +Inf`},
		{"NaN step", Loader{Sets: []string{"workload.mode=steps", "workload.steps=1,NaN"}}, `key "workload.steps": expected a finite number, got NaN`},
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
