package suites

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/memwatch"
	"github.com/brakebench/brakebench/internal/recorder"
	"github.com/brakebench/brakebench/internal/recorder/recordertest"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/loadgen"
	"github.com/brakebench/brakebench/reports"
)

// Scale limits: the harness holds 30,000 claims in 300 MiB and, issue 24, 100,000 in 400 MiB
// (its memory while tracking every claim, sandbox and pod and reporting them; README "Scale").
var scaleCases = []scaleCase{
	{30000, 300},
	{100000, 400},
}

type scaleCase struct {
	claims   int
	limitMiB float64 // fails above
}

const scaleReportTarget = 5 * time.Second

const mib = memwatch.MiB

// BenchmarkScaleReplay replays the watch events of a burst of N claims through the recorder's
// real informers and then through the analysis and the report writers, as a cell of that size
// would go, once per size in scaleCases (BRAKEBENCH_SCALE_CLAIMS: that size only, against the
// limit of the smallest case at least as big, or the largest's; BRAKEBENCH_SCALE_HEAPPROFILE=F
// writes a heap profile F.<claims> after the replay): a pool of 1000 warm sandboxes, the first 1000
// claims adopt them (the pool refills), the rest start cold; every sandbox gets a pod that is
// scheduled and becomes Ready. Objects carry managedFields and the fields real ones have.
// It reports the process's peak memory while tracking and reporting, and the time from the
// assembly to report.html, results.json and junit.xml on disk; it fails above the size's memory
// limit, or when the report takes more than three times its 5 s target (a regression, not noise).
func BenchmarkScaleReplay(b *testing.B) {
	cases := scaleCases
	if v, err := strconv.Atoi(os.Getenv("BRAKEBENCH_SCALE_CLAIMS")); err == nil && v > 0 {
		limit := scaleCases[len(scaleCases)-1].limitMiB
		for i := len(scaleCases) - 1; i >= 0 && scaleCases[i].claims >= v; i-- {
			limit = scaleCases[i].limitMiB
		}
		cases = []scaleCase{{v, limit}}
	}
	for _, c := range cases {
		b.Run(fmt.Sprintf("claims=%d", c.claims), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				scaleReplay(b, c.claims, c.limitMiB)
			}
		})
	}
}

