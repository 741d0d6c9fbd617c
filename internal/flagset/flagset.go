// Package flagset merges command-line flag lists ("--name=value"), the one operation brake
// toggles and control-plane faults both need.
package flagset

import "strings"

// Name is a flag's name without its value ("--a=b" -> "--a").
func Name(f string) string {
	n, _, _ := strings.Cut(f, "=")
	return n
}

// Merge appends extra to base, replacing any flag of base that extra sets again.
func Merge(base, extra []string) []string {
	override := map[string]bool{}
	for _, e := range extra {
		override[Name(e)] = true
	}
	var out []string
	for _, b := range base {
		if !override[Name(b)] {
			out = append(out, b)
		}
	}
	return append(out, extra...)
}
