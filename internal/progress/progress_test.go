package progress

import (
	"bytes"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestETA(t *testing.T) {
	m := time.Minute
	for _, tc := range []struct {
		name string
		st   overallState
		want string
	}{
		{"nothing measured yet", overallState{done: 0, min: 12, max: 40}, "ETA unknown"},
		{"range", overallState{done: 2, min: 12, max: 40, took: []time.Duration{m, 2 * m, 90 * time.Hour}}, "ETA 20m-1h16m"},
		{"median of an even count", overallState{done: 4, min: 5, max: 5, took: []time.Duration{m, 3 * m, 5 * m, 100 * m}}, "ETA 4m"},
		{"running cell counts against its share", overallState{done: 1, min: 3, max: 5, took: []time.Duration{4 * m}, running: true, cell: m}, "ETA 7m-15m"},
		{"running cell over its share", overallState{done: 1, min: 2, max: 2, took: []time.Duration{30 * time.Second}, running: true, cell: 5 * m}, "ETA 0s"},
		{"min already reached", overallState{done: 6, min: 4, max: 8, took: []time.Duration{m}}, "ETA 0s-2m"},
		{"all done", overallState{done: 8, min: 4, max: 8, took: []time.Duration{m}}, "ETA 0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.st.eta(); got != tc.want {
				t.Errorf("eta() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestOverallLine(t *testing.T) {
	base := overallState{done: 7, min: 12, max: 40, elapsed: 12*time.Minute + 4*time.Second,
		took: []time.Duration{time.Minute, 30 * time.Second, 40 * time.Second}, running: true, cell: 10 * time.Second}
	long := strings.Repeat("max-refill-rate+sandbox-warm-pool-replenish-delay=10s/", 3) + "#3 (v0.5.5)"
	for _, tc := range []struct {
		name, label, note string
		width             int
		want              string // "" only checks the width
	}{
		{"the example", "replenish-delay#3 (v0.5.5)", "", 79, "cells 7/12-40  replenish-delay#3 (v0.5.5)  12m04s  ETA 3m-22m"},
		{"with a note", "replenish-delay#3 (v0.5.5)", "round 4: 3 of 4 cells open", 79, "cells 7/12-40  replenish-delay#3 (v0.5.5)  12m04s  ETA 3m-22m  round 4: 3 of..."},
		{"a long label is cut", long, "round 4", 79, ""},
		{"narrow terminal", long, "round 4", 40, ""},
		{"very narrow terminal", long, "", 20, "cells 7/12-40  12..."},
		{"no cell yet", "", "", 79, "cells 7/12-40  12m04s  ETA 3m-22m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := base
			st.label, st.note = tc.label, tc.note
			got := st.line(tc.width)
			if len([]rune(got)) > tc.width {
				t.Errorf("line is %d columns, more than %d: %q", len([]rune(got)), tc.width, got)
			}
			if tc.want != "" && got != tc.want {
				t.Errorf("line(%d) =\n  %q, want\n  %q", tc.width, got, tc.want)
			}
			if tc.width >= 40 && !strings.Contains(got, "ETA") {
				t.Errorf("line has no ETA: %q", got)
			}
		})
	}
}

func TestClockAndShort(t *testing.T) {
	for _, tc := range []struct {
		d            time.Duration
		clock, short string
	}{
		{0, "0s", "0s"},
		{45 * time.Second, "45s", "45s"},
		{12*time.Minute + 4*time.Second, "12m04s", "12m"},
		{9*time.Minute + 40*time.Second, "9m40s", "10m"},
		{time.Hour + 2*time.Minute + 3*time.Second, "1h02m03s", "1h02m"},
		{-time.Second, "0s", "0s"},
	} {
		if got := clock(tc.d); got != tc.clock {
			t.Errorf("clock(%s) = %q, want %q", tc.d, got, tc.clock)
		}
		if got := short(max(tc.d, 0)); got != tc.short {
			t.Errorf("short(%s) = %q, want %q", tc.d, got, tc.short)
		}
	}
}

// fakeClock is a settable clock for the plain-line tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Not on a terminal, Start prints one line with the cells done of the range, the elapsed time and
// the ETA; the ETA comes from the measured cells once there are some.
func TestOverallPlain(t *testing.T) {
	var out bytes.Buffer
	pr := New(&out)
	clk := &fakeClock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	pr.now = clk.now
	o := pr.Overall("warmpool-burst", 3, 5)
	o.Start("none#1 (v0.5.5)")
	clk.add(2 * time.Minute)
	o.Done()
	o.Plan(3, 4)
	o.Note("round 2: 2 of 2 cells open")
	o.Start("both#1 (v0.5.5)")
	clk.add(4 * time.Minute)
	o.Done()
	o.Finish()
	o.Start("after the end") // ignored
	want := []string{
		"==> warmpool-burst: cells 0/3-5, starting none#1 (v0.5.5); elapsed 0s, ETA unknown",
		"==> warmpool-burst: cells 1/3-4, starting both#1 (v0.5.5); elapsed 2m00s, ETA 4m-6m; round 2: 2 of 2 cells open",
		"==> warmpool-burst: 2 cells in 6m00s",
	}
	if got := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The periodic plain line runs only while a cell does.
func TestOverallPlainPeriodic(t *testing.T) {
	var mu sync.Mutex
	var out bytes.Buffer
	pr := New(lockedWriter{&mu, &out})
	pr.interval = 5 * time.Millisecond
	o := pr.Overall("run", 2, 2)
	o.Start("a#1")
	time.Sleep(50 * time.Millisecond)
	o.Done()
	o.Finish()
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(out.String(), "... run: cells 0/2, a#1 running for") {
		t.Errorf("no periodic line while the cell ran:\n%s", out.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestNilOverall(t *testing.T) {
	var o *Overall
	o.Plan(1, 2)
	o.Start("x")
	o.Note("y")
	o.Done()
	o.Finish()
	var pr *Progress
	if pr.Overall("x", 1, 1) != nil {
		t.Error("a nil Progress gave a non-nil Overall")
	}
}

// Discard prints nothing and starts no goroutine, whatever is left unfinished.
func TestDiscardStartsNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	pr := Discard()
	task := pr.Task("build", time.Minute)
	c := pr.Counter("claims", 10)
	c.Inc()
	c.Fail()
	c.Set(5, 1)
	o := pr.Overall("run", 2, 4)
	o.Start("a#1")
	o.Note("round 1")
	pr.Printf("a line")
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines running with nothing finished, %d before", n, before)
	}
	o.Done()
	o.Finish()
	c.Done()
	task.Done("built")
	pr.Wait()
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines running after everything ended, %d before", n, before)
	}
}
