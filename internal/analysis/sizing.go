package analysis

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/brakebench/brakebench/internal/results"
)

// SizingTarget is what a sizing note is asked for: a sustained claim rate, a burst, and how long
// a claim holds its sandbox.
type SizingTarget struct {
	Rate  float64       // claims/s to sustain warm (0: not asked)
	Burst int           // claims released together (0: not asked)
	Hold  time.Duration // how long a claim keeps its sandbox
}

// SizingLine is one computed figure and the measurement it came from.
type SizingLine struct {
	What, Value, From string
}

// Sizing computes a sizing note for one cell of a run from what that run measured, never from an
// assumed figure; a figure whose measurement is missing says so instead of a number.
//
//   - Pools for a sustained rate: one pool refills at most its measured refill create ceiling
//     (ceiling.refill_create_5s: the most refill creates in any 5 s, per second), so a rate
//     above it empties the pool however large it is; pools needed = ceil(rate / ceiling), from
//     the bootstrap interval's lower end (a conservative figure) and from the median. When the
//     run searched the sustainable rate (workload.mode ceiling), the same from its lower bound.
//   - Replicas for a burst of R: each claim of a burst takes a Ready member at once (no refill
//     lands within a burst: the refill starts after it), so the pool needs R replicas. The pool
//     is back to full after R / (refill rate), the refill rate being the measured warm claims per
//     second of refill (pool.refill_s, the slowest repetition: with a handful of repetitions
//     the maximum stands in for a p99), assuming the refill time grows linearly with R (stated).
//   - Sandboxes alive: with a hold time H, a burst every T keeps R x ceil(H / T) claimed
//     sandboxes alive beside the pool's R (Little's law for the sustained rate: rate x H).
func Sizing(r *results.Results, cell string, t SizingTarget) ([]SizingLine, error) {
	var sum *results.Summary
	for i := range r.Summary {
		if r.Summary[i].Name == cell {
			sum = &r.Summary[i]
		}
	}
	if sum == nil {
		var names []string
		for _, s := range r.Summary {
			names = append(names, s.Name)
		}
		return nil, fmt.Errorf("no cell %q in run %s (cells: %s)", cell, r.RunID, strings.Join(names, ", "))
	}
	var out []SizingLine
	add := func(what, value, from string) { out = append(out, SizingLine{what, value, from}) }
	ceil5, ok := r.Find(cell, "ceiling.refill_create_5s")
	if t.Rate > 0 {
		switch {
		case !ok || !(float64(ceil5.Value) > 0):
			add(fmt.Sprintf("pools for %.4g claims/s", t.Rate), "not computed", "no refill create ceiling measured in this cell (a burst run measures it)")
		default:
			lo := float64(ceil5.CI.Lo)
			v := fmt.Sprintf("%d (median ceiling)", int(math.Ceil(t.Rate/float64(ceil5.Value))))
			if lo > 0 {
				v = fmt.Sprintf("%d (interval's lower end), %d (median)", int(math.Ceil(t.Rate/lo)), int(math.Ceil(t.Rate/float64(ceil5.Value))))
			}
			add(fmt.Sprintf("pools for %.4g claims/s", t.Rate), v,
				fmt.Sprintf("refill create ceiling %.1f/s over 5 s, median of %d repetitions of %s (95%% interval %.1f-%.1f)", float64(ceil5.Value), len(ceil5.PerRep), cell, lo, float64(ceil5.CI.Hi)))
		}
		if s := sum.Sustained; s != nil && float64(s.Lo) > 0 && !sum.Sustained.Insufficient {
			add(fmt.Sprintf("pools for %.4g claims/s (searched ceiling)", t.Rate), fmt.Sprintf("%d", int(math.Ceil(t.Rate/float64(s.Lo)))),
				"the sustained ceiling's lower bound "+fmt.Sprintf("%.4g", float64(s.Lo))+" claims/s: "+s.Text)
		}
		if t.Hold > 0 {
			add(fmt.Sprintf("claimed sandboxes alive at %.4g claims/s", t.Rate), fmt.Sprintf("%.0f", math.Ceil(t.Rate*t.Hold.Seconds())),
				fmt.Sprintf("rate x hold time %s (Little's law), beside the pools' replicas", t.Hold))
		}
	}
	if t.Burst > 0 {
		add(fmt.Sprintf("pool replicas for a burst of %d", t.Burst), fmt.Sprintf("%d", t.Burst),
			"every claim of a burst takes a Ready member at once; the refill starts only after the burst")
		rate, from := refillRate(r, cell)
		if rate > 0 {
			every := float64(t.Burst) / rate
			add(fmt.Sprintf("time to refill %d", t.Burst), fmt.Sprintf("%.0f s", math.Ceil(every)), from+"; assumes the refill time grows linearly with the burst")
			if t.Hold > 0 {
				n := math.Ceil(t.Hold.Seconds() / every)
				add(fmt.Sprintf("claimed sandboxes alive, bursts of %d every %.0f s held %s", t.Burst, math.Ceil(every), t.Hold),
					fmt.Sprintf("%.0f", float64(t.Burst)*n), fmt.Sprintf("%d bursts within the hold time, beside the pool's %d", int(n), t.Burst))
			}
		} else {
			add(fmt.Sprintf("time to refill %d", t.Burst), "not computed", from)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("nothing asked: give a rate, a burst, or both")
	}
	return out, nil
}

// refillRate is the slowest repetition's warm claims per second of refill in cell (pool.refill_s
// against the repetition's warm claims), and the sentence saying where it came from.
func refillRate(r *results.Results, cell string) (float64, string) {
	var rates []float64
	for _, c := range r.Cells {
		if c.Name != cell || c.Error != "" || c.Stats.RefillSeconds == nil || *c.Stats.RefillSeconds <= 0 || c.Stats.Warm == 0 {
			continue
		}
		rates = append(rates, float64(c.Stats.Warm) / *c.Stats.RefillSeconds)
	}
	if len(rates) == 0 {
		return 0, "no repetition of " + cell + " refilled within its timeout (pool.refill_s not measured)"
	}
	sort.Float64s(rates)
	return rates[0], fmt.Sprintf("refill %.1f warm slots/s, the slowest of %d repetitions of %s (T0 to the pool full again, pool.refill_s)", rates[0], len(rates), cell)
}
