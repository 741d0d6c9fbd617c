package agentsandbox

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestCreatePasses(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 300e6, time.UTC)
	epoch := func(d time.Duration) string { return fmt.Sprintf("%.6f", float64(t0.Add(d).UnixNano())/1e9) }
	log := strings.Join([]string{
		`{"level":"info","ts":` + epoch(-time.Second) + `,"msg":"Creating new pool sandboxes","namespace":"bb-a","name":"bench-pool","count":300}`,
		`{"level":"info","ts":"2026-12-01T11:59:59Z","msg":"Creating new pool sandboxes","namespace":"bb-a","count":299}`,
		// controller-runtime's default: whole seconds; 12:00:00 may be after T0 (12:00:00.3).
		`{"level":"info","ts":"2026-12-01T12:00:00Z","msg":"Creating new pool sandboxes","namespace":"bb-a","count":3}`,
		`{"level":"info","ts":` + epoch(time.Second) + `,"msg":"Creating new pool sandboxes","namespace":"bb-a","name":"bench-pool","count":50}`,
		`{"level":"info","ts":` + epoch(2*time.Second) + `,"msg":"Creating new pool sandboxes","namespace":"bb-b","name":"bench-pool","count":7}`,
		`panic: not json`,
		`{"level":"info","ts":"` + t0.Add(3*time.Second).Format(time.RFC3339Nano) + `","msg":"Creating new pool sandboxes","namespace":"bb-a","count":50}`,
		`{"level":"info","ts":` + epoch(4*time.Second) + `,"msg":"Pool status","namespace":"bb-a","count":1}`,
		`{"level":"info","ts":` + epoch(5*time.Second) + `,"msg":"Creating new pool sandboxes","namespace":"bb-a","count":12}`,
		`{"level":"info","ts":` + epoch(6*time.Second) + `,"msg":"Creating new pool sandboxes","namespace":"bb-a"}`,
		`{"truncated`,
	}, "\n")
	got, err := CreatePasses(strings.NewReader(log), "bb-a", t0)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[3 50 50 12]" {
		t.Fatalf("passes %v, want [3 50 50 12] (the fill before T0, other namespaces, other messages and lines without a count left out; a whole-second time in T0's second kept)", got)
	}
}
