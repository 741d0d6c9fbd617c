package suites

import (
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/results"
)

func TestGangQuotaPlan(t *testing.T) {
	cfg, err := config.Loader{Suite: "gang-quota", Sets: []string{"matrix.repetitions=2", "matrix.seed=3"}}.Load()
	if err != nil {
		t.Fatal(err)
	}
	p, err := GangQuota().Plan(cfg, PlanContext{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Cells) != 4 || p.Baseline != "gate-on" || strings.Join(p.Names, ",") != "gate-on,gate-off" {
		t.Fatalf("plan %+v", p)
	}
	for _, c := range p.Cells {
		want := "--feature-gates=LWSImmutableGroupSize=" + map[string]string{"gate-on": "true", "gate-off": "false"}[c.Name]
		if len(c.Flags) != 1 || c.Flags[0] != want {
			t.Errorf("%s flags %v, want %s", c.ID, c.Flags, want)
		}
	}
	if _, err := (config.Loader{Suite: "gang-quota", Sets: []string{"matrix.brakes=none"}}).Load(); err == nil || !strings.Contains(err.Error(), "gate-on, gate-off") {
		t.Errorf("a warm-pool brake in gang-quota must be refused naming the arms: %v", err)
	}
}

func TestSummarizeGang(t *testing.T) {
	samples := func(pairs ...[2]int) []results.GangSample {
		var out []results.GangSample
		for i, p := range pairs {
			out = append(out, results.GangSample{T: float64(i), GPUsRunning: p[0], ReservedGPUs: p[1]})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		g        results.Gang
		over     int
		unres    int
		contains string
	}{
		{"rejected", results.Gang{QuotaGPUs: 4, Samples: samples([2]int{2, 2}, [2]int{4, 4}),
			Steps: []results.GangStep{{Name: "resize", Error: `admission webhook "v" denied the request: spec.leaderWorkerTemplate.size: Invalid value: 8: field is immutable`}}},
			0, 0, "size update rejected (spec.leaderWorkerTemplate.size: Invalid value: 8: field is immutable)"},
		{"bypass", results.Gang{QuotaGPUs: 4, Samples: samples([2]int{2, 2}, [2]int{8, 2}, [2]int{8, 2}),
			Steps: []results.GangStep{{Name: "resize", Accepted: true}}},
			4, 6, "8 against a quota of 4 (Kueue reserved 2 then): 4 over quota, bypass ratio 4.00"},
		{"finished instead", results.Gang{QuotaGPUs: 4, Samples: samples([2]int{2, 2}, [2]int{2, 0}, [2]int{0, 0}),
			Steps: []results.GangStep{{Name: "resize", Accepted: true, End: results.GangSample{PodsGated: 8},
				Workloads: []string{"w: QuotaReserved (QuotaReserved: x); Finished (OutOfSync: The prebuilt workload is out of sync with its user job)"}}}},
			0, 2, "Workload w went Finished (OutOfSync"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.g
			summarizeGang(&g)
			if g.OverQuotaGPUs != tc.over || g.PeakUnreservedGPUs != tc.unres || !strings.Contains(g.Outcome, tc.contains) {
				t.Errorf("over %d unreserved %d outcome %q", g.OverQuotaGPUs, g.PeakUnreservedGPUs, g.Outcome)
			}
		})
	}
}
