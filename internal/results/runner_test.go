package results

import (
	"math"
	"testing"
	"time"

	"github.com/brakebench/brakebench/internal/stats"
)

// The runner's per-shard record is additive: it round-trips through results.json (an empty send
// lag included), and a cell without it (the local runner, a file written before it) reads back with none.
func TestRunnerRecordRoundTrip(t *testing.T) {
	off, errMS, spread := 1.5, 0.8, 2.0
	in := &Results{Schema: SchemaVersion, Suite: "warmpool-burst", RunID: "r", Cells: []Cell{
		{ID: "none#1", Name: "none", Runner: &Runner{Shards: 2, MaxClockSkewMS: 50, ClockSpreadMS: &spread, ClockSpreadErrorMS: &errMS, PerShard: []RunnerShard{
			{Index: 0, Pod: "brakebench-runner-0-x", Claims: 2, SendLagMS: stats.Summarize([]float64{1, 3}), StartedAt: time.Unix(100, 5).UTC(), ClockOffsetMS: &off, ClockErrorMS: &errMS},
			{Index: 1, Claims: 0, SendLagMS: stats.Summarize(nil)},
		}}},
		{ID: "none#2", Name: "none"},
	}}
	dir := t.TempDir()
	path, err := Write(dir, in)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	r := back.Cells[0].Runner
	if r == nil || r.Shards != 2 || len(r.PerShard) != 2 || *r.ClockSpreadMS != 2 || back.Cells[1].Runner != nil {
		t.Fatalf("runner %+v, second cell %+v", r, back.Cells[1].Runner)
	}
	s0, s1 := r.PerShard[0], r.PerShard[1]
	if s0.SendLagMS.N != 2 || s0.SendLagMS.P99 != 3 || *s0.ClockOffsetMS != 1.5 || !s0.StartedAt.Equal(time.Unix(100, 5)) || s0.ServerOffsetMS != nil {
		t.Errorf("shard 0 %+v", s0)
	}
	if s1.SendLagMS.N != 0 || !math.IsNaN(s1.SendLagMS.P50) {
		t.Errorf("shard 1's empty send lag %+v", s1.SendLagMS)
	}
}
