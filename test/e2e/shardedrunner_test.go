//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/results"
)

// TestShardedInClusterRunner: the in-cluster runner sharded over an Indexed Job of 3 pods (on the
// lab's one real node) measures the same small cell as the one-pod runner: every claim fired
// once, by the shard it was dealt to, the shards' clocks agreeing within loadgen.maxClockSkew
// (one host: they share its clock), and claim latency of one order. Sizes are shrunk: 12 claims
// (4 a shard), 2 repetitions, descriptive only.
func TestShardedInClusterRunner(t *testing.T) {
	image := "brakebench.local/brakebench:e2e-runner"
	if _, err := runCLI(t, "lab", "import-image", "--ref", image, buildStaticCLI(t)); err != nil {
		t.Fatalf("lab import-image: %v", err)
	}
	const claims, shards = 12, 3
	// 15 s to start: three pods start together on the real node, and each estimates its clock
	// (up to ~4 s of probes) before T0.
	common := []string{"lab.realNode=true", "loadgen.identity=serviceaccount", fmt.Sprintf("workload.pool=%d", claims), fmt.Sprintf("workload.claims=%d", claims),
		"matrix.brakes=none", "matrix.repetitions=2", "loadgen.runner=in-cluster", "loadgen.runnerImage=" + image, "loadgen.runnerStartup=15s"}
	one, _, _ := runSuiteOut(t, "warmpool-burst", common...)
	three, _, _ := runSuiteOut(t, "warmpool-burst", append(common, fmt.Sprintf("loadgen.runnerShards=%d", shards))...)
	for _, r := range []*results.Results{one, three} {
		for _, cell := range r.Cells {
			if cell.Error != "" || cell.Stats.Failed != 0 || len(cell.Claims) != claims {
				t.Fatalf("cell %s: error %q, %d failed of %d", cell.ID, cell.Error, cell.Stats.Failed, len(cell.Claims))
			}
		}
	}
	for _, cell := range one.Cells {
		if !strings.HasPrefix(cell.Claims[0].Name, "claim-0") {
			t.Errorf("one shard renamed the claims: %s", cell.Claims[0].Name)
		}
	}
	for _, cell := range three.Cells {
		names := map[string]bool{}
		perShard := map[string]int{}
		for _, cl := range cell.Claims {
			if names[cl.Name] {
				t.Errorf("cell %s: claim %s twice", cell.ID, cl.Name)
			}
			names[cl.Name] = true
			shard, _, ok := strings.Cut(strings.TrimPrefix(cl.Name, "claim-"), "-")
			if !ok {
				t.Errorf("cell %s: claim %s is not named by its shard", cell.ID, cl.Name)
			}
			perShard["claim-"+shard]++
		}
		for k := 0; k < shards; k++ {
			if n := perShard[fmt.Sprintf("claim-s%d", k)]; n != claims/shards {
				t.Errorf("cell %s: shard %d fired %d claims, want %d (%v)", cell.ID, k, n, claims/shards, perShard)
			}
		}
		r := cell.Runner
		if r == nil {
			t.Fatalf("cell %s has no runner record (runCellInCluster must record it: fireInClusterInto)", cell.ID)
		}
		if r.Shards != shards || len(r.PerShard) != shards || r.ClockWarning != "" {
			t.Errorf("cell %s: runner %d shards, %d records, warning %q", cell.ID, r.Shards, len(r.PerShard), r.ClockWarning)
		}
		if r.ClockSpreadMS == nil || *r.ClockSpreadMS+*r.ClockSpreadErrorMS > r.MaxClockSkewMS {
			t.Errorf("cell %s: the shards' clock spread is not known within %.0f ms: %v", cell.ID, r.MaxClockSkewMS, r.ClockSpreadMS)
		}
		for _, sh := range r.PerShard {
			if sh.Claims != claims/shards || sh.SendLagMS.N != claims/shards || sh.Pod == "" {
				t.Errorf("cell %s: shard %+v", cell.ID, sh)
			}
			off, bound := "-", "-"
			if sh.ClockOffsetMS != nil {
				off, bound = fmt.Sprintf("%+.1f", *sh.ClockOffsetMS), fmt.Sprintf("%.1f", *sh.ClockErrorMS)
			}
			t.Logf("  %s shard %d on %s: send lag p50 %.1f ms p99 %.1f ms (n %d), clock vs harness %s ± %s ms", cell.ID, sh.Index, sh.Node,
				sh.SendLagMS.P50, sh.SendLagMS.P99, sh.SendLagMS.N, off, bound)
		}
		t.Logf("  %s shards' clock spread %.1f ± %.1f ms", cell.ID, *r.ClockSpreadMS, *r.ClockSpreadErrorMS)
	}
	t.Logf("claim latency, same cell (none, 2 repetitions x %d claims), 1 vs %d shards:", claims, shards)
	for _, key := range []string{"claim.p50_ms", "claim.p90_ms", "claim.p99_ms"} {
		a, aok := one.Find("none", key)
		b, bok := three.Find("none", key)
		if !aok || !bok {
			t.Fatalf("%s missing (1 shard %v, %d shards %v)", key, aok, shards, bok)
		}
		t.Logf("  %-14s 1 shard %7.1f ms   %d shards %7.1f ms", key, float64(a.Value), shards, float64(b.Value))
		// The same cell on the same lab: of one order (a wide band, as for the local and
		// in-cluster runners: it catches a broken merge or a clock mix-up, not noise).
		if key == "claim.p50_ms" && (float64(b.Value) > 3*float64(a.Value) || float64(a.Value) > 3*float64(b.Value)) {
			t.Errorf("%s: 1 shard %.1f ms vs %d shards %.1f ms differ more than 3x", key, float64(a.Value), shards, float64(b.Value))
		}
	}
}
