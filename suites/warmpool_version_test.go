package suites

import "testing"

// Progress lines name a cell's controller version, the pinned one included.
func TestVersionName(t *testing.T) {
	for _, tc := range []struct{ v, pinned, want string }{
		{"", "v0.5.5", "v0.5.5"},
		{"v0.6.0", "v0.5.5", "v0.6.0"},
		{"v0.6.0", "", "v0.6.0"},
		{"", "", "(pinned version)"},
	} {
		if got := versionName(tc.v, tc.pinned); got != tc.want {
			t.Errorf("versionName(%q, %q) = %q, want %q", tc.v, tc.pinned, got, tc.want)
		}
	}
}
