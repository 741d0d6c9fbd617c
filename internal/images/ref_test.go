package images

import (
	"strings"
	"testing"
)

func TestCheckRef(t *testing.T) {
	cases := []struct {
		ref  string
		want string // "" when valid; else a substring of the error
	}{
		{"registry.k8s.io/pause:3.10", ""},
		{"busybox", ""},
		{"localhost:5000/x/y:v1", ""},
		{"brakebench.local/brakebench:dev", ""},
		{"ghcr.io/x/y:v1@sha256:" + strings.Repeat("a", 64), ""},
		{"pause:3.10\t", "tag can only contain the characters"},
		{"registry.k8s.io/pause:3.10\n", "tag can only contain the characters"},
		{"a\nb", "repository can only contain the characters"},
		{"UPPER/x", "repository can only contain the characters"},
		{strings.Repeat("a", 100000), "repository must be between 1 and 255 characters in length"},
		{strings.Repeat("a", 250) + ".example/x", "the name before the tag or digest is 260 characters long; at most 255"},
		{"x:" + strings.Repeat("t", 200), "tag must be between 1 and 128 characters in length"},
		{"x@sha256:abc", "invalid checksum digest length"},
		{"", "a repository name must be specified"},
		{" x", "repository can only contain the characters"},
	}
	for _, c := range cases {
		err := CheckRef(c.ref)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%.40q: %v, want valid", c.ref, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%.40q: %v, want %q", c.ref, err, c.want)
		case err != nil && (strings.ContainsAny(err.Error(), "\n\t") || len(err.Error()) > 200):
			t.Errorf("%.40q: %q is not one short line", c.ref, err)
		}
	}
}
