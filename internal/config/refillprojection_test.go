package config

import (
	"strings"
	"testing"
	"time"
)

// workload.refillProjection: a window from 1s (10s by default), or 0 to turn the projection off.
func TestRefillProjectionKey(t *testing.T) {
	cases := []struct {
		name string
		sets []string
		want time.Duration
		err  string
	}{
		{name: "default", want: 10 * time.Second},
		{name: "a window", sets: []string{"workload.refillProjection=20s"}, want: 20 * time.Second},
		{name: "off", sets: []string{"workload.refillProjection=0"}, want: 0},
		{name: "off, as a duration", sets: []string{"workload.refillProjection=0s"}, want: 0},
		{name: "too short a window", sets: []string{"workload.refillProjection=500ms"}, err: `key "workload.refillProjection": expected 0 (off) or a window from 1s to 24h, got 500ms`},
		{name: "over a day", sets: []string{"workload.refillProjection=25h"}, err: `key "workload.refillProjection": expected 0 (off) or a window from 1s to 24h, got 25h0m0s`},
		{name: "not a duration", sets: []string{"workload.refillProjection=off"}, err: `key "workload.refillProjection": expected a duration like 30s or 1m30s, got "off"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Loader{Suite: "warmpool-burst", Sets: c.sets}.Load()
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Config.Workload.RefillProjection; got != c.want {
				t.Errorf("refillProjection %s, want %s", got, c.want)
			}
		})
	}
}
