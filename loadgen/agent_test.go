package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func TestRecordsRoundTrip(t *testing.T) {
	t0 := time.Unix(1000, 0).UTC()
	in := []Record{
		{Name: "claim-00000", Index: 0, Planned: t0, Intent: t0.Add(time.Millisecond), Acked: t0.Add(5 * time.Millisecond), Ready: t0.Add(80 * time.Millisecond)},
		{Name: "claim-00001", Index: 1, Planned: t0, Intent: t0.Add(2 * time.Millisecond), Acked: t0.Add(6 * time.Millisecond), Err: "forbidden"},
	}
	var buf bytes.Buffer
	buf.WriteString("agent: starting\n") // the agent's own messages are skipped
	for _, r := range in {
		buf.WriteString(mustJSON(t, r) + "\n")
	}
	buf.WriteString("done\n")
	got, err := ReadRecords(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0].Ready.Equal(in[0].Ready) || got[1].Err != "forbidden" || got[1].Sent().Name != "claim-00001" {
		t.Fatalf("records %+v", got)
	}
	// A log cut short (the agent died) is an error, with what was read.
	cut := strings.NewReader(mustJSON(t, in[0]) + "\n")
	if got, err := ReadRecords(cut); err == nil || len(got) != 1 {
		t.Fatalf("cut log: %d records, err %v", len(got), err)
	}
	if _, err := ReadRecords(strings.NewReader("{not json\ndone\n")); err == nil {
		t.Fatal("a broken record must be an error")
	}
}

// An agent started after T0 sends nothing: the burst's schedule would be shifted.
func TestAgentRefusesALateStart(t *testing.T) {
	var out bytes.Buffer
	err := RunAgent(context.Background(), &rest.Config{Host: "http://127.0.0.1:1"}, AgentSpec{Namespace: "ns", T0: time.Now().Add(-time.Second), Schedule: Burst(3)}, &out)
	if err == nil || !strings.Contains(err.Error(), "after T0") || out.Len() != 0 {
		t.Fatalf("late start: err %v, output %q", err, out.String())
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
