package config

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// GateCells are the gang-quota suite's brake settings: Kueue's LWSImmutableGroupSize on or off.
// (The warm-pool suites' brakes are internal/brakes types; their planner checks matrix.brakes.)
var GateCells = []string{"gate-on", "gate-off"}

// FaultCells are the fault settings a warm-pool suite knows.
var FaultCells = []string{"none", "apf-throttle", "gpu", "scheduler-qps", "apiserver-inflight"}

var versionRe = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

func (r *Resolved) fail(key, format string, args ...any) error {
	return &Error{Source: r.Source(key), Key: key, Msg: fmt.Sprintf(format, args...)}
}

func oneOf(v string, allowed ...string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

func (r *Resolved) validate() error {
	if err := r.finiteFloats(); err != nil {
		return err
	}
	c := r.Config
	checks := []struct {
		bad  bool
		key  string
		want string
		got  any
	}{
		{!oneOf(c.Cluster.Provider, "lab", "kind", "kubeconfig"), "cluster.provider", "one of lab, kind, kubeconfig", c.Cluster.Provider},
		{c.Cluster.Provider == "kubeconfig" && c.Cluster.Context == "", "cluster.context", "the name of the kubeconfig context to use (brakebench never picks a real cluster for you)", `""`},
		{c.Lab.Name == "" || !regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`).MatchString(c.Lab.Name), "lab.name", "a lower-case DNS label", c.Lab.Name},
		{c.Lab.Nodes.Count < 1, "lab.nodes.count", "at least 1", c.Lab.Nodes.Count},
		{c.Lab.Nodes.Pods < 1, "lab.nodes.pods", "at least 1", c.Lab.Nodes.Pods},
		{c.Lab.Nodes.GPUs < 0, "lab.nodes.gpus", "0 or more", c.Lab.Nodes.GPUs},
		{c.Lab.PodBootDelay < 0, "lab.podBootDelay", "a duration of 0 or more", c.Lab.PodBootDelay},
		{c.Lab.PodBootJitter < 0, "lab.podBootJitter", "a duration of 0 or more", c.Lab.PodBootJitter},
		{c.Lab.UpTimeout <= 0, "lab.upTimeout", "a positive duration", c.Lab.UpTimeout},
		{c.Lab.HPASyncPeriod < time.Second, "lab.hpaSyncPeriod", "a duration of at least 1s", c.Lab.HPASyncPeriod},
		{c.Controller.Version != "" && !versionRe.MatchString(c.Controller.Version), "controller.version", "a version like v0.5.5", c.Controller.Version},
		{c.Workload.Pool < 0, "workload.pool", "0 or more", c.Workload.Pool},
		{!oneOf(c.Workload.Mode, "burst", "poisson", "steps"), "workload.mode", "one of burst, poisson, steps", c.Workload.Mode},
		{c.Workload.Mode == "burst" && c.Workload.Claims < 1, "workload.claims", "at least 1", c.Workload.Claims},
		{c.Workload.Mode == "poisson" && c.Workload.Rate <= 0, "workload.rate", "a positive rate in claims/s", c.Workload.Rate},
		{c.Workload.Mode != "burst" && c.Workload.Duration <= 0, "workload.duration", "a positive duration", c.Workload.Duration},
		{c.Workload.Mode == "steps" && len(c.Workload.Steps) == 0, "workload.steps", "a list of rates in claims/s", "[]"},
		{c.Workload.ClaimTimeout <= 0, "workload.claimTimeout", "a positive duration", c.Workload.ClaimTimeout},
		{c.Workload.RefillTimeout <= 0, "workload.refillTimeout", "a positive duration", c.Workload.RefillTimeout},
		{c.Workload.FillTimeout <= 0, "workload.fillTimeout", "a positive duration", c.Workload.FillTimeout},
		{c.Workload.Image == "", "workload.image", "a container image name", `""`},
		{c.Loadgen.Connections < 1, "loadgen.connections", "at least 1", c.Loadgen.Connections},
		{c.Loadgen.QPS < 0, "loadgen.qps", "0 (unlimited) or a positive rate", c.Loadgen.QPS},
		{c.Loadgen.Burst < 0, "loadgen.burst", "0 or more", c.Loadgen.Burst},
		{c.Loadgen.MaxInFlight < 1 || c.Loadgen.MaxInFlight > 100000, "loadgen.maxInFlight", "1 to 100000", c.Loadgen.MaxInFlight},
		{!oneOf(c.Loadgen.Identity, "exempt", "serviceaccount"), "loadgen.identity", "exempt or serviceaccount", c.Loadgen.Identity},
		{c.Matrix.Repetitions < 1, "matrix.repetitions", "at least 1", c.Matrix.Repetitions},
		{len(c.Matrix.Brakes) == 0, "matrix.brakes", "a non-empty list of brake cells (see `brakebench suites`)", "[]"},
		{c.Brakes.ReplenishDelay < 0, "brakes.replenishDelay", "a duration of 0 or more", c.Brakes.ReplenishDelay},
		{c.Brakes.MaxRefillRate < 0, "brakes.maxRefillRate", "0 or a positive rate in sandboxes/s", c.Brakes.MaxRefillRate},
		{c.Out == "", "out", "an output directory", `""`},
		{!oneOf(c.Faults.APF.Target, "controller", "loadgen"), "faults.apf.target", "controller or loadgen", c.Faults.APF.Target},
		{c.Faults.APF.Shares < 0, "faults.apf.shares", "0 or more", c.Faults.APF.Shares},
		{c.Faults.APF.Queues < 1, "faults.apf.queues", "at least 1", c.Faults.APF.Queues},
		{c.Faults.APF.QueueLength < 1, "faults.apf.queueLength", "at least 1", c.Faults.APF.QueueLength},
		{c.Faults.GPU.Nodes < 1, "faults.gpu.nodes", "at least 1", c.Faults.GPU.Nodes},
		{!oneOf(c.Faults.GPU.Kind, "xid", "ecc", "nvlink", "device-count"), "faults.gpu.kind", "one of xid, ecc, nvlink, device-count", c.Faults.GPU.Kind},
		{c.Faults.GPU.Kind == "xid" && c.Faults.GPU.XID < 1, "faults.gpu.xid", "an XID code like 79", c.Faults.GPU.XID},
		{!oneOf(c.Faults.GPU.Escalate, "none", "taint", "notready"), "faults.gpu.escalate", "one of none, taint, notready", c.Faults.GPU.Escalate},
		{c.Faults.GPU.ArmAfter < 0, "faults.gpu.armAfter", "a duration of 0 or more", c.Faults.GPU.ArmAfter},
		{c.Faults.GPU.MaxUnavailableFraction < 0 || c.Faults.GPU.MaxUnavailableFraction > 1, "faults.gpu.maxUnavailableFraction", "a fraction between 0 and 1", c.Faults.GPU.MaxUnavailableFraction},
		{c.Faults.ControlPlane.SchedulerQPS < 1, "faults.controlPlane.schedulerQPS", "at least 1", c.Faults.ControlPlane.SchedulerQPS},
		{c.Faults.ControlPlane.SchedulerBurst < 1, "faults.controlPlane.schedulerBurst", "at least 1", c.Faults.ControlPlane.SchedulerBurst},
		{c.Faults.ControlPlane.MaxRequestsInflight < 1, "faults.controlPlane.maxRequestsInflight", "at least 1", c.Faults.ControlPlane.MaxRequestsInflight},
		{c.Faults.ControlPlane.MaxMutatingRequestsInflight < 1, "faults.controlPlane.maxMutatingRequestsInflight", "at least 1", c.Faults.ControlPlane.MaxMutatingRequestsInflight},
		{len(c.Matrix.Faults) == 0, "matrix.faults", "a non-empty list of " + strings.Join(FaultCells, ", "), "[]"},
	}
	for _, ch := range checks {
		if ch.bad {
			return r.fail(ch.key, "expected %s, got %v", ch.want, ch.got)
		}
	}
	for _, q := range []struct{ key, val string }{{"lab.nodes.cpu", c.Lab.Nodes.CPU}, {"lab.nodes.memory", c.Lab.Nodes.Memory}} {
		if _, err := resource.ParseQuantity(q.val); err != nil {
			return r.fail(q.key, "expected a Kubernetes quantity like 64 or 256Gi, got %q", q.val)
		}
	}
	for _, l := range c.Lab.Nodes.Labels {
		k, _, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return r.fail("lab.nodes.labels", "expected key=value items, got %q", l)
		}
	}
	seenF := map[string]bool{}
	for _, f := range c.Matrix.Faults {
		if !oneOf(f, FaultCells...) {
			return r.fail("matrix.faults", "expected items from %s, got %q", strings.Join(FaultCells, ", "), f)
		}
		if seenF[f] {
			return r.fail("matrix.faults", "cell %q is listed twice", f)
		}
		seenF[f] = true
	}
	seenV := map[string]bool{}
	for _, v := range c.Controller.Versions {
		if !versionRe.MatchString(v) {
			return r.fail("controller.versions", "expected versions like v0.5.5, got %q", v)
		}
		if seenV[v] {
			return r.fail("controller.versions", "version %q is listed twice", v)
		}
		seenV[v] = true
	}
	for _, set := range c.Matrix.ControllerArgs {
		for _, f := range strings.Fields(set) {
			if !strings.HasPrefix(f, "--") {
				return r.fail("matrix.controllerArgs", "expected flags like --sandbox-warm-pool-max-batch-size=50, got %q", f)
			}
		}
	}
	for i, rate := range c.Workload.Steps {
		if rate <= 0 {
			return r.fail("workload.steps", "expected positive rates, item %d is %v", i, rate)
		}
	}
	if err := r.validateGang(); err != nil {
		return err
	}
	if err := r.validateAutoscale(); err != nil {
		return err
	}
	// A brake listed more than once is an A/A comparison: identical cells, which measure the noise
	// floor (the planner names the copies NAME_2, NAME_3, ...).
	if r.Suite == "gang-quota" {
		for _, b := range c.Matrix.Brakes {
			if !oneOf(b, GateCells...) {
				return r.fail("matrix.brakes", "expected items from %s, got %q", strings.Join(GateCells, ", "), b)
			}
		}
	}
	return nil
}

func (r *Resolved) validateGang() error {
	g := r.GangQuota
	checks := []struct {
		bad  bool
		key  string
		want string
		got  any
	}{
		{g.GPUQuota < 1, "gangQuota.gpuQuota", "at least 1", g.GPUQuota},
		{g.GPUsPerPod < 1, "gangQuota.gpusPerPod", "at least 1", g.GPUsPerPod},
		{g.Size < 1, "gangQuota.size", "at least 1", g.Size},
		{g.ResizeTo < 1 || g.ResizeTo == g.Size, "gangQuota.resizeTo", "a group size other than gangQuota.size", g.ResizeTo},
		{g.Replicas < 1, "gangQuota.replicas", "at least 1", g.Replicas},
		{g.ScaleReplicasTo <= g.Replicas, "gangQuota.scaleReplicasTo", "more groups than gangQuota.replicas", g.ScaleReplicasTo},
		{g.Replicas*g.Size*g.GPUsPerPod > g.GPUQuota, "gangQuota.gpuQuota", "a quota that admits gangQuota.replicas x size x gpusPerPod GPUs", g.GPUQuota},
		{g.Observe <= 0, "gangQuota.observe", "a positive duration", g.Observe},
		{g.AdmitTimeout <= 0, "gangQuota.admitTimeout", "a positive duration", g.AdmitTimeout},
		{g.KueueNamespace == "", "gangQuota.kueueNamespace", "a namespace", `""`},
		{g.KueueDeployment == "", "gangQuota.kueueDeployment", "a Deployment name", `""`},
	}
	for _, ch := range checks {
		if ch.bad {
			return r.fail(ch.key, "expected %s, got %v", ch.want, ch.got)
		}
	}
	for _, q := range []struct{ key, val string }{{"gangQuota.cpuQuota", g.CPUQuota}, {"gangQuota.memoryQuota", g.MemoryQuota}} {
		if _, err := resource.ParseQuantity(q.val); err != nil {
			return r.fail(q.key, "expected a Kubernetes quantity like 64 or 256Gi, got %q", q.val)
		}
	}
	return nil
}

// ParseProfile reads a demand profile "0-3-0" (claims held at each step; "," and spaces also
// separate steps in YAML).
func ParseProfile(p string) ([]int, error) {
	var out []int
	for _, f := range strings.FieldsFunc(p, func(r rune) bool { return r == '-' || r == ',' || r == ' ' }) {
		var n int
		if _, err := fmt.Sscanf(strings.TrimSpace(f), "%d", &n); err != nil || n < 0 || fmt.Sprint(n) != strings.TrimSpace(f) {
			return nil, fmt.Errorf("%q is not a claim count", f)
		}
		out = append(out, n)
	}
	if len(out) < 2 {
		return nil, fmt.Errorf("a profile needs at least two steps")
	}
	return out, nil
}

func (r *Resolved) validateAutoscale() error {
	a := r.Autoscale
	checks := []struct {
		bad  bool
		key  string
		want string
		got  any
	}{
		{len(a.Arms) == 0, "poolAutoscaling.arms", "a non-empty list of keda, control", "[]"},
		{len(a.Profiles) == 0, "poolAutoscaling.profiles", `a non-empty list of profiles like "0-3-0"`, "[]"},
		{a.StepDuration <= 0, "poolAutoscaling.stepDuration", "a positive duration", a.StepDuration},
		{a.MinReplicas < 1, "poolAutoscaling.minReplicas", "at least 1 (the HPA cannot scale a pool from 0)", a.MinReplicas},
		{a.MaxReplicas != 0 && a.MaxReplicas < a.MinReplicas, "poolAutoscaling.maxReplicas", "0 (the profile's largest step) or at least minReplicas", a.MaxReplicas},
		{!oneOf(a.MetricType, "AverageValue", "Value"), "poolAutoscaling.metricType", "AverageValue or Value", a.MetricType},
		{a.TargetValue <= 0, "poolAutoscaling.targetValue", "a positive number", a.TargetValue},
		{a.PollingInterval < time.Second, "poolAutoscaling.pollingInterval", "at least 1s", a.PollingInterval},
		{a.ScaleDownStabilization < 0 || a.ScaleDownStabilization > time.Hour, "poolAutoscaling.scaleDownStabilization", "between 0s and 1h", a.ScaleDownStabilization},
		{a.ScaleUpPods < 0, "poolAutoscaling.scaleUpPods", "0 (the HPA's default policies) or a positive pod count", a.ScaleUpPods},
		{a.ScaleUpPeriod < time.Second || a.ScaleUpPeriod > 30*time.Minute, "poolAutoscaling.scaleUpPeriod", "between 1s and 30m", a.ScaleUpPeriod},
		{a.HPASyncPeriod != 0 && a.HPASyncPeriod < time.Second, "poolAutoscaling.hpaSyncPeriod", "0 (leave it) or at least 1s", a.HPASyncPeriod},
		{a.SettleTimeout <= 0, "poolAutoscaling.settleTimeout", "a positive duration", a.SettleTimeout},
		{r.Cluster.Provider != "lab" && r.Suite == "pool-autoscaling" && a.ExporterURL == "", "poolAutoscaling.exporterURL",
			"the URL where KEDA reaches `brakebench exporter` on this cluster (only the lab serves it itself)", `""`},
	}
	for _, ch := range checks {
		if ch.bad {
			return r.fail(ch.key, "expected %s, got %v", ch.want, ch.got)
		}
	}
	seen := map[string]bool{}
	for _, arm := range a.Arms {
		if !oneOf(arm, "keda", "control") || seen[arm] {
			return r.fail("poolAutoscaling.arms", "expected distinct items from keda, control, got %q", arm)
		}
		seen[arm] = true
	}
	for _, p := range a.Profiles {
		if _, err := ParseProfile(p); err != nil {
			return r.fail("poolAutoscaling.profiles", "expected profiles like \"0-3-0\" (claims at each step): %v", err)
		}
	}
	return nil
}

// finiteFloats rejects NaN and ±Inf in every float key of c (a Poisson schedule at rate NaN or
// Inf never ends; a NaN threshold compares false with everything). It walks the struct by its
// mapstructure tags, so a float key added later is covered without a new check.
func (r *Resolved) finiteFloats() error {
	var walk func(v reflect.Value, prefix string) error
	walk = func(v reflect.Value, prefix string) error {
		switch v.Kind() {
		case reflect.Struct:
			t := v.Type()
			for i := 0; i < t.NumField(); i++ {
				f := t.Field(i)
				if !f.IsExported() {
					continue
				}
				key := strings.Split(f.Tag.Get("mapstructure"), ",")[0]
				p := prefix
				if key != "" {
					if p != "" {
						p += "."
					}
					p += key
				}
				if err := walk(v.Field(i), p); err != nil {
					return err
				}
			}
		case reflect.Float32, reflect.Float64:
			if x := v.Float(); math.IsNaN(x) || math.IsInf(x, 0) {
				return r.fail(prefix, "expected a finite number, got %v", x)
			}
		case reflect.Slice, reflect.Array:
			for i := 0; i < v.Len(); i++ {
				if err := walk(v.Index(i), prefix); err != nil {
					return err
				}
			}
		case reflect.Map:
			for _, k := range v.MapKeys() {
				if err := walk(v.MapIndex(k), prefix+"."+fmt.Sprint(k.Interface())); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(reflect.ValueOf(r.Config), "")
}