// scaleReplay is one replay of n claims; it fails above limitMiB.
func scaleReplay(b *testing.B, n int, limitMiB float64) {
	const pool, poolName, ns = 1000, "bench-pool", "scale"
	debug.FreeOSMemory() // the idle baseline: return what setting up (and an earlier size) left behind
	base, baseLive := memwatch.Footprint(), memwatch.LiveHeap()
	fp := memwatch.Watch()
	start := time.Now()

	s, infs := recordertest.New(100) // a live watch buffers little more: client-go decodes its stream into an unbuffered channel
	rec, err := recorder.StartInformers(context.Background(), infs, ns)
	if err != nil {
		b.Fatal(err)
	}
	// Ready is stamped on the harness clock when the recorder sees it, so the burst is placed
	// just before the replay: latencies are then the replay's own delays (seconds).
	t0 := time.Now().Add(-time.Duration(n) * time.Millisecond).Truncate(time.Second)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	sent := make([]loadgen.Sent, n)
	names := make([]string, n)
	events := replay(s, ns, poolName, pool, n, at, sent, names)
	ok := rec.WaitFor(context.Background(), 5*time.Minute, func() bool {
		c, sb, p := rec.Counts()
		return c == n+1 && sb == n+pool+1 && p == n+pool+1 && rec.ReadyAmong(names) == n && rec.ClaimReady("zz-end")
	})
	if !ok {
		c, sb, p := rec.Counts()
		b.Fatalf("replay not drained: %d claims, %d sandboxes, %d pods seen", c, sb, p)
	}
	replayed := time.Since(start)
	replayPeak := fp.Stop()
	fp = memwatch.Watch()
	tracked := memwatch.LiveHeap()
	if f := os.Getenv("BRAKEBENCH_SCALE_HEAPPROFILE"); f != "" {
		writeHeapProfile(b, fmt.Sprintf("%s.%d", f, n))
	}

	// The report path: the cell's assembly from the recorder's records, read in place, as the
	// cell ends; the recorder stops with the cell (its scope's reverts), before the run ends with
	// the summary, results.json, HTML and JUnit.
	rs := time.Now()
	var cell results.Cell
	rec.Read(func(v recorder.View) {
		cell = assemble(cellInput{
			cell: results.Cell{ID: "scale#1", Name: "scale", Rep: 1}, snap: v, sent: sent,
			t0: t0, end: at(5 * time.Minute), pool: poolName, poolSize: pool, claimTimeout: 5 * time.Minute,
		})
	})
	rec.Stop()
	r := &results.Results{Schema: results.SchemaVersion, Suite: "warmpool-burst", RunID: "scale", Seed: 1,
		StartedAt: t0, EndedAt: at(5 * time.Minute), Cells: []results.Cell{cell}, CellOrder: []string{cell.ID}}
	r.Summary = analysis.Summarize(r.Cells, []string{"scale"}, "scale", r.Seed)
	dir := b.TempDir()
	if _, err := results.Write(dir, r); err != nil {
		b.Fatal(err)
	}
	if _, _, err := reports.WriteAll(dir, r, nil); err != nil {
		b.Fatal(err)
	}
	report := time.Since(rs)
	peak := max(replayPeak, fp.Stop())
	fmt.Printf("peak above idle while replaying %.0f MiB, while reporting %.0f MiB\n", float64(replayPeak-min(base, replayPeak))/mib, float64(peak-min(base, peak))/mib)
	html, _ := os.Stat(dir + "/report.html")
	raw, _ := os.Stat(dir + "/results.json")

	if cell.Stats.Total != n || cell.Stats.Failed != 0 || cell.Stats.Warm != pool || cell.Stats.Cold != n-pool {
		b.Fatalf("replayed cell counts %d total, %d failed, %d warm, %d cold; want %d, 0, %d, %d",
			cell.Stats.Total, cell.Stats.Failed, cell.Stats.Warm, cell.Stats.Cold, n, pool, n-pool)
	}
	peakMiB, trackedMiB := float64(peak-min(base, peak))/mib, float64(tracked-min(baseLive, tracked))/mib
	b.ReportMetric(peakMiB, "peak-MiB")
	b.ReportMetric(trackedMiB, "tracked-MiB")
	b.ReportMetric(report.Seconds(), "report-s")
	b.ReportMetric(float64(events)/replayed.Seconds(), "events/s")
	fmt.Printf("scale replay: %d claims (%d sandboxes, %d pods, %d watch events) replayed in %s (%.0f events/s); "+
		"memory above the idle process: peak %.0f MiB held from the OS, %.0f MiB live heap after GC while tracking; "+
		"report (assembly, summary, results.json %.1f MiB, report.html %.1f MiB, junit.xml) in %s\n",
		n, n+pool, n+pool, events, replayed.Round(time.Millisecond), float64(events)/replayed.Seconds(),
		peakMiB, trackedMiB, float64(size(raw))/mib, float64(size(html))/mib, report.Round(time.Millisecond))
	if peakMiB > limitMiB {
		b.Errorf("peak memory %.0f MiB above the %.0f MiB limit for %d claims", peakMiB, limitMiB, n)
	}
	if report > scaleReportTarget {
		fmt.Printf("WARNING: the report took %s, above its %s target\n", report.Round(time.Millisecond), scaleReportTarget)
	}
	if report > 3*scaleReportTarget {
		b.Errorf("the report took %s, more than three times its %s target", report.Round(time.Millisecond), scaleReportTarget)
	}
}

func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

func size(fi os.FileInfo) int64 {
	if fi == nil {
		return 0
	}
	return fi.Size()
}

