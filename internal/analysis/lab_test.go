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
		wantRestart    float64
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
		{
			name: "etcd then a restart",
			cells: []results.Cell{
				{T0: t0, Lab: health(1), Housekeeping: &results.Housekeeping{Steps: []string{"etcd-defrag", "apiserver-restart"}, DBBytesBefore: 50, DBBytesAfter: 10, Seconds: 9, RestartSeconds: 8}},
				{T0: t0.Add(time.Minute), Lab: health(2), Housekeeping: &results.Housekeeping{Steps: []string{"etcd-defrag", "apiserver-restart"}, DBBytesBefore: 70, DBBytesAfter: 10, Seconds: 11, RestartSeconds: 10}},
			},
			wantFirst: 1, wantLast: 2, wantMinutes: 1, wantHK: "etcd-defrag+apiserver-restart", wantSecs: 10, free: 50, wantRestart: 9,
		},
		{
			// a restart alone frees nothing in etcd: no freed figure, not a negative one
			name: "restart only",
			cells: []results.Cell{
				{T0: t0, Lab: health(1), Housekeeping: &results.Housekeeping{Steps: []string{"apiserver-restart"}, Seconds: 6, RestartSeconds: 6}},
				{T0: t0.Add(time.Minute), Lab: health(2), Housekeeping: &results.Housekeeping{Steps: []string{"apiserver-restart"}, Seconds: 8, RestartSeconds: 8}},
			},
			wantFirst: 1, wantLast: 2, wantMinutes: 1, wantHK: "apiserver-restart", wantSecs: 7, wantRestart: 7,
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
				got.Housekeeping != tc.wantHK || got.HousekeepingSeconds != tc.wantSecs || got.FreedBytes != tc.free || got.RestartSeconds != tc.wantRestart {
				t.Errorf("got %+v", got)
			}
		})
	}
}
