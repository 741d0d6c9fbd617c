// Package memwatch measures a Go process's memory for benchmarks: the peak of what the runtime
// holds from the OS (mapped and not released, close to RSS), sampled every 5 ms, and the live
// heap after a full collection.
package memwatch

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// MiB is 2^20 bytes.
const MiB = 1 << 20

// Footprint is what the runtime holds from the OS now.
func Footprint() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}

// LiveHeap is the heap still reachable after a full collection.
func LiveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// Peak samples Footprint until Stop.
type Peak struct {
	peak atomic.Uint64
	stop chan struct{}
	wg   sync.WaitGroup
}

// Watch starts sampling.
func Watch() *Peak {
	p := &Peak{stop: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if v := Footprint(); v > p.peak.Load() {
				p.peak.Store(v)
			}
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// Stop ends sampling and returns the peak footprint.
func (p *Peak) Stop() uint64 { close(p.stop); p.wg.Wait(); return p.peak.Load() }