// replay sends the burst's events and one end marker per watch; it fills sent and names.
func replay(s *recordertest.Stream, ns, poolName string, pool, n int, at func(time.Duration) time.Time, sent []loadgen.Sent, names []string) int {
	ev := 0
	rv := 1
	next := func() int { rv++; ev++; return rv }
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	// The fill, before T0.
	for j := 0; j < pool; j++ {
		name := fmt.Sprintf("pool-%05d", j)
		created := at(-ms(60000 - j))
		s.Sandboxes.Add(recordertest.Sandbox(ns, name, "SandboxWarmPool/"+poolName, "", created, false, next()))
		s.Pods.Add(recordertest.Pod(ns, name, "", "", created, time.Time{}, time.Time{}, false, next()))
		s.Pods.Modify(recordertest.Pod(ns, name, "", "kwok-node-1", created, created, created.Add(ms(500)), false, next()))
	}
	s.Pools.Add(recordertest.Pool(ns, poolName, int64(pool), int64(pool), int64(pool), next()))
	// The burst: 1000 claims/s; warm claims Ready in 100-400 ms, cold ones in 2-5 s.
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("claim-%05d", i)
		names[i] = name
		planned := at(ms(i))
		intent := planned.Add(ms(i % 3))
		sent[i] = loadgen.Sent{Index: i, Name: name, Planned: planned, Intent: intent, Acked: intent.Add(ms(15 + i%20))}
		s.Claims.Add(recordertest.Claim(ns, name, poolName, "", intent, time.Time{}, next()))
		var sb string
		var ready time.Time
		if i < pool {
			sb = fmt.Sprintf("pool-%05d", i)
			ready = intent.Add(ms(100 + i%300))
			s.Sandboxes.Modify(recordertest.Sandbox(ns, sb, "SandboxClaim/"+name, "warm", at(-ms(60000-i)), false, next()))
			// The pool refills the slot.
			refill := fmt.Sprintf("refill-%05d", i)
			rc := intent.Add(ms(50))
			s.Sandboxes.Add(recordertest.Sandbox(ns, refill, "SandboxWarmPool/"+poolName, "", rc, false, next()))
			s.Pods.Add(recordertest.Pod(ns, refill, "", "", rc, time.Time{}, time.Time{}, false, next()))
			s.Pods.Modify(recordertest.Pod(ns, refill, "", "kwok-node-2", rc, rc.Add(ms(20)), rc.Add(ms(600)), false, next()))
		} else {
			sb = "cold-" + name
			ready = intent.Add(ms(2000 + i%3000))
			created := intent.Add(ms(30))
			s.Sandboxes.Add(recordertest.Sandbox(ns, sb, "SandboxClaim/"+name, "cold", created, false, next()))
			s.Pods.Add(recordertest.Pod(ns, sb, "", "", created, time.Time{}, time.Time{}, false, next()))
			s.Pods.Modify(recordertest.Pod(ns, sb, "", "", created, created.Add(ms(40)), time.Time{}, false, next()))
			s.Pods.Modify(recordertest.Pod(ns, sb, "", "kwok-node-3", created, created.Add(ms(40)), ready.Add(-ms(100)), false, next()))
		}
		s.Claims.Modify(recordertest.Claim(ns, name, poolName, sb, intent, time.Time{}, next()))
		s.Claims.Modify(recordertest.Claim(ns, name, poolName, sb, intent, ready, next()))
		if i%100 == 99 {
			r := int64(min(pool, i+1))
			s.Pools.Modify(recordertest.Pool(ns, poolName, int64(pool), int64(pool)-r/2, int64(pool)-r/2, next()))
		}
	}
	s.Pools.Modify(recordertest.Pool(ns, poolName, int64(pool), int64(pool), int64(pool), next()))
	// End markers: each watch is handled in order, so its marker is seen after all of its events.
	end := at(0)
	s.Claims.Add(recordertest.Claim(ns, "zz-end", poolName, "zz-end", end, end, next()))
	s.Sandboxes.Add(recordertest.Sandbox(ns, "zz-end", "SandboxClaim/zz-end", "warm", end, false, next()))
	s.Pods.Add(recordertest.Pod(ns, "zz-end", "", "", end, time.Time{}, time.Time{}, false, next()))
	return ev
}
