package ceiling

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/brakebench/brakebench/internal/stats"
)

// LagFloor is the send lag below which lag growth never breaks a probe: a generator's p99 lag
// moving from 5 ms to 20 ms is jitter, not a backlog.
const LagFloor = 100 * time.Millisecond

// Infinite is a window's p99 when failed claims reach its 99th percentile (a failed claim's
// latency counts as infinite, as in every brakebench quantile).
const Infinite = time.Duration(math.MaxInt64)

// Criteria judged on one probe's steady part: the claims sent after Measure.Warmup. Each
// criterion set is checked; a probe meets the criteria when none breaks. A zero Criteria checks
// nothing (Validate refuses it).
//
// The steady-state rule (SteadyTol): the steady part is split into Measure.Windows (at least 2)
// equal windows by send time; the probe is steady when the last window's claim p99 is at most
// (1+SteadyTol) times the previous window's. A probe whose latency is still rising beyond that
// fails as "not steady: latency still rising", whatever its p99 against the SLO: the rate would
// break the SLO given a longer probe, so it is not sustained. Only a rise breaks (falling latency
// is the warm-up ending). A rise to a last-window p99 at or below SteadyFloor is steady (window
// jitter at low latency); a last window with failed claims at its p99 (Infinite) after a finite
// one is a rise. When either window has no claims the rule cannot judge and does not break.
type Criteria struct {
	P99SLO         time.Duration `json:"p99SLO"`         // 0 = off: claim p99 (of claims sent after the warm-up) must be <= SLO
	NoFailed       bool          `json:"noFailed"`       // any failed claim breaks
	NoCold         bool          `json:"noCold"`         // any cold (not warm-adopted) claim breaks
	PoolNotEmptied bool          `json:"poolNotEmptied"` // the warm pool reaching 0 Ready during the probe breaks
	// LagGrowth, 0 = off: send lag growing without bound breaks: the last window's p99 send lag
	// above LagGrowth x the previous window's and above LagFloor (100 ms).
	LagGrowth float64 `json:"lagGrowth"`
	// SteadyTol, 0 = off: the last window's claim p99 must be within SteadyTol (0.5 = 50%) above
	// the previous window's (see the steady-state rule above).
	SteadyTol float64 `json:"steadyTol"`
	// SteadyFloor: a last-window p99 at or below it is steady whatever the previous one (0 = none).
	SteadyFloor time.Duration `json:"steadyFloor"`
}

// Validate says what is wrong with c, each problem naming its field.
func (c Criteria) Validate() error {
	var errs []error
	if c.P99SLO < 0 {
		errs = append(errs, fmt.Errorf("ceiling: P99SLO %v must be 0 (off) or positive", c.P99SLO))
	}
	if math.IsNaN(c.LagGrowth) || math.IsInf(c.LagGrowth, 0) || (c.LagGrowth != 0 && c.LagGrowth <= 1) {
		errs = append(errs, fmt.Errorf("ceiling: LagGrowth %v must be 0 (off) or above 1 (last window's p99 send lag over LagGrowth x the previous window's)", c.LagGrowth))
	}
	if math.IsNaN(c.SteadyTol) || math.IsInf(c.SteadyTol, 0) || c.SteadyTol < 0 {
		errs = append(errs, fmt.Errorf("ceiling: SteadyTol %v must be 0 (off) or positive (0.5: the last window's p99 within 50%% of the previous window's)", c.SteadyTol))
	}
	if c.SteadyFloor < 0 {
		errs = append(errs, fmt.Errorf("ceiling: SteadyFloor %v must be 0 (none) or positive", c.SteadyFloor))
	}
	if len(errs) == 0 && c.P99SLO == 0 && !c.NoFailed && !c.NoCold && !c.PoolNotEmptied && c.LagGrowth == 0 && c.SteadyTol == 0 {
		errs = append(errs, errors.New("ceiling: no criterion set (P99SLO, NoFailed, NoCold, PoolNotEmptied, LagGrowth or SteadyTol): every rate would pass"))
	}
	return errors.Join(errs...)
}

// ProbeClaim is one claim of a probe.
type ProbeClaim struct {
	Sent    time.Duration `json:"sent"`    // when it was sent, offset from the probe's start
	Latency time.Duration `json:"latency"` // claim created to Ready; ignored when Failed
	// Failed: the claim failed or was not Ready by the probe's end; its latency counts as
	// infinite in every p99.
	Failed bool          `json:"failed,omitempty"`
	Cold   bool          `json:"cold,omitempty"` // not adopted from the warm pool
	Lag    time.Duration `json:"lag"`            // how late it was sent against its schedule
}

