//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/brakebench/brakebench/internal/stats"
	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
	"github.com/brakebench/brakebench/loadgen"
)

// BenchmarkLoadgen compares the generator's achieved create rate with a plain parallel client-go
// create loop's, in the same run, with the controller stopped so only the create path is measured.
// Both are measured from the first request sent to the last response, over 1000 creates, in 12
// paired rounds (each round runs both, the order alternating). It fails only when the sign-test
// upper bound of the median paired ratio (loadgen/plain) lies below 0.9: at least 11 of the 12
// rounds had the generator below 0.9 of the plain loop. When the true median ratio is 0.9 that
// happens with probability P(Binomial(12, 1/2) >= 11) = 0.32%; at a true ratio of 1.0 (the
// generator's measured one) it is far rarer (TestPairedCalibration simulates both). Noise alone
// widens the interval instead of failing the benchmark.
func BenchmarkLoadgen(b *testing.B) {
	const n, pairs, alpha = 1000, 12, 0.01
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
		time.Sleep(time.Second) // let the deletion's aftermath (watch fan-out, compaction) settle
	}
	// Both clients are made once and warmed, as a long-lived client would be.
	gen, err := loadgen.NewGenerator(c.Config, 4, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	gen.Namespace, gen.Pool = ns, "absent"
	if err := gen.Warm(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Dynamic.Resource(agentsandbox.ClaimGVR).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		b.Fatal(err)
	}
	// plain: one client (one connection), one goroutine per create, all released together,
	// measured like the generator: first request sent -> last response.
	plainRound := func(b *testing.B, ctx context.Context, r int) float64 {
		clear()
		tmpl := &loadgen.Generator{Namespace: ns, Pool: "absent", Prefix: fmt.Sprintf("plain-%d-", r)}
		starts, ends := make([]time.Time, n), make([]time.Time, n)
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for k := 0; k < n; k++ {
			wg.Add(1)
			go func(k int) {
				defer wg.Done()
				starts[k] = time.Now()
				if _, err := c.Dynamic.Resource(agentsandbox.ClaimGVR).Namespace(ns).Create(ctx, tmpl.Claim(k, starts[k]), metav1.CreateOptions{}); err != nil {
					errs <- err
				}
				ends[k] = time.Now()
			}(k)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		first, last := starts[0], ends[0]
		for k := range starts {
			if starts[k].Before(first) {
				first = starts[k]
			}
			if ends[k].After(last) {
				last = ends[k]
			}
		}
		return n / last.Sub(first).Seconds()
	}
	genRound := func(b *testing.B, ctx context.Context, r int) float64 {
		clear()
		gen.Prefix = fmt.Sprintf("gen-%d-", r)
		sent := gen.Fire(ctx, time.Now().Add(20*time.Millisecond), loadgen.Burst(n))
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
		return n / last.Sub(first).Seconds()
	}
	for i := 0; i < b.N; i++ {
		var genRates, plainRates []float64
		for r := 0; r < pairs; r++ {
			// The two sides alternate which goes first: each round's second run follows the
			// deletion of the first run's 1000 claims, and whatever that leaves the API server
			// to do must not always land on the same side.
			var g, p float64
			if r%2 == 0 {
				p = plainRound(b, ctx, r)
				g = genRound(b, ctx, r)
			} else {
				g = genRound(b, ctx, r)
				p = plainRound(b, ctx, r)
			}
			genRates, plainRates = append(genRates, g), append(plainRates, p)
			fmt.Printf("round %2d (%s first): loadgen %4.0f creates/s, plain %4.0f creates/s, ratio %.3f\n", r+1, map[bool]string{true: "plain", false: "loadgen"}[r%2 == 0], g, p, g/p)
		}
		pr := stats.Paired(genRates, plainRates, alpha)
		b.ReportMetric(stats.Median(genRates), "loadgen-creates/s")
		b.ReportMetric(stats.Median(plainRates), "plain-creates/s")
		b.ReportMetric(pr.Median, "median-ratio")
		b.ReportMetric(pr.Lo, "ratio-lo")
		b.ReportMetric(pr.Hi, "ratio-hi")
		fmt.Printf("loadgen/plain create rate over %d paired rounds of %d creates: median ratio %.3f, %.0f%% bounds [%.3f, %.3f] (sign test: order statistics %d and %d of %d)\n",
			pairs, n, pr.Median, 100*(1-2*stats.BinomialUpperTail(pairs, pr.Rank)), pr.Lo, pr.Hi, pairs+1-pr.Rank, pr.Rank, pairs)
		if pr.Hi < 0.9 {
			b.Fatalf("the generator is slower than 0.9 of a plain client-go loop: the upper bound of the median paired ratio is %.3f (%d of %d rounds below it)", pr.Hi, pr.Rank, pairs)
		}
	}
	clear()
}
