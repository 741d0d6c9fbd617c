package config

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/brakebench/brakebench/internal/stats"
)

// GateCells are the gang-quota suite's brake settings: Kueue's LWSImmutableGroupSize on or off.
// (The warm-pool suites' brakes are internal/brakes types; their planner checks matrix.brakes.)
var GateCells = []string{"gate-on", "gate-off"}

var versionRe = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

func (r *Resolved) fail(key, format string, args ...any) error {
	return &Error{Source: r.Source(key), Key: key, Msg: fmt.Sprintf(format, args...)}
}

// failWith reports a check on key whose outcome also depends on the keys in also
// (cluster.context is required because cluster.provider is kubeconfig). The error is labelled
// with where the last-layered of these keys came from (the user's own flag or --set, not the
// default of the key the check is about), and names that key when it is not key itself.
func (r *Resolved) failWith(key string, also []string, format string, args ...any) error {
	by := key
	for _, k := range also {
		if r.layer[strings.ToLower(k)] > r.layer[strings.ToLower(by)] {
			by = k
		}
	}
	msg := fmt.Sprintf(format, args...)
	if by != key {
		flat := map[string]any{}
		flatten("", r.Config, flat)
		msg += fmt.Sprintf(" (because %s is %s)", by, describe(flat[strings.ToLower(by)]))
	}
	return &Error{Source: r.Source(by), Key: key, Msg: msg}
}

// Fail is what an owner of a section (a brake or fault type, which validates its own keys) reports
// for a value of key it refuses: a configuration error as Load's own checks make it, labelled with
// where the last-layered of key and the keys in also (those that decide whether the check applies)
// came from, naming that key when it is not key itself.
func (r *Resolved) Fail(key string, also []string, format string, args ...any) error {
	return r.failWith(key, also, format, args...)
}

// Upper bounds of counts, rates and durations: generous (the shipped suites use a few percent of
// them), they catch a typo's extra zeros before a run tries to create a million objects or wait
// for a week.
const (
	maxDuration = 24 * time.Hour // every duration key
	maxClaims   = 100000         // claims in a burst, claims held in a profile step
	maxRate     = 100000.0       // claims/s, QPS
	maxObjects  = 10000          // pool replicas, nodes, groups, pods per node
)

// outside reports whether v lies outside [lo, hi].
func outside[T int | int64 | float64 | time.Duration](v, lo, hi T) bool { return v < lo || v > hi }

