// Package catalog is the metric catalogue the pure layers (analysis, reports, gates, trend) read:
// the per-repetition metrics brake and fault types add, and how a fault type's statistics read
// as rows. Brake and fault types register here from their own packages (init); the catalogue
// imports nothing that talks to a cluster, so neither do its readers.
package catalog

import (
	"fmt"
	"sort"
	"sync"

	"github.com/brakebench/brakebench/internal/results"
)

// Metric is a per-repetition summary row a gate can name, added by a brake or fault type.
type Metric struct {
	Key, Unit string
	Value     func(c *results.Cell) float64 // NaN: not measured in this cell
}

// Fault is what the pure layers know of a fault type.
type Fault struct {
	Name    string
	Metrics []Metric
	// Describe is the fault's statistics as labelled rows (nil: none of its own).
	Describe func(fs *results.FaultStats) [][2]string
}

// Catalog holds the registered metrics. Default is the one brake and fault types register into.
type Catalog struct {
	mu     sync.RWMutex
	brakes map[string][]Metric
	faults map[string]Fault
}

// Default is the process's catalogue, filled by the init functions of the brake and fault types.
var Default = &Catalog{}

// AddBrakeMetrics registers a brake type's metrics.
func (c *Catalog) AddBrakeMetrics(brake string, ms []Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.brakes == nil {
		c.brakes = map[string][]Metric{}
	}
	c.brakes[brake] = append(c.brakes[brake], ms...)
}

// AddFault registers a fault type; a name registered twice is a programming error.
func (c *Catalog) AddFault(f Fault) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.faults == nil {
		c.faults = map[string]Fault{}
	}
	if _, dup := c.faults[f.Name]; dup {
		panic(fmt.Sprintf("catalog: fault %s registered twice", f.Name))
	}
	c.faults[f.Name] = f
}

// Metrics are every registered brake's, then every fault's metrics, each group sorted by key.
func (c *Catalog) Metrics() []Metric {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var b, f []Metric
	for _, ms := range c.brakes {
		b = append(b, ms...)
	}
	for _, ft := range c.faults {
		f = append(f, ft.Metrics...)
	}
	sort.Slice(b, func(i, j int) bool { return b[i].Key < b[j].Key })
	sort.Slice(f, func(i, j int) bool { return f[i].Key < f[j].Key })
	return append(b, f...)
}

// Describe is a recorded cell's fault statistics as labelled rows: the fault type's own rows,
// then its invariants (nil: no fault, an unknown one, or nothing measured).
func (c *Catalog) Describe(fault string, fs *results.FaultStats) [][2]string {
	c.mu.RLock()
	f, ok := c.faults[fault]
	c.mu.RUnlock()
	if !ok || fs == nil {
		return nil
	}
	var rows [][2]string
	if f.Describe != nil {
		rows = f.Describe(fs)
	}
	for _, inv := range fs.Invariants {
		held := "held"
		if !inv.Held {
			held = "VIOLATED"
		}
		rows = append(rows, [2]string{inv.Name, held + ": " + inv.Detail})
	}
	return rows
}
