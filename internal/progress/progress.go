// Package progress shows progress for anything that takes more than a couple of seconds: mpb bars
// on a terminal, plain periodic lines when the output is not a TTY (CI logs).
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// Progress owns the bars (or the plain-line ticker) of one command.
type Progress struct {
	out      io.Writer
	tty      bool
	p        *mpb.Progress
	interval time.Duration
	mu       sync.Mutex
}

// New writes to w; bars are used only when w is a terminal.
func New(w io.Writer) *Progress {
	pr := &Progress{out: w, interval: 30 * time.Second}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		pr.tty = true
		pr.p = mpb.New(mpb.WithOutput(w), mpb.WithWidth(40), mpb.WithRefreshRate(200*time.Millisecond))
	}
	return pr
}

// Discard returns a Progress that prints nothing (tests).
func Discard() *Progress { return &Progress{out: io.Discard, interval: time.Hour} }

// Printf writes a line above the bars (or plainly).
func (pr *Progress) Printf(format string, args ...any) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.p != nil {
		_, _ = fmt.Fprintf(pr.p, format+"\n", args...)
		return
	}
	_, _ = fmt.Fprintf(pr.out, format+"\n", args...)
}

// Wait flushes the bars; call once when all tasks and counters are done.
func (pr *Progress) Wait() {
	if pr.p != nil {
		pr.p.Wait()
	}
}

// Task is a step whose length is only estimated (a build): the bar advances with elapsed time
// against the estimate and never claims to be finished before Done.
type Task struct {
	pr       *Progress
	name     string
	start    time.Time
	estimate time.Duration
	bar      *mpb.Bar
	stop     chan struct{}
	once     sync.Once
}

// Task starts a timed step.
func (pr *Progress) Task(name string, estimate time.Duration) *Task {
	t := &Task{pr: pr, name: name, start: time.Now(), estimate: estimate, stop: make(chan struct{})}
	if pr.p != nil {
		total := int64(estimate / time.Second)
		if total < 1 {
			total = 1
		}
		t.bar = pr.p.AddBar(total,
			mpb.PrependDecorators(decor.Name(name, decor.WC{W: 28, C: decor.DindentRight}), decor.Elapsed(decor.ET_STYLE_MMSS)),
			mpb.AppendDecorators(decor.Name(fmt.Sprintf("est. %s", estimate.Round(time.Second)))),
		)
		go func() {
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-t.stop:
					return
				case <-tick.C:
					el := int64(time.Since(t.start) / time.Second)
					if el >= total {
						el = total - 1
					}
					t.bar.SetCurrent(el)
				}
			}
		}()
		return t
	}
	pr.Printf("==> %s: started (estimate %s)", name, estimate.Round(time.Second))
	go func() {
		tick := time.NewTicker(pr.interval)
		defer tick.Stop()
		for {
			select {
			case <-t.stop:
				return
			case <-tick.C:
				pr.Printf("... %s: %s elapsed", name, time.Since(t.start).Round(time.Second))
			}
		}
	}()
	return t
}

// Done ends the step with a short status ("built", "cached", an error).
func (t *Task) Done(status string) {
	t.once.Do(func() {
		close(t.stop)
		took := time.Since(t.start).Round(100 * time.Millisecond)
		if t.bar != nil {
			t.bar.SetTotal(-1, true)
			t.pr.Printf("==> %s: %s in %s", t.name, status, took)
			return
		}
		t.pr.Printf("==> %s: %s in %s", t.name, status, took)
	})
}

// Counter tracks countable work (claims sent/Ready/failed).
type Counter struct {
	pr     *Progress
	name   string
	total  int64
	n      atomic.Int64
	failed atomic.Int64
	bar    *mpb.Bar
	stop   chan struct{}
	once   sync.Once
}

// Counter starts a counted step of total units.
func (pr *Progress) Counter(name string, total int) *Counter {
	c := &Counter{pr: pr, name: name, total: int64(total), stop: make(chan struct{})}
	if pr.p != nil {
		c.bar = pr.p.AddBar(int64(total),
			mpb.PrependDecorators(decor.Name(name, decor.WC{W: 28, C: decor.DindentRight}), decor.CountersNoUnit("%d/%d")),
			mpb.AppendDecorators(decor.Any(func(decor.Statistics) string {
				if f := c.failed.Load(); f > 0 {
					return fmt.Sprintf("%d failed", f)
				}
				return ""
			})),
		)
		return c
	}
	go func() {
		tick := time.NewTicker(pr.interval)
		defer tick.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-tick.C:
				pr.Printf("... %s: %d/%d (%d failed)", name, c.n.Load(), c.total, c.failed.Load())
			}
		}
	}()
	return c
}

// Inc counts one unit done.
func (c *Counter) Inc() {
	c.n.Add(1)
	if c.bar != nil {
		c.bar.Increment()
	}
}

// Fail counts one unit done and failed.
func (c *Counter) Fail() {
	c.failed.Add(1)
	c.Inc()
}

// Set moves the counter to n done (of which failed failed), for counts observed elsewhere.
func (c *Counter) Set(n, failed int64) {
	c.n.Store(n)
	c.failed.Store(failed)
	if c.bar != nil {
		c.bar.SetCurrent(n)
	}
}

// Done ends the counter.
func (c *Counter) Done() {
	c.once.Do(func() {
		close(c.stop)
		if c.bar != nil {
			c.bar.SetTotal(-1, true)
		}
		c.pr.Printf("==> %s: %d/%d (%d failed)", c.name, c.n.Load(), c.total, c.failed.Load())
	})
}
