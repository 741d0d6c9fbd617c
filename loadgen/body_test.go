package loadgen

import (
	"encoding/json"
	"testing"
	"time"
)

// The template's bytes are json.Marshal's of the claim object, for any namespace, pool, prefix
// (escaping included), labels, index and intent.
func TestBodyTemplateIsMarshal(t *testing.T) {
	intents := []time.Time{
		time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 3, 10, 0, 0, 123456789, time.UTC),
		time.Date(2026, 12, 3, 10, 0, 0, 120000000, time.FixedZone("CET", 3600)),
	}
	for _, tc := range []struct {
		name string
		g    Generator
	}{
		{"no labels", Generator{Namespace: "ns", Pool: "p", Prefix: "c-"}},
		{"a cell", Generator{Namespace: "bb-0a1b2c3d-01", Pool: "bench-pool", Prefix: "claim-",
			Labels: map[string]string{"app.kubernetes.io/managed-by": "brakebench", "brakebench.io/run-id": "0a1b2c3d"}}},
		{"a label that overrides created-by", Generator{Namespace: "ns", Pool: "p", Prefix: "s2-claim-",
			Labels: map[string]string{"agents.x-k8s.io/created-by": "brakebench"}}},
		{"characters JSON escapes", Generator{Namespace: `n"s`, Pool: "p<&>", Prefix: "c\\\u2028\x01-",
			Labels: map[string]string{"k": "v\"<>"}}},
		{"empty prefix", Generator{Namespace: "ns", Pool: "p"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, i := range []int{0, 7, 12345, 99999, 100000, 1234567, -3} {
				for _, at := range intents {
					want, err := json.Marshal(tc.g.object(i, at))
					if err != nil {
						t.Fatal(err)
					}
					if got := tc.g.Body(i, at); string(got) != string(want) {
						t.Fatalf("claim %d at %s:\n got %s\nwant %s", i, at, got, want)
					}
				}
			}
		})
	}
}

// What encoding one claim costs, by json.Marshal and by the template (go test -bench ClaimBody).
func BenchmarkClaimBody(b *testing.B) {
	g := Generator{Namespace: "bb-0a1b2c3d-01", Pool: "bench-pool", Prefix: "claim-",
		Labels: map[string]string{"app.kubernetes.io/managed-by": "brakebench", "brakebench.io/run-id": "0a1b2c3d"}}
	at := time.Date(2026, 12, 3, 10, 0, 0, 123456789, time.UTC)
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := json.Marshal(g.object(i%100000, at)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("template", func(b *testing.B) {
		b.ReportAllocs()
		tpl := g.template()
		for i := 0; i < b.N; i++ {
			_ = tpl.body(make([]byte, 0, 512), i%100000, at)
		}
	})
}
