// Package progress shows progress for anything that takes more than a couple of seconds: mpb bars
// on a terminal, plain periodic lines when the output is not a TTY (CI logs).
//
// On a terminal a bar lives only while its step runs: a finished Task or Counter is removed (its
// outcome stays as one printed line), and the mpb container itself is shut down as soon as no bar
// is live, so nothing redraws finished bars and lines printed afterwards (by this Progress or by
// another one writing to the same terminal) are never overwritten by a stale container.
package progress

import (
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// Progress owns the bars (or the plain-line tickers) of one command.
type Progress struct {
	out      io.Writer
	tty      bool
	discard  bool // Discard: no output and no goroutines
	interval time.Duration
	refresh  time.Duration    // mpb refresh rate
	now      func() time.Time // the clock of elapsed times and ETAs

	mu  sync.Mutex
	cur *container // the live mpb container; nil while no bar is live
}

// container is one mpb container and the number of its bars not yet done. It is shut down when
// that number drops to zero; the next bar gets a new one.
type container struct {
	p      *mpb.Progress
	live   int
	closed bool
}

// New writes to w; bars are used only when w is a terminal.
func New(w io.Writer) *Progress {
	pr := &Progress{out: w, interval: 30 * time.Second, refresh: 200 * time.Millisecond, now: time.Now}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		pr.tty = true
	}
	return pr
}

// Discard returns a Progress that prints nothing and starts no goroutine (tests).
func Discard() *Progress {
	return &Progress{out: io.Discard, discard: true, interval: time.Hour, refresh: time.Hour, now: time.Now}
}

// Printf writes a line above the bars (or plainly).
func (pr *Progress) Printf(format string, args ...any) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if c := pr.cur; c != nil && !c.closed {
		if _, err := fmt.Fprintf(c.p, format+"\n", args...); err == nil {
			return
		}
		c.closed = true // shut down under us: write plainly
	}
	_, _ = fmt.Fprintf(pr.out, format+"\n", args...)
}

// Wait blocks until every bar is done and removed. Bars shut their container down by themselves
// when the last one is done, so this is only a barrier; the Progress stays usable.
func (pr *Progress) Wait() {
	pr.mu.Lock()
	c := pr.cur
	pr.mu.Unlock()
	if c == nil {
		return
	}
	c.p.Wait()
	pr.mu.Lock()
	defer pr.mu.Unlock()
	c.closed = true
	if pr.cur == c {
		pr.cur = nil
	}
}

// bar adds a bar that is removed from the screen once complete; the caller ends it with release.
func (pr *Progress) bar(total int64, filler mpb.BarFillerBuilder, opts ...mpb.BarOption) (*container, *mpb.Bar) {
	opts = append(opts, mpb.BarRemoveOnComplete())
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for {
		if pr.cur == nil || pr.cur.closed {
			pr.cur = &container{p: mpb.New(mpb.WithOutput(pr.out), mpb.WithWidth(40), mpb.WithRefreshRate(pr.refresh))}
		}
		c := pr.cur
		b, err := c.p.Add(total, filler.Build(), opts...)
		if err == nil {
			c.live++
			return c, b
		}
		c.closed = true // shut down under us (Wait, a render error): the next bar gets a new one
	}
}

// release completes b and returns once b has been drawn for the last time (at most one refresh
// later), so no frame after it shows b next to bars added later. When b was its container's last
// live bar, the container is shut down: its final render erases the bar lines, and plain writes
// follow.
func (pr *Progress) release(c *container, b *mpb.Bar) {
	b.SetTotal(-1, true)
	b.Wait()
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if c.live--; c.live > 0 || c.closed {
		return
	}
	c.p.Wait()
	c.closed = true
	if pr.cur == c {
		pr.cur = nil
	}
}

// ticker calls fn every interval until stop is closed (plain lines when not on a terminal).
func (pr *Progress) ticker(stop <-chan struct{}, fn func()) {
	if pr.discard {
		return
	}
	go func() {
		tick := time.NewTicker(pr.interval)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				fn()
			}
		}
	}()
}

// Task is a step whose length is only estimated (a build): the bar advances with elapsed time
// against the estimate and never claims to be finished before Done.
type Task struct {
	pr       *Progress
	name     string
	start    time.Time
	estimate time.Duration
	c        *container
	bar      *mpb.Bar
	stop     chan struct{}
	once     sync.Once
}

