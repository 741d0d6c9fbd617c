package e2e

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
	"github.com/brakebench/brakebench/loadgen"
)

// BenchmarkLoadgen compares the generator's achieved create rate with a plain parallel client-go
// create loop's, in the same run, with the controller stopped so only the create path is measured.
// The ratio (loadgen/plain, median of interleaved rounds) must be >= 0.9: the generator is not the
// bottleneck of a burst.
func BenchmarkLoadgen(b *testing.B) {
	const n, rounds = 300, 3
	ctx := context.Background()
	if err := theLab.StopController(labState); err != nil {
		b.Fatal(err)
	}
	defer func() {
		if _, err := theLab.StartController(context.Background(), labState, labState.Versions["agent-sandbox"], nil); err != nil {
			b.Errorf("restart controller: %v", err)
		}
	}()
	c := clients(b)
	ns := "e2e-loadgen-bench"
	if _, err := c.Typed.CoreV1().Namespaces().Create(ctx, nsObject(ns), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = c.Typed.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) }()
	clear := func() {
		if err := c.Dynamic.Resource(agentsandbox.ClaimGVR).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < b.N; i++ {
		var genRates, plainRates []float64
		for r := 0; r < rounds; r++ {
			// plain: one client (one connection), one goroutine per create, all released together
			clear()
			tmpl := &loadgen.Generator{Namespace: ns, Pool: "absent", Prefix: fmt.Sprintf("plain-%d-", r)}
			start := time.Now()
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for k := 0; k < n; k++ {
				wg.Add(1)
				go func(k int) {
					defer wg.Done()
					if _, err := c.Dynamic.Resource(agentsandbox.ClaimGVR).Namespace(ns).Create(ctx, tmpl.Claim(k, time.Now()), metav1.CreateOptions{}); err != nil {
						errs <- err
					}
				}(k)
			}
			wg.Wait()
			plainRates = append(plainRates, n/time.Since(start).Seconds())
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}

			clear()
			gen, err := loadgen.NewGenerator(c.Config, 4, 0, 0)
			if err != nil {
				b.Fatal(err)
			}
			gen.Namespace, gen.Pool, gen.Prefix = ns, "absent", fmt.Sprintf("gen-%d-", r)
			t0 := time.Now().Add(20 * time.Millisecond)
			sent := gen.Fire(ctx, t0, loadgen.Burst(n))
			first, last := sent[0].Intent, sent[0].Acked
			for _, s := range sent {
				if s.Err != "" {
					b.Fatal(s.Err)
				}
				if s.Intent.Before(first) {
					first = s.Intent
				}
				if s.Acked.After(last) {
					last = s.Acked
				}
			}
			genRates = append(genRates, n/last.Sub(first).Seconds())
		}
		sort.Float64s(genRates)
		sort.Float64s(plainRates)
		ratio := genRates[rounds/2] / plainRates[rounds/2]
		b.ReportMetric(genRates[rounds/2], "loadgen-creates/s")
		b.ReportMetric(plainRates[rounds/2], "plain-creates/s")
		b.ReportMetric(ratio, "ratio")
		fmt.Printf("loadgen %.0f creates/s vs plain client-go loop %.0f creates/s: ratio %.2f (median of %d interleaved rounds of %d)\n",
			genRates[rounds/2], plainRates[rounds/2], ratio, rounds, n)
		if ratio < 0.9 {
			b.Fatalf("loadgen achieved %.2f of a plain client-go loop's create rate, want >= 0.9", ratio)
		}
	}
	clear()
}