// Measure is what one probe measured.
type Measure struct {
	Rate     float64       `json:"rate"`     // offered rate, claims/s
	Duration time.Duration `json:"duration"` // the probe's length, warm-up included
	Warmup   time.Duration `json:"warmup"`   // claims sent before it are ignored
	// Windows is how many equal windows by send time the steady part [Warmup, Duration) is split
	// into (fewer than 2 means 2); a claim sent at or after Duration counts in the last one.
	Windows     int          `json:"windows"`
	Claims      []ProbeClaim `json:"claims"`
	PoolEmptied bool         `json:"poolEmptied"` // the warm pool reached 0 Ready during the probe
}

// Window summarizes claims sent in one span of a probe.
type Window struct {
	From, To time.Duration // send-time span, offsets from the probe's start
	Sent     int           // claims sent in it
	Failed   int
	Cold     int
	// P99 is the nearest-rank p99 latency of its claims, a failed claim counting as infinite
	// (Infinite when failed claims reach the 99th percentile); 0 with no claims.
	P99    time.Duration
	LagP99 time.Duration // nearest-rank p99 send lag; 0 with no claims
	// SentRate is Sent per second of the span; CompletedRate the claims that became Ready
	// (Sent + Latency) within the span, whenever they were sent, per second of it.
	SentRate, CompletedRate float64
}

// Windows is a probe's steady part: All of it, and Each of its equal windows in order.
type Windows struct {
	All  Window
	Each []Window
}

