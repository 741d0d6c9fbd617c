package analysis

import (
	"testing"
	"time"

	"github.com/brakebench/brakebench/internal/results"
)

func TestLabOverRun(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	health := func(rev int64) *results.LabHealth { return &results.LabHealth{EtcdRevision: rev} }
	hk := func(before, after int64, secs float64) *results.Housekeeping {
		return &results.Housekeeping{DBBytesBefore: before, DBBytesAfter: after, Seconds: secs}
	}
	for _, tc := range []struct {
		name           string
		cells          []results.Cell
		wantNil        bool
		wantFirst      int64
		wantLast       int64
		wantMinutes    float64
		wantHK         string
		wantSecs, free float64
	}{
		{name: "not a lab run", cells: []results.Cell{{T0: t0}, {T0: t0.Add(time.Minute)}}, wantNil: true},
		{name: "one cell", cells: []results.Cell{{T0: t0, Lab: health(1)}}, wantNil: true},
		{
			// first and last by when they ran, not by their place in the list; a cell whose
			// health could not be read, or that never started, is left out.
			name: "by start time, without housekeeping",
			cells: []results.Cell{
				{T0: t0.Add(2 * time.Minute), Lab: health(300)},
				{T0: t0, Lab: health(100)},
				{T0: t0.Add(9 * time.Minute), Lab: &results.LabHealth{EtcdRevision: 999, Error: "etcd status: refused"}},
				{Lab: health(5)},
				{T0: t0.Add(time.Minute), Lab: health(200)},
			},
			wantFirst: 100, wantLast: 300, wantMinutes: 2, wantHK: "none",
		},
		{
			name: "housekeeping medians",
			cells: []results.Cell{
				{T0: t0, Lab: health(1), Housekeeping: hk(100, 40, 0.5)},
				{T0: t0.Add(time.Minute), Lab: health(2), Housekeeping: hk(300, 40, 0.7)},
				{T0: t0.Add(2 * time.Minute), Lab: health(3), Housekeeping: hk(200, 40, 0.6)},
				{T0: t0.Add(3 * time.Minute), Lab: health(4), Housekeeping: &results.Housekeeping{Error: "etcd down"}},
			},
			wantFirst: 1, wantLast: 4, wantMinutes: 3, wantHK: "etcd-defrag", wantSecs: 0.6, free: 160,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := LabOverRun(tc.cells)
			if tc.wantNil {
				if got != nil {
					t.Fatalf("got %+v, want nil", got)
				}
				return
			}
			if got == nil {
				t.Fatal("nil")
			}
			if got.First.EtcdRevision != tc.wantFirst || got.Last.EtcdRevision != tc.wantLast || got.Minutes != tc.wantMinutes ||
				got.Housekeeping != tc.wantHK || got.HousekeepingSeconds != tc.wantSecs || got.FreedBytes != tc.free {
				t.Errorf("got %+v", got)
			}
		})
	}
}
