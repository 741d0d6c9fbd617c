// Package configs holds the files brakebench ships with: the pinned component versions and the
// default configuration of every suite. They are embedded so that a built binary needs no checkout.
package configs

import "embed"

// FS holds versions.yaml, published.yaml, suites/*.yaml, gates/*.yaml and brakes/*.yaml (each
// brake type's defaults).
//
//go:embed versions.yaml published.yaml suites/*.yaml gates/*.yaml brakes/*.yaml
var FS embed.FS
