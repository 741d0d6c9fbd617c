package progress

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty" // test only: a real pseudo-terminal, so mpb renders as on a user's terminal
)

// maxLiveBars is the most bars a run shows at once: the summary line and a cell's two counters.
const maxLiveBars = 3

// TestTerminalRun drives a real pseudo-terminal (80x24) through a lab build and a multi-cell
// run, the way `brakebench run` does (two Progress instances on one terminal), and replays what
// was written with cursor-up/erase semantics: finished bars are gone, printed lines are never
// overwritten, at most maxLiveBars bar lines are live at any time, and the summary line with its
// ETA is on screen through the run.
func TestTerminalRun(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal on this machine: %v", err)
	}
	defer func() { _ = ptmx.Close() }()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: 80}); err != nil {
		t.Fatalf("set the terminal size: %v", err)
	}
	term := &recorder{}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			term.write(buf[:n])
			if err != nil {
				return // EIO once the last writer closed the terminal
			}
		}
	}()

	goroutines := runtime.NumGoroutine()

	// The lab: a build whose bar must not outlive it.
	lab := New(tty)
	lab.refresh = 10 * time.Millisecond
	build := lab.Task("build kubernetes v1.37.2", 13*time.Minute)
	time.Sleep(60 * time.Millisecond)
	build.Done("built")
	lab.Printf("lab %q is up", "bench")

	// The run.
	const cells = 5
	run := New(tty)
	run.refresh = 10 * time.Millisecond
	ov := run.Overall("warmpool-burst", 4, cells)
	for i := 1; i <= cells; i++ {
		label := fmt.Sprintf("replenish-delay#%d (v0.5.5)", i)
		if i == 2 {
			label = strings.Repeat("max-refill-rate+replenish-delay/", 4) + "#2 (v0.5.5)" // longer than the terminal
		}
		run.Printf("==> cell %d of 4-%d: %s", i, cells, label)
		ov.Start(label)
		ov.Note(fmt.Sprintf("round %d: 3 of 4 cells open", i))
		sent, ready := run.Counter(fmt.Sprintf("claims sent c%d", i), 30), run.Counter(fmt.Sprintf("claims Ready c%d", i), 30)
		for range 30 {
			sent.Inc()
			ready.Inc()
			time.Sleep(2 * time.Millisecond)
		}
		if i == 3 {
			// Mid-run: the screen shows the summary line with a measured ETA, and no more bars
			// than allowed.
			want := fmt.Sprintf("cells %d/4-%d", i-1, cells)
			scr := term.waitFor(t, want)
			checkScreen(t, "mid-run", scr)
			if !containsLine(scr.lines(), func(l string) bool {
				return strings.HasPrefix(l, want) && strings.Contains(l, "ETA ") && !strings.Contains(l, "ETA unknown")
			}) {
				t.Errorf("mid-run screen has no summary line %q with a measured ETA:\n%s", want, scr)
			}
		}
		sent.Done()
		ready.Done()
		run.Printf("    cell %d: ok", i)
		ov.Done()
	}
	ov.Finish()
	run.Printf("report: out/x/report.html")
	// Every bar is done: the containers are shut down and their goroutines gone.
	for deadline := time.Now().Add(2 * time.Second); runtime.NumGoroutine() > goroutines; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("%d goroutines after every bar was done, %d before the first", runtime.NumGoroutine(), goroutines)
			break
		}
	}
	_ = tty.Close()
	select {
	case <-readDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal was not drained in 10s")
	}

	scr := term.screen()
	if p := os.Getenv("DUMP_RAW"); p != "" {
		_ = os.WriteFile(p, term.raw.Bytes(), 0o644)
	}
	checkScreen(t, "final", scr)
	lines := scr.lines()
	// Every printed line is there once, in order: nothing was overwritten or redrawn.
	want := []string{`==> build kubernetes v1.37.2: built in`, `lab "bench" is up`}
	for i := 1; i <= cells; i++ {
		want = append(want, fmt.Sprintf("==> cell %d of 4-%d:", i, cells), fmt.Sprintf("==> claims sent c%d: 30/30 (0 failed)", i),
			fmt.Sprintf("==> claims Ready c%d: 30/30 (0 failed)", i), fmt.Sprintf("    cell %d: ok", i))
	}
	want = append(want, "==> warmpool-burst: 5 cells in", "report: out/x/report.html")
	next := 0
	for _, l := range lines {
		if next < len(want) && strings.HasPrefix(l, want[next]) {
			next++
		} else if l != "" {
			t.Errorf("final screen: unexpected line %q (expected %q next)", l, want[min(next, len(want)-1)])
		}
	}
	if next < len(want) {
		t.Errorf("final screen lacks %q (in order):\n%s", want[next], scr)
	}
	// Over the whole run no frame drew more than maxLiveBars bar lines, and every frame that
	// drew a cell's counters drew the summary line with its ETA too.
	if term.maxUp > maxLiveBars {
		t.Errorf("a frame had %d bar lines, more than %d", term.maxUp, maxLiveBars)
	}
	frames, withETA := 0, 0
	for _, f := range term.frames() {
		if strings.Contains(f, "claims sent") && strings.Contains(f, "[") {
			frames++
			if strings.Contains(f, "ETA ") {
				withETA++
			}
		}
		for _, l := range strings.Split(f, "\r\n") {
			if n := len([]rune(l)); n > 80 && isBarLine(l) {
				t.Errorf("a bar line of %d columns on an 80-column terminal: %q", n, l)
			}
		}
	}
	if frames == 0 || withETA != frames {
		t.Errorf("%d of %d frames with a cell's bars show the ETA", withETA, frames)
	}
}