// Task starts a timed step.
func (pr *Progress) Task(name string, estimate time.Duration) *Task {
	t := &Task{pr: pr, name: name, start: time.Now(), estimate: estimate, stop: make(chan struct{})}
	if pr.tty {
		total := max(int64(estimate/time.Second), 1)
		t.c, t.bar = pr.bar(total, mpb.BarStyle(),
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
					t.bar.SetCurrent(min(int64(time.Since(t.start)/time.Second), total-1))
				}
			}
		}()
		return t
	}
	pr.Printf("==> %s: started (estimate %s)", name, estimate.Round(time.Second))
	pr.ticker(t.stop, func() { pr.Printf("... %s: %s elapsed", name, time.Since(t.start).Round(time.Second)) })
	return t
}

// Done ends the step with a short status ("built", "cached", an error); its bar is removed and
// one line with the outcome stays.
func (t *Task) Done(status string) {
	t.once.Do(func() {
		close(t.stop)
		took := time.Since(t.start).Round(100 * time.Millisecond)
		t.pr.Printf("==> %s: %s in %s", t.name, status, took)
		if t.bar != nil {
			t.pr.release(t.c, t.bar)
		}
	})
}

// Counter tracks countable work (claims sent/Ready/failed).
type Counter struct {
	pr     *Progress
	name   string
	total  int64
	n      atomic.Int64
	failed atomic.Int64
	c      *container
	bar    *mpb.Bar
	stop   chan struct{}
	once   sync.Once
}

// Counter starts a counted step of total units.
func (pr *Progress) Counter(name string, total int) *Counter {
	c := &Counter{pr: pr, name: name, total: int64(total), stop: make(chan struct{})}
	if pr.tty {
		c.c, c.bar = pr.bar(int64(total), mpb.BarStyle(),
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
	pr.ticker(c.stop, func() { pr.Printf("... %s: %d/%d (%d failed)", name, c.n.Load(), c.total, c.failed.Load()) })
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

// Done ends the counter: its bar is removed and one line with the final count stays.
func (c *Counter) Done() {
	c.once.Do(func() {
		close(c.stop)
		c.pr.Printf("==> %s: %d/%d (%d failed)", c.name, c.n.Load(), c.total, c.failed.Load())
		if c.bar != nil {
			c.pr.release(c.c, c.bar)
		}
	})
}

// Overall is a run's one summary line: cells done of the planned range, the current cell,
// repetitions, elapsed and an ETA from measured cell times. A nil *Overall does nothing.
type Overall struct {
	pr   *Progress
	name string
	c    *container
	bar  *mpb.Bar

	mu        sync.Mutex
	st        overallState
	started   time.Time     // the run
	cellStart time.Time     // the running cell (zero: none)
	stop      chan struct{} // ends the running cell's periodic plain line
	finished  bool
}

// Overall starts the summary line of a run that will measure between minCells and maxCells cells
// (equal unless sequential stopping may close cells early).
func (pr *Progress) Overall(name string, minCells, maxCells int) *Overall {
	if pr == nil {
		return nil
	}
	o := &Overall{pr: pr, name: name, started: pr.now()}
	o.st.min, o.st.max = planRange(minCells, maxCells)
	if pr.tty {
		o.c, o.bar = pr.bar(0, mpb.NopStyle(), mpb.BarPriority(math.MaxInt32), // always the bottom line
			mpb.PrependDecorators(decor.Any(func(s decor.Statistics) string {
				return o.snapshot().line(min(s.AvailableWidth, maxLineWidth+1) - 1)
			})))
	}
	return o
}

// maxLineWidth keeps the summary line inside an 80-column terminal (without touching its last
// column, where some terminals wrap).
const maxLineWidth = 79

func planRange(minCells, maxCells int) (int, int) {
	minCells = max(minCells, 0)
	return minCells, max(maxCells, minCells)
}

// snapshot copies the state for one line.
func (o *Overall) snapshot() overallState {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.st
	s.took = append([]time.Duration(nil), o.st.took...)
	now := o.pr.now()
	s.elapsed = now.Sub(o.started)
	if s.running = !o.cellStart.IsZero(); s.running {
		s.cell = now.Sub(o.cellStart)
	}
	return s
}

// Plan sets the planned range again (sequential stopping closes cells early).
func (o *Overall) Plan(minCells, maxCells int) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.st.min, o.st.max = planRange(minCells, maxCells)
}

// Start marks a cell as started; label names it, e.g. "replenish-delay#3 (v0.5.5)". Not on a
// terminal it prints one line with the cells done, the elapsed time and the ETA, and then one
// line per interval while the cell runs.
func (o *Overall) Start(label string) {
	if o == nil {
		return
	}
	o.mu.Lock()
	if o.finished {
		o.mu.Unlock()
		return
	}
	o.st.label = label
	o.cellStart = o.pr.now()
	if o.stop != nil {
		close(o.stop)
		o.stop = nil
	}
	if o.bar == nil {
		o.stop = make(chan struct{})
		o.pr.ticker(o.stop, func() { o.pr.Printf("... %s: %s", o.name, o.snapshot().plain(false)) })
	}
	o.mu.Unlock()
	if o.bar == nil {
		o.pr.Printf("==> %s: %s", o.name, o.snapshot().plain(true))
	}
}

// Done marks the running cell as ended; its wall time feeds the ETA.
func (o *Overall) Done() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cellStart.IsZero() {
		return
	}
	o.st.took = append(o.st.took, o.pr.now().Sub(o.cellStart))
	o.st.done++
	o.cellStart = time.Time{}
	if o.stop != nil {
		close(o.stop)
		o.stop = nil
	}
}

// Note sets a short status shown on the line, e.g. "round 4: 3 of 4 cells open" ("" clears it).
func (o *Overall) Note(s string) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.st.note = s
}