func oneOf(v string, allowed ...string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

// housekeepingOK: lab.housekeeping is none or known steps, each at most once.
func housekeepingOK(l Lab) bool {
	if l.Housekeeping == "none" {
		return true
	}
	seen := map[string]bool{}
	for _, s := range l.Steps() {
		if seen[s] || !oneOf(s, HousekeepingSteps...) {
			return false
		}
		seen[s] = true
	}
	return len(seen) > 0
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
		{outside(c.Lab.Nodes.Count, 1, maxObjects), "lab.nodes.count", "1 to 10000", c.Lab.Nodes.Count},
		{outside(c.Lab.Nodes.Pods, 1, maxObjects), "lab.nodes.pods", "1 to 10000", c.Lab.Nodes.Pods},
		{outside(c.Lab.Nodes.GPUs, 0, 1024), "lab.nodes.gpus", "0 to 1024", c.Lab.Nodes.GPUs},
		{outside(c.Lab.PodBootDelay, 0, maxDuration), "lab.podBootDelay", "a duration from 0s to 24h", c.Lab.PodBootDelay},
		{outside(c.Lab.PodBootJitter, 0, maxDuration), "lab.podBootJitter", "a duration from 0s to 24h", c.Lab.PodBootJitter},
		{outside(c.Lab.UpTimeout, 1, maxDuration), "lab.upTimeout", "a positive duration up to 24h", c.Lab.UpTimeout},
		{outside(c.Lab.HPASyncPeriod, time.Second, maxDuration), "lab.hpaSyncPeriod", "a duration from 1s to 24h", c.Lab.HPASyncPeriod},
		{!housekeepingOK(c.Lab), "lab.housekeeping", "none, or steps joined by + from " + strings.Join(HousekeepingSteps, ", ") + " (each once)", c.Lab.Housekeeping},
		{!oneOf(c.Lab.ControllerMode, "process", "deployment"), "lab.controllerMode", "process or deployment", c.Lab.ControllerMode},
		{c.Lab.ControllerMode == "deployment" && !c.Lab.RealNode, "lab.controllerMode", "process unless lab.realNode is true (the Deployment's pod runs on the real node)", c.Lab.ControllerMode},
		{c.Controller.Version != "" && !versionRe.MatchString(c.Controller.Version), "controller.version", "a version like v0.5.5", c.Controller.Version},
		{outside(c.Workload.Pool, 0, maxObjects), "workload.pool", "0 to 10000", c.Workload.Pool},
		{!oneOf(c.Workload.Mode, "burst", "poisson", "steps", "ceiling"), "workload.mode", "one of burst, poisson, steps, ceiling", c.Workload.Mode},
		{!oneOf(c.Workload.Placement, "simulated", "real-node"), "workload.placement", "simulated or real-node", c.Workload.Placement},
		{c.Workload.Placement == "real-node" && c.Cluster.Provider == "lab" && !c.Lab.RealNode, "workload.placement", "simulated unless lab.realNode is true (real-node places the sandboxes on the lab's real node)", c.Workload.Placement},
		{c.Workload.Mode == "burst" && outside(c.Workload.Claims, 1, maxClaims), "workload.claims", "1 to 100000", c.Workload.Claims},
		{c.Workload.Mode == "poisson" && (c.Workload.Rate <= 0 || c.Workload.Rate > maxRate), "workload.rate", "a positive rate up to 100000 claims/s", c.Workload.Rate},
		{(c.Workload.Mode == "poisson" || c.Workload.Mode == "steps") && outside(c.Workload.Duration, 1, maxDuration), "workload.duration", "a positive duration up to 24h", c.Workload.Duration},
		{c.Workload.Mode == "steps" && len(c.Workload.Steps) == 0, "workload.steps", "a list of rates in claims/s", "[]"},
		{outside(c.Workload.ClaimTimeout, 1, maxDuration), "workload.claimTimeout", "a positive duration up to 24h", c.Workload.ClaimTimeout},
		{outside(c.Workload.RefillTimeout, 1, maxDuration), "workload.refillTimeout", "a positive duration up to 24h", c.Workload.RefillTimeout},
		{outside(c.Workload.FillTimeout, 1, maxDuration), "workload.fillTimeout", "a positive duration up to 24h", c.Workload.FillTimeout},
		{c.Workload.RefillProjection != 0 && outside(c.Workload.RefillProjection, time.Second, maxDuration), "workload.refillProjection", "0 (off) or a window from 1s to 24h", c.Workload.RefillProjection},
		{c.Workload.Image == "", "workload.image", "a container image name", `""`},
		{outside(c.Loadgen.Connections, 1, 1000), "loadgen.connections", "1 to 1000", c.Loadgen.Connections},
		{outside(c.Loadgen.QPS, 0, maxRate), "loadgen.qps", "0 (unlimited) or a positive rate up to 100000", c.Loadgen.QPS},
		{outside(c.Loadgen.Burst, 0, 100000), "loadgen.burst", "0 to 100000", c.Loadgen.Burst},
		{c.Loadgen.MaxInFlight < 1 || c.Loadgen.MaxInFlight > 100000, "loadgen.maxInFlight", "1 to 100000", c.Loadgen.MaxInFlight},
		{!oneOf(c.Loadgen.Identity, "exempt", "serviceaccount"), "loadgen.identity", "exempt or serviceaccount", c.Loadgen.Identity},
		{!oneOf(c.Loadgen.Runner, "local", "in-cluster"), "loadgen.runner", "local or in-cluster", c.Loadgen.Runner},
		{c.Loadgen.Runner == "in-cluster" && c.Loadgen.RunnerImage == "", "loadgen.runner", "local unless loadgen.runnerImage names a brakebench image the cluster can run (built from this repository with CGO_ENABLED=0)", c.Loadgen.Runner},
		{c.Loadgen.Runner == "in-cluster" && c.Loadgen.Identity != "serviceaccount", "loadgen.runner", "local unless loadgen.identity is serviceaccount (the runner sends as its own ServiceAccount, so the local runner it is compared with must too)", c.Loadgen.Runner},
		{c.Loadgen.Runner == "in-cluster" && (len(c.Matrix.Faults) != 1 || c.Matrix.Faults[0] != "none"), "loadgen.runner", "local unless matrix.faults is none (faults that strike the load generator need it in this process)", c.Loadgen.Runner},
		{c.Loadgen.Runner == "in-cluster" && c.Cluster.Provider == "lab" && !c.Lab.RealNode, "loadgen.runner", "local unless lab.realNode is true (the runner's pod runs on the lab's real node)", c.Loadgen.Runner},
		{outside(c.Loadgen.RunnerStartup, time.Second, time.Hour), "loadgen.runnerStartup", "a duration from 1s to 1h", c.Loadgen.RunnerStartup},
		{outside(c.Loadgen.RunnerShards, 1, 64), "loadgen.runnerShards", "1 to 64 (pods of the in-cluster runner's Job)", c.Loadgen.RunnerShards},
		{outside(c.Loadgen.MaxClockSkew, time.Millisecond, 10*time.Second), "loadgen.maxClockSkew", "a duration from 1ms to 10s", c.Loadgen.MaxClockSkew},
		{outside(c.Matrix.Repetitions, 1, 1000), "matrix.repetitions", "1 to 1000", c.Matrix.Repetitions},
		{outside(c.Matrix.Warmup, 0, 10), "matrix.warmup", "0 to 10", c.Matrix.Warmup},
		{c.Matrix.Sequential && c.Matrix.Repetitions > stats.MaxSeqReps, "matrix.repetitions", fmt.Sprintf("1 to %d with matrix.sequential true", stats.MaxSeqReps) + " (the planned maximum of the sequential design; set matrix.sequential=false for more)", c.Matrix.Repetitions},
		{outside(c.Matrix.MinRepetitions, 2, 1000), "matrix.minRepetitions", "2 to 1000 (the first look of the sequential design; above matrix.repetitions it is the fixed design)", c.Matrix.MinRepetitions},
		{c.Matrix.Equivalence < 0 || c.Matrix.Equivalence >= 100 || math.IsNaN(c.Matrix.Equivalence), "matrix.equivalence", "a percentage from 0 (off) to under 100", c.Matrix.Equivalence},
		{len(c.Matrix.StopOn) == 0 || !allOneOf(c.Matrix.StopOn, "claim.p50_ms", "claim.p99_ms"), "matrix.stopOn", "a non-empty list from claim.p50_ms, claim.p99_ms", c.Matrix.StopOn},
		{!oneOf(c.Matrix.Spending, "pocock", "obrien-fleming"), "matrix.spending", "pocock or obrien-fleming", c.Matrix.Spending},
		{len(c.Matrix.Brakes) == 0, "matrix.brakes", "a non-empty list of brake cells (see `brakebench suites`)", "[]"},
		{c.Out == "", "out", "an output directory", `""`},
		{len(c.Matrix.Faults) == 0, "matrix.faults", "a non-empty list of fault cells (none, or faults from `brakebench suites`)", "[]"},
	}
	// The keys whose values decide whether a check above applies at all.
	also := map[string][]string{
		"cluster.context":   {"cluster.provider"},
		"workload.claims":   {"workload.mode"},
		"workload.rate":     {"workload.mode"},
		"workload.duration": {"workload.mode"},
		"workload.steps":    {"workload.mode"},
	}
	for _, ch := range checks {
		if ch.bad {
			return r.failWith(ch.key, also[ch.key], "expected %s, got %v", ch.want, ch.got)
		}
	}
	// controller.args are the flags the lab starts the controller with. On kind and kubeconfig
	// clusters only pool-autoscaling adds them to its cells' flags: the warm-pool suites' cells
	// carry the brake and matrix.controllerArgs flags only, and gang-quota does not drive the
	// controller. Refused there rather than silently ignored.
	if len(c.Controller.Args) > 0 && c.Cluster.Provider != "lab" && r.Suite != "" && r.Suite != "pool-autoscaling" {
		return r.fail("controller.args",
			"suite %s ignores it on a %s cluster (only the lab starts the controller with it); put flags every cell should add in matrix.controllerArgs instead, got %s",
			r.Suite, c.Cluster.Provider, describe(c.Controller.Args))
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
		if seenF[f] {
			return r.fail("matrix.faults", "cell %q is listed twice", f)
		}
		seenF[f] = true
	}
	if c.Loadgen.RunnerShards > 1 && c.Loadgen.Runner != "in-cluster" {
		return r.failWith("loadgen.runnerShards", []string{"loadgen.runner"},
			"expected 1 unless loadgen.runner is in-cluster (only the in-cluster runner's Job is sharded over pods), got %d", c.Loadgen.RunnerShards)
	}
	if c.Loadgen.Runner == "in-cluster" && (r.Suite == "gang-quota" || r.Suite == "pool-autoscaling") {
		return r.fail("loadgen.runner", "expected local for suite %s (it fires no warm-pool burst; only the warm-pool suites run in-cluster), got in-cluster", r.Suite)
	}
	for _, v := range c.Lab.ControllerImages {
		if !versionRe.MatchString(v) {
			return r.fail("lab.controllerImages", "expected versions like v0.5.3, got %q", v)
		}
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
		if rate <= 0 || rate > maxRate {
			return r.fail("workload.steps", "expected positive rates up to 100000 claims/s, item %d is %v", i, rate)
		}
	}
	if err := r.validateNames(); err != nil {
		return err
	}
	if err := r.validateCeiling(); err != nil {
		return err
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
		{outside(g.GPUQuota, 1, maxClaims), "gangQuota.gpuQuota", "1 to 100000", g.GPUQuota},
		{outside(g.GPUsPerPod, 1, 1024), "gangQuota.gpusPerPod", "1 to 1024", g.GPUsPerPod},
		{outside(g.Size, 1, maxObjects), "gangQuota.size", "1 to 10000", g.Size},
		{outside(g.ResizeTo, 1, maxObjects) || g.ResizeTo == g.Size, "gangQuota.resizeTo", "a group size from 1 to 10000 other than gangQuota.size", g.ResizeTo},
		{outside(g.Replicas, 1, maxObjects), "gangQuota.replicas", "1 to 10000", g.Replicas},
		{g.ScaleReplicasTo <= g.Replicas || g.ScaleReplicasTo > maxObjects, "gangQuota.scaleReplicasTo", "more groups than gangQuota.replicas, up to 10000", g.ScaleReplicasTo},
		{outside(g.Observe, 1, maxDuration), "gangQuota.observe", "a positive duration up to 24h", g.Observe},
		{outside(g.AdmitTimeout, 1, maxDuration), "gangQuota.admitTimeout", "a positive duration up to 24h", g.AdmitTimeout},
		{g.KueueNamespace == "", "gangQuota.kueueNamespace", "a namespace", `""`},
		{g.KueueDeployment == "", "gangQuota.kueueDeployment", "a Deployment name", `""`},
	}
	also := map[string][]string{
		"gangQuota.resizeTo":        {"gangQuota.size"},
		"gangQuota.scaleReplicasTo": {"gangQuota.replicas"},
	}
	for _, ch := range checks {
		if ch.bad {
			return r.failWith(ch.key, also[ch.key], "expected %s, got %v", ch.want, ch.got)
		}
	}
	if g.Replicas*g.Size*g.GPUsPerPod > g.GPUQuota {
		return r.failWith("gangQuota.gpuQuota", []string{"gangQuota.replicas", "gangQuota.size", "gangQuota.gpusPerPod"},
			"expected a quota that admits gangQuota.replicas x size x gpusPerPod = %d GPUs, got %d", g.Replicas*g.Size*g.GPUsPerPod, g.GPUQuota)
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
		{outside(a.StepDuration, 1, maxDuration), "poolAutoscaling.stepDuration", "a positive duration up to 24h", a.StepDuration},
		{outside(a.MinReplicas, 1, maxObjects), "poolAutoscaling.minReplicas", "1 to 10000 (the HPA cannot scale a pool from 0)", a.MinReplicas},
		{a.MaxReplicas != 0 && outside(a.MaxReplicas, a.MinReplicas, maxObjects), "poolAutoscaling.maxReplicas", "0 (the profile's largest step) or from minReplicas to 10000", a.MaxReplicas},
		{!oneOf(a.MetricType, "AverageValue", "Value"), "poolAutoscaling.metricType", "AverageValue or Value", a.MetricType},
		{a.TargetValue <= 0 || a.TargetValue > maxClaims, "poolAutoscaling.targetValue", "a positive number up to 100000", a.TargetValue},
		{outside(a.PollingInterval, time.Second, maxDuration), "poolAutoscaling.pollingInterval", "a duration from 1s to 24h", a.PollingInterval},
		{a.ScaleDownStabilization < 0 || a.ScaleDownStabilization > time.Hour, "poolAutoscaling.scaleDownStabilization", "between 0s and 1h", a.ScaleDownStabilization},
		{outside(a.ScaleUpPods, 0, maxObjects), "poolAutoscaling.scaleUpPods", "0 (the HPA's default policies) or a pod count up to 10000", a.ScaleUpPods},
		{a.ScaleUpPeriod < time.Second || a.ScaleUpPeriod > 30*time.Minute, "poolAutoscaling.scaleUpPeriod", "between 1s and 30m", a.ScaleUpPeriod},
		{a.HPASyncPeriod != 0 && outside(a.HPASyncPeriod, time.Second, maxDuration), "poolAutoscaling.hpaSyncPeriod", "0 (leave it) or from 1s to 24h", a.HPASyncPeriod},
		{outside(a.SettleTimeout, 1, maxDuration), "poolAutoscaling.settleTimeout", "a positive duration up to 24h", a.SettleTimeout},
		{!oneOf(a.Nodes, "existing", "karpenter"), "poolAutoscaling.nodes", "existing or karpenter", a.Nodes},
		{a.Nodes == "karpenter" && r.Cluster.Provider != "lab", "poolAutoscaling.nodes", "existing unless cluster.provider is lab (karpenter runs the lab's own Karpenter)", a.Nodes},
		{outside(a.GPUsPerSandbox, 1, 8), "poolAutoscaling.gpusPerSandbox", "1 to 8 (the lab's GPU instance type has 8)", a.GPUsPerSandbox},
		{outside(a.ConsolidateAfter, time.Second, maxDuration), "poolAutoscaling.consolidateAfter", "a duration from 1s to 24h", a.ConsolidateAfter},
		{outside(a.RegistrationDelay, 0, maxDuration), "poolAutoscaling.registrationDelay", "a duration from 0s to 24h", a.RegistrationDelay},
		{r.Cluster.Provider != "lab" && r.Suite == "pool-autoscaling" && a.ExporterURL == "", "poolAutoscaling.exporterURL",
			"the URL where KEDA reaches `brakebench exporter` on this cluster (only the lab serves it itself)", `""`},
	}
	also := map[string][]string{
		"poolAutoscaling.maxReplicas": {"poolAutoscaling.minReplicas"},
		"poolAutoscaling.exporterURL": {"cluster.provider"},
	}
	if a.Nodes == "karpenter" {
		also["poolAutoscaling.nodes"] = []string{"cluster.provider"}
	}
	for _, ch := range checks {
		if ch.bad {
			return r.failWith(ch.key, also[ch.key], "expected %s, got %v", ch.want, ch.got)
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
		steps, err := ParseProfile(p)
		if err != nil {
			return r.fail("poolAutoscaling.profiles", "expected profiles like \"0-3-0\" (claims at each step): %v", err)
		}
		for _, n := range steps {
			if n > maxClaims {
				return r.fail("poolAutoscaling.profiles", "expected at most 100000 claims in a step, profile %q holds %d", p, n)
			}
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

// allOneOf reports whether every item is one of allowed.
func allOneOf(items []string, allowed ...string) bool {
	for _, it := range items {
		if !oneOf(it, allowed...) {
			return false
		}
	}
	return true
}