// checkScreen checks what every screen must satisfy: no more than maxLiveBars bar lines, none of
// them a finished build's, and every bar line inside 80 columns (a wider one would wrap, and
// mpb's cursor-up would then miss a line; printed lines may wrap, they are above the bars).
func checkScreen(t *testing.T, when string, scr *screen) {
	t.Helper()
	bars := 0
	for _, l := range scr.lines() {
		if isBarLine(l) {
			bars++
		}
		if strings.Contains(l, "est. 13m0s") {
			t.Errorf("%s screen: the finished build's bar is still drawn: %q", when, l)
		}
		if n := len([]rune(l)); n > 80 && isBarLine(l) {
			t.Errorf("%s screen: a bar line of %d columns on an 80-column terminal: %q", when, n, l)
		}
	}
	if bars > maxLiveBars {
		t.Errorf("%s screen: %d bar lines, more than %d:\n%s", when, bars, maxLiveBars, scr)
	}
}

// isBarLine tells a bar (a filler "[...]" or the summary line) from a printed line.
func isBarLine(l string) bool {
	return strings.HasPrefix(l, "cells ") || (strings.Contains(l, "[") && strings.Contains(l, "]") && !strings.HasPrefix(l, "==>"))
}

func containsLine(lines []string, f func(string) bool) bool {
	for _, l := range lines {
		if f(l) {
			return true
		}
	}
	return false
}

// recorder keeps what the terminal received and replays it.
type recorder struct {
	mu    sync.Mutex
	raw   bytes.Buffer
	maxUp int // the largest cursor-up seen: the line count of the tallest frame
}

func (r *recorder) write(p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.raw.Write(p)
}

func (r *recorder) screen() *screen {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &screen{}
	s.feed(r.raw.Bytes())
	r.maxUp = max(r.maxUp, s.maxUp)
	return s
}

// frames splits the output at each cursor-up, with the other control sequences removed: each
// piece ends with one frame of bars.
func (r *recorder) frames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, f := range cursorUp.Split(r.raw.String(), -1) {
		out = append(out, otherCSI.ReplaceAllString(f, ""))
	}
	return out
}

var (
	cursorUp = regexp.MustCompile(`\x1b\[\d+A`)
	otherCSI = regexp.MustCompile(`\x1b\[[0-9;?]*[@-~]`)
)

// waitFor waits (up to 5s) until the screen shows a line starting with prefix.
func (r *recorder) waitFor(t *testing.T, prefix string) *screen {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := r.screen()
		if containsLine(s.lines(), func(l string) bool { return strings.HasPrefix(l, prefix) }) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("no line %q on screen in 5s:\n%s", prefix, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// screen is a minimal terminal: text, CR, LF, cursor up (CSI n A), erase below (CSI J) and
// erase line (CSI K); other sequences are ignored. It keeps every line (no scrolling off).
type screen struct {
	rows     [][]rune
	row, col int
	maxUp    int
}

func (s *screen) feed(b []byte) {
	r := []rune(string(b))
	for i := 0; i < len(r); i++ {
		switch c := r[i]; {
		case c == '\x1b' && i+1 < len(r) && r[i+1] == '[':
			j := i + 2
			for j < len(r) && (r[j] < 0x40 || r[j] > 0x7e) {
				j++
			}
			if j == len(r) {
				return
			}
			s.csi(string(r[i+2:j]), r[j])
			i = j
		case c == '\r':
			s.col = 0
		case c == '\n':
			s.row++
		default:
			s.put(c)
		}
	}
}

func (s *screen) csi(param string, final rune) {
	n, err := strconv.Atoi(param)
	if err != nil {
		n = 0
	}
	switch final {
	case 'A':
		n = max(n, 1)
		s.maxUp = max(s.maxUp, n)
		s.row = max(s.row-n, 0)
	case 'J':
		s.ensure()
		s.rows[s.row] = s.rows[s.row][:min(s.col, len(s.rows[s.row]))]
		s.rows = s.rows[:s.row+1]
	case 'K':
		s.ensure()
		s.rows[s.row] = s.rows[s.row][:min(s.col, len(s.rows[s.row]))]
	}
}

func (s *screen) ensure() {
	for len(s.rows) <= s.row {
		s.rows = append(s.rows, nil)
	}
}

func (s *screen) put(c rune) {
	s.ensure()
	line := s.rows[s.row]
	for len(line) <= s.col {
		line = append(line, ' ')
	}
	line[s.col] = c
	s.rows[s.row] = line
	s.col++
}

func (s *screen) lines() []string {
	var out []string
	for _, r := range s.rows {
		out = append(out, strings.TrimRight(string(r), " "))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

func (s *screen) String() string { return strings.Join(s.lines(), "\n") }

// The recorder's own replay: cursor-up and erase rewrite lines as a terminal would.
func TestScreenReplay(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
		maxUp    int
	}{
		{"plain lines", "a\r\nb\r\n", []string{"a", "b"}, 0},
		{"a frame redrawn", "x\r\nbar 1\r\n\x1b[1A\x1b[Jbar 2\r\n", []string{"x", "bar 2"}, 1},
		{"a line printed above the frame", "bar 1\r\nbar 2\r\n\x1b[2A\x1b[Jline\r\nbar 3\r\n", []string{"line", "bar 3"}, 2},
		{"erase line", "abc\rab\x1b[K\r\n", []string{"ab"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &screen{}
			s.feed([]byte(tc.in))
			if got := s.lines(); strings.Join(got, "|") != strings.Join(tc.want, "|") || s.maxUp != tc.maxUp {
				t.Errorf("screen %q (max up %d), want %q (max up %d)", got, s.maxUp, tc.want, tc.maxUp)
			}
		})
	}
}
