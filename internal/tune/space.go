package tune

import (
	"math"
	"math/rand/v2"
	"strings"

	"github.com/brakebench/brakebench/internal/brakes"
)

// Setting is one candidate: a value for each searched brake ("on" or "off" for a switch).
type Setting struct {
	// Item is the setting as a matrix.brakes item and cell name ("max-refill-rate=20+replenish-delay=5s";
	// a switch that is on is its name alone, one that is off is left out).
	Item   string            `json:"item"`
	Values map[string]string `json:"values"`
}

// Item writes a setting as a matrix.brakes item, brakes in tune.brakes order; "none" when every
// brake of it is off.
func (sp *Spec) Item(s Setting) string {
	var parts []string
	for _, d := range sp.Dims {
		v := s.Values[d.Brake]
		switch {
		case v == "" || v == "off":
		case d.Kind == brakes.KindBool:
			parts = append(parts, d.Brake)
		default:
			parts = append(parts, d.Brake+"="+v)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

// setting builds a Setting from values, its Item filled in.
func (sp *Spec) setting(values map[string]string) Setting {
	s := Setting{Values: values}
	s.Item = sp.Item(s)
	return s
}

// at maps a point of the unit cube to the dimensions' values: linear or log within [Lo, Hi],
// a switch on in the upper half.
func (sp *Spec) at(u []float64) Setting {
	values := map[string]string{}
	for i, d := range sp.Dims {
		switch {
		case d.Kind == brakes.KindBool:
			values[d.Brake] = "off"
			if u[i] >= 0.5 {
				values[d.Brake] = "on"
			}
		case d.Log:
			values[d.Brake] = d.format(d.Lo * math.Pow(d.Hi/d.Lo, u[i]))
		default:
			values[d.Brake] = d.format(d.Lo + (d.Hi-d.Lo)*u[i])
		}
	}
	return sp.setting(values)
}

// point is a candidate with where it was drawn in the unit cube.
type point struct {
	s Setting
	u []float64
}

// Sample draws n distinct candidates by Latin hypercube sampling over the dimensions (each
// dimension's range cut into n strata, one point in each, the strata paired at random; on the
// log scale for rates, delays and counts): n points cover every dimension's range evenly, which a
// grid of n points over several dimensions cannot. Settings that round to the same values, and
// settings in seen (the all-off setting, the baseline itself, is always there), are drawn again,
// at most a few times; fewer than n come back when the space has fewer distinct settings. A
// space of switches only with room for every combination gets every combination.
func (sp *Spec) Sample(n int, rng *rand.Rand, seen map[string]bool) []point {
	var out []point
	if d := sp.distinct(); d > 0 && n >= d {
		// Switches only, and room for all of them: every on/off combination but all-off.
		for mask := 1; mask <= d; mask++ {
			u := make([]float64, len(sp.Dims))
			for i := range u {
				u[i] = float64(mask >> i & 1)
			}
			if p := (point{sp.at(u), u}); !seen[p.s.Item] {
				seen[p.s.Item] = true
				out = append(out, p)
			}
		}
		return out
	}
	for try := 0; try < 8 && len(out) < n; try++ {
		want := n - len(out)
		perms := make([][]int, len(sp.Dims))
		for i := range perms {
			perms[i] = rng.Perm(want)
		}
		for j := 0; j < want; j++ {
			u := make([]float64, len(sp.Dims))
			for i := range u {
				u[i] = (float64(perms[i][j]) + rng.Float64()) / float64(want)
			}
			if p := (point{sp.at(u), u}); !seen[p.s.Item] {
				seen[p.s.Item] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// Around draws n distinct candidates near the elites, best first (iterated racing: the next
// iteration searches where the last one's best settings are): each a randomly chosen elite (by
// rank: of two, the better one twice as often) moved by a
// normal step of sd sigma per dimension in the unit cube (reflected at its edges), a switch
// flipped with probability flip. Candidates in seen are drawn again, at most a few times.
func (sp *Spec) Around(elites [][]float64, n int, sigma, flip float64, rng *rand.Rand, seen map[string]bool) []point {
	var out []point
	for try := 0; try < 20*n && len(out) < n && len(elites) > 0; try++ {
		// The better elite more often: elite i (best first) with weight len-i.
		w := rng.IntN(len(elites) * (len(elites) + 1) / 2)
		i := 0
		for w >= len(elites)-i {
			w -= len(elites) - i
			i++
		}
		e := elites[i]
		u := make([]float64, len(e))
		for i, d := range sp.Dims {
			if d.Kind == brakes.KindBool {
				u[i] = e[i]
				if rng.Float64() < flip {
					u[i] = 1 - e[i]
				}
				continue
			}
			u[i] = reflect01(e[i] + sigma*rng.NormFloat64())
		}
		if p := (point{sp.at(u), u}); !seen[p.s.Item] {
			seen[p.s.Item] = true
			out = append(out, p)
		}
	}
	return out
}

// reflect01 folds x into [0, 1] by reflection at the edges.
func reflect01(x float64) float64 {
	x = math.Mod(math.Abs(x), 2)
	if x > 1 {
		x = 2 - x
	}
	return x
}

// numericDims counts the dimensions with a value (not switches).
func (sp *Spec) numericDims() int {
	n := 0
	for _, d := range sp.Dims {
		if d.Kind != brakes.KindBool {
			n++
		}
	}
	return n
}

// distinct is how many settings the space holds at most (switches only: 2^k - 1 besides none);
// -1 when a dimension has a value (many).
func (sp *Spec) distinct() int {
	if sp.numericDims() > 0 {
		return -1
	}
	return 1<<len(sp.Dims) - 1
}
