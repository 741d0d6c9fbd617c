package brakes

import (
	"fmt"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/scrape"
)

// cacheLabelSelectors is agent-sandbox's --cache-label-selectors (v0.5.3 and later): the
// controller's Pod and Service informers cache only objects carrying its tracking label, so
// list/watch volume and memory follow the sandboxes, not the cluster. A switch: no setting, no
// defaults file.
type cacheLabelSelectors struct{}

func init() { register(cacheLabelSelectors{}) }

func (cacheLabelSelectors) Name() string { return "cache-label-selectors" }

func (cacheLabelSelectors) Setting(config.Section) (string, string, error) { return "true", "", nil }

// Space: a switch, searched as on or off.
func (cacheLabelSelectors) Space() Dimension { return Dimension{Kind: KindBool, Default: "off"} }

func (cacheLabelSelectors) Flags(string) []string { return []string{"--cache-label-selectors"} }

// Evidence: none a cell can give: what the selector leaves out of the cache is the cluster's
// other pods, and the lab has few; the controller's memory is quoted for the comparison with the
// baseline.
func (cacheLabelSelectors) Evidence(c *results.Cell, _ string) (bool, string, bool) {
	mem := "-"
	if m, ok := c.Metrics["agent-sandbox-controller"]; ok && m.Error == "" {
		if v, n := scrape.SumN(m.Series, "process_resident_memory_bytes", nil); n > 0 {
			mem = fmt.Sprintf("%.0f MiB", v/(1<<20))
		}
	}
	return false, "not judged in one cell: it saves the caching of pods the controller does not own, which only a cluster with many other pods shows; controller memory here " + mem, false
}
