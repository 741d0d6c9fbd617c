// Package configs holds the files brakebench ships with: the pinned component versions and the
// default configuration of every suite. They are embedded so that a built binary needs no checkout.
package configs

import "embed"

// FS holds versions.yaml and suites/*.yaml.
//
//go:embed versions.yaml suites/*.yaml
var FS embed.FS
