package reports

import (
	"fmt"
	"io"
	"strings"

	"github.com/brakebench/brakebench/internal/catalog"
	"github.com/brakebench/brakebench/internal/results"
)

// FaultCell is one cell's fault timeline and statistics as the report shows them.
type FaultCell struct {
	Cell, Fault string
	Events      []results.FaultEvent // seconds from T0 (negative: before the burst)
	Stats       [][2]string          // the fault type's rows, then its invariants
	Violated    int                  // invariants that did not hold
}

// faultCells are the cells with a fault timeline (faults, and brakes that act on the cluster) or
// fault statistics, in run order.
func faultCells(r *results.Results) []FaultCell {
	var out []FaultCell
	for _, c := range r.Cells {
		if len(c.FaultLog) == 0 && c.Stats.Fault == nil {
			continue
		}
		fc := FaultCell{Cell: c.ID, Fault: c.Fault, Events: c.FaultLog, Stats: catalog.Default.Describe(c.Fault, c.Stats.Fault)}
		if c.Stats.Fault != nil {
			for _, inv := range c.Stats.Fault.Invariants {
				if !inv.Held {
					fc.Violated++
				}
			}
		}
		if fc.Fault == "" || fc.Fault == "none" {
			fc.Fault = "-"
		}
		out = append(out, fc)
	}
	return out
}

// faultText writes each cell's fault timeline and statistics for the terminal.
func faultText(w io.Writer, r *results.Results) {
	for _, fc := range faultCells(r) {
		fmt.Fprintf(w, "fault %s (%s):\n", fc.Cell, fc.Fault)
		for _, e := range fc.Events {
			fmt.Fprintf(w, "  %+7.1fs  %-18s %-9s %s\n", e.T, e.Fault, e.Event, e.Detail)
		}
		for _, kv := range fc.Stats {
			fmt.Fprintf(w, "  %s: %s\n", kv[0], strings.TrimSpace(kv[1]))
		}
	}
}
