// Package configs holds the files brakebench ships with: the pinned component versions and the
// default configuration of every suite. They are embedded so that a built binary needs no checkout.
package configs

import "embed"

// FS holds versions.yaml, published.yaml, suites/*.yaml, gates/*.yaml, brakes/*.yaml (each
// brake type's defaults) and faults/*.yaml (each fault type's defaults).
//
//go:embed versions.yaml published.yaml suites/*.yaml gates/*.yaml brakes/*.yaml faults/*.yaml
var FS embed.FS