// Finish ends the run: the bar is removed (a line with the cells done and the time taken stays).
func (o *Overall) Finish() {
	if o == nil {
		return
	}
	o.mu.Lock()
	if o.finished {
		o.mu.Unlock()
		return
	}
	o.finished = true
	if o.stop != nil {
		close(o.stop)
		o.stop = nil
	}
	done, took := o.st.done, o.pr.now().Sub(o.started)
	o.mu.Unlock()
	o.pr.Printf("==> %s: %d cells in %s", o.name, done, clock(took))
	if o.bar != nil {
		o.pr.release(o.c, o.bar)
	}
}

// overallState is what one summary line shows.
type overallState struct {
	done, min, max int
	label, note    string
	took           []time.Duration // wall time of each finished cell
	elapsed        time.Duration   // since the run started
	running        bool            // a cell is running
	cell           time.Duration   // for how long
}

// cells is "cells 7/12-40" (done of the planned range), or "cells 7/40".
func (s overallState) cells() string {
	if s.min == s.max {
		return fmt.Sprintf("cells %d/%d", s.done, s.max)
	}
	return fmt.Sprintf("cells %d/%d-%d", s.done, s.min, s.max)
}

// eta is the time left: the remaining cells of each end of the planned range times the median
// measured cell time, less what the running cell has already used of it.
func (s overallState) eta() string {
	if len(s.took) == 0 {
		return "ETA unknown"
	}
	med := median(s.took)
	left := func(cells int) time.Duration {
		if cells <= 0 {
			return 0
		}
		d := time.Duration(cells) * med
		if s.running {
			d -= min(s.cell, med)
		}
		return max(d, 0)
	}
	lo, hi := short(left(s.min-s.done)), short(left(s.max-s.done))
	if lo == hi {
		return "ETA " + hi
	}
	return "ETA " + lo + "-" + hi
}

// line is the terminal line, at most width columns: the label, then the note, are shortened
// (or left out) to fit.
func (s overallState) line(width int) string {
	head, tail := s.cells(), clock(s.elapsed)+"  "+s.eta()
	room := width - len(head) - len(tail) - 4 // two separators around the label
	if room < 4 || s.label == "" {
		line := head + "  " + tail
		return truncate(line, width)
	}
	label := truncate(s.label, room)
	line := head + "  " + label + "  " + tail
	if rest := width - len(line) - 2; s.note != "" && rest >= 8 {
		line += "  " + truncate(s.note, rest)
	}
	return line
}

// plain is the line printed when the output is not a terminal (starting: Start's line).
func (s overallState) plain(starting bool) string {
	var cell string
	switch {
	case starting:
		cell = ", starting " + s.label
	case s.running:
		cell = fmt.Sprintf(", %s running for %s", s.label, clock(s.cell))
	}
	line := fmt.Sprintf("%s%s; elapsed %s, %s", s.cells(), cell, clock(s.elapsed), s.eta())
	if s.note != "" {
		line += "; " + s.note
	}
	return line
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	for i := 1; i < len(s); i++ { // insertion sort: a run has tens of cells
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// clock formats an elapsed time as 45s, 12m04s or 1h02m03s.
func clock(d time.Duration) string {
	d = max(d, 0).Round(time.Second)
	h, m, sec := int(d/time.Hour), int(d%time.Hour/time.Minute), int(d%time.Minute/time.Second)
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm%02ds", h, m, sec)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, sec)
	}
	return fmt.Sprintf("%ds", sec)
}

// short formats an estimate coarsely: 45s, 9m, 1h05m.
func short(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
	}
	d = d.Round(time.Minute)
	if d < time.Hour {
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
}

// truncate shortens s to at most n runes, marking the cut with "...".
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 3 {
		return string(r[:max(n, 0)])
	}
	return string(r[:n-3]) + "..."
}
