// Package layers holds the test that keeps brakebench's pure layers pure: the packages that
// compute, judge and render results (stats, results, the metric catalogue, brakes' definitions,
// analysis, gates, reports, trend, the tuner, and what they stand on) import nothing that talks to a
// cluster: no client-go, and no brakebench package outside this list.
package layers

// Pure are the pure packages, relative to the module; each may import only packages of this
// list from the module, and nothing under k8s.io/client-go.
var Pure = []string{
	"configs",
	"internal/analysis",
	"internal/brakes",
	"internal/catalog",
	"internal/ceiling",
	"internal/config",
	"internal/flagset",
	"internal/gates",
	"internal/images",
	"internal/pipeline",
	"internal/reproduce",
	"internal/results",
	"internal/scrape",
	"internal/stats",
	"internal/trend",
	"internal/tune",
	"internal/yamldoc",
	"reports",
}
