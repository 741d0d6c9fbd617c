//go:build e2e

package e2e

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCeilingSearchOnTheLab runs the ceiling search (workload.mode ceiling) shrunken, with and
// without a brake that must lower it: kube-api-qps at 5 requests/s spaces the controller's writes
// (a warm adoption takes several), so it cannot keep up with claims at the rates the lab
// sustains without it (~15/s on 2 cores). Each cell gets 2 searches of at most 5 probes of 6 s
// (1 s warm-up; a claim not Ready 8 s after it was sent has failed) from 2 claims/s, doubling,
// then bisecting to within 30%; a pool of 16. (Probes of 8 s, settle 15 s, 6 probes and a pool
// of 20 took 322 s of CI's e2e package, 2026-12-06.) Checked: every repetition
// searched and left a bracket consistent with its probes (Pass the highest rate that held below
// Fail, the lowest that broke), the brake's ceiling below the baseline's, the summary's estimate,
// the gate operand ceiling.claims_per_second, and the report's ceiling section with both charts.
//
// Ceiling runs on this lab have shown one pool member beyond spec and one refill create more than
// the slots taken in some repetitions (3 of the 13 ceiling repetitions measured; not explained:
// README "Sustained ceiling per brake cell"); runSuiteOut accepts that, reported (overCreation).
func TestCeilingSearchOnTheLab(t *testing.T) {
	r, dir, stdout := runSuiteOut(t, "warmpool-sustained", "workload.mode=ceiling", "workload.pool=16",
		"matrix.brakes=none,kube-api-qps", "matrix.repetitions=2", "matrix.seed=24",
		"brakes.kubeAPIQPS=5", "brakes.kubeAPIBurst=5",
		"workload.ceiling.start=2", "workload.ceiling.factor=2", "workload.ceiling.max=32", "workload.ceiling.tolerance=0.3",
		"workload.ceiling.maxProbes=5", "workload.ceiling.probe=6s", "workload.ceiling.warmup=1s", "workload.ceiling.settle=8s",
		"workload.ceiling.slo=4s", "workload.ceiling.criteria=p99,failed,steady", "workload.refillTimeout=40s")
	pass := map[string][]float64{}
	for _, c := range r.Cells {
		if c.Error != "" {
			t.Errorf("%s: %s", c.ID, c.Error)
			continue
		}
		s := c.Stats.Sustained
		if s == nil || len(s.Probes) == 0 {
			t.Errorf("%s: no ceiling search recorded", c.ID)
			continue
		}
		hi, lo := 0.0, math.Inf(1)
		for _, p := range s.Probes {
			t.Logf("%s: %.3g/s %v p99 %v completed %.3g/s: %s", c.ID, p.Rate, p.OK, float64(p.P99MS), p.Completed, p.Reason)
			if p.OK {
				hi = math.Max(hi, p.Rate)
			} else {
				lo = math.Min(lo, p.Rate)
			}
			if p.Sent == 0 || p.Reason == "" {
				t.Errorf("%s: probe at %.3g/s sent %d claims, reason %q", c.ID, p.Rate, p.Sent, p.Reason)
			}
		}
		if float64(s.Fail) != lo || float64(s.Pass) > hi || float64(s.Pass) >= float64(s.Fail) {
			t.Errorf("%s: bracket [%v, %v] does not follow its probes (highest held %v, lowest broke %v)", c.ID, float64(s.Pass), float64(s.Fail), hi, lo)
		}
		t.Logf("%s: [%v, %v] %s", c.ID, float64(s.Pass), float64(s.Fail), s.Stop)
		pass[c.Name] = append(pass[c.Name], float64(s.Pass))
	}
	if len(pass["none"]) != 2 || len(pass["kube-api-qps"]) != 2 {
		t.Fatalf("searches per cell: %v", pass)
	}
	if gm(pass["kube-api-qps"]) >= gm(pass["none"]) {
		t.Errorf("kube-api-qps at 5/s sustained %v claims/s, not below the baseline's %v", pass["kube-api-qps"], pass["none"])
	}
	for _, s := range r.Summary {
		if s.Sustained == nil || s.Sustained.Text == "" || s.Sustained.N != 2 {
			t.Errorf("%s: summary estimate %+v", s.Name, s.Sustained)
			continue
		}
		t.Logf("%s: %s", s.Name, s.Sustained.Text)
		if _, ok := r.Find(s.Name, "ceiling.claims_per_second"); !ok {
			t.Errorf("%s: no ceiling.claims_per_second row", s.Name)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="ceiling"`, "Ceiling search: completed vs offered rate", "Ceiling search: claim p99 vs offered rate"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if !strings.Contains(stdout, "sustained ceiling (against none):") || !strings.Contains(stdout, "kube-api-qps: ") {
		t.Errorf("terminal lacks the ceiling lines")
	}
}

func gm(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += math.Log(math.Max(x, 1e-9))
	}
	return math.Exp(s / float64(len(xs)))
}