// Judge judges one probe: claims sent before m.Warmup are ignored; the rest are split into
// m.Windows (at least 2) equal windows by send time. ok is whether every criterion set held;
// reason names each criterion that broke with its numbers ("claim p99 4.2s over the SLO 2s"),
// joined by "; ", or when ok says what held. A probe with no steady part, or no claim sent in
// it, breaks.
func (c Criteria) Judge(m Measure) (ok bool, reason string, w Windows) {
	nw := max(m.Windows, 2)
	span := m.Duration - m.Warmup
	if span <= 0 || m.Warmup < 0 {
		return false, fmt.Sprintf("no steady part: the probe lasts %s, its warm-up %s", fmtDur(m.Duration), fmtDur(m.Warmup)), w
	}
	width := span / time.Duration(nw)
	if width <= 0 {
		width = 1
	}
	index := func(at time.Duration) int { return min(int((at-m.Warmup)/width), nw-1) }
	lat := make([][]float64, nw)
	lag := make([][]float64, nw)
	w.Each = make([]Window, nw)
	for i := range w.Each {
		w.Each[i].From = m.Warmup + time.Duration(i)*width
		w.Each[i].To = m.Warmup + time.Duration(i+1)*width
	}
	w.Each[nw-1].To = m.Duration
	completedAll := 0
	for _, cl := range m.Claims {
		if !cl.Failed {
			if ready := cl.Sent + cl.Latency; ready >= m.Warmup && ready < m.Duration {
				w.Each[index(ready)].CompletedRate++
				completedAll++
			}
		}
		if cl.Sent < m.Warmup {
			continue
		}
		i := index(cl.Sent)
		e := &w.Each[i]
		e.Sent++
		l := cl.Latency.Seconds()
		if cl.Failed {
			e.Failed++
			l = math.Inf(1)
		}
		if cl.Cold {
			e.Cold++
		}
		lat[i] = append(lat[i], l)
		lag[i] = append(lag[i], cl.Lag.Seconds())
	}
	var allLat, allLag []float64
	for i := range w.Each {
		e := &w.Each[i]
		e.P99, e.LagP99 = p99(lat[i]), p99(lag[i])
		secs := (e.To - e.From).Seconds()
		e.SentRate, e.CompletedRate = float64(e.Sent)/secs, e.CompletedRate/secs
		w.All.Sent += e.Sent
		w.All.Failed += e.Failed
		w.All.Cold += e.Cold
		allLat = append(allLat, lat[i]...)
		allLag = append(allLag, lag[i]...)
	}
	w.All.From, w.All.To = m.Warmup, m.Duration
	w.All.P99, w.All.LagP99 = p99(allLat), p99(allLag)
	w.All.SentRate, w.All.CompletedRate = float64(w.All.Sent)/span.Seconds(), float64(completedAll)/span.Seconds()

	if w.All.Sent == 0 {
		return false, fmt.Sprintf("no claims sent after the %s warm-up", fmtDur(m.Warmup)), w
	}
	var broke, held []string
	check := func(bad bool, fail, pass string) {
		if bad {
			broke = append(broke, fail)
		} else if pass != "" {
			held = append(held, pass)
		}
	}
	all := w.All
	if c.P99SLO > 0 {
		check(all.P99 > c.P99SLO,
			fmt.Sprintf("claim p99 %s over the SLO %s (%d claims after the %s warm-up)", fmtDur(all.P99), fmtDur(c.P99SLO), all.Sent, fmtDur(m.Warmup)),
			fmt.Sprintf("claim p99 %s within the SLO %s", fmtDur(all.P99), fmtDur(c.P99SLO)))
	}
	if c.NoFailed {
		check(all.Failed > 0, fmt.Sprintf("%d of %d claims failed", all.Failed, all.Sent), "no failed claim")
	}
	if c.NoCold {
		check(all.Cold > 0, fmt.Sprintf("%d of %d claims cold (not adopted from the warm pool)", all.Cold, all.Sent), "no cold claim")
	}
	if c.PoolNotEmptied {
		check(m.PoolEmptied, "the warm pool reached 0 Ready during the probe", "the warm pool never emptied")
	}
	last, prev := w.Each[nw-1], w.Each[nw-2]
	if c.LagGrowth > 0 {
		grew := last.LagP99 > LagFloor && float64(last.LagP99) > c.LagGrowth*float64(prev.LagP99)
		check(grew,
			fmt.Sprintf("send lag growing without bound: the last window's p99 send lag %s is over %g x the previous window's %s (and above %s)", fmtDur(last.LagP99), c.LagGrowth, fmtDur(prev.LagP99), fmtDur(LagFloor)),
			fmt.Sprintf("send lag p99 %s then %s", fmtDur(prev.LagP99), fmtDur(last.LagP99)))
	}
	if c.SteadyTol > 0 {
		switch {
		case last.Sent == 0 || prev.Sent == 0:
			held = append(held, "steadiness not judged (a window without claims)")
		default:
			rising := last.P99 > c.SteadyFloor &&
				((last.P99 == Infinite && prev.P99 != Infinite) ||
					(last.P99 != Infinite && float64(last.P99) > (1+c.SteadyTol)*float64(prev.P99)))
			rise := "with failed claims at its p99"
			if last.P99 != Infinite && prev.P99 > 0 {
				rise = fmt.Sprintf("%.0f%% above", (float64(last.P99)/float64(prev.P99)-1)*100)
			}
			check(rising,
				fmt.Sprintf("not steady: latency still rising: the last window's claim p99 %s is %s the previous window's %s (steady within %.0f%%)", fmtDur(last.P99), rise, fmtDur(prev.P99), c.SteadyTol*100),
				fmt.Sprintf("steady (last windows' p99 %s then %s)", fmtDur(prev.P99), fmtDur(last.P99)))
		}
	}
	if len(broke) > 0 {
		return false, strings.Join(broke, "; "), w
	}
	return true, "met: " + strings.Join(held, "; "), w
}

func p99(xs []float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	v := stats.NearestRank(xs, 99)
	if math.IsInf(v, 1) || v*1e9 >= float64(math.MaxInt64) {
		return Infinite
	}
	return time.Duration(math.Round(v * 1e9))
}

// fmtDur writes a duration with three significant digits ("4.2s", "850ms", "+Inf"), whole
// seconds from 100 s on.
func fmtDur(d time.Duration) string {
	switch {
	case d == Infinite:
		return "+Inf"
	case d >= 99950*time.Millisecond || d <= -99950*time.Millisecond:
		return fmt.Sprintf("%.0fs", d.Seconds())
	case d >= 999500*time.Microsecond || d <= -999500*time.Microsecond:
		return fmt.Sprintf("%.3gs", d.Seconds())
	case d == 0:
		return "0s"
	case d >= time.Millisecond || d <= -time.Millisecond:
		return fmt.Sprintf("%.3gms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.3gµs", float64(d)/float64(time.Microsecond))
}
