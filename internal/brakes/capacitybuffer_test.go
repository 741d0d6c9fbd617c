package brakes

import (
	"context"
	"strings"
	"testing"
)

func TestCapacityBufferApply(t *testing.T) {
	b, ok := Get("capacity-buffer")
	if !ok {
		t.Fatal("capacity-buffer is not registered")
	}
	var installed string
	placed := map[string]any{"nodeSelector": map[string]any{karpenterPoolLabel: "bb-node-repair"},
		"containers": []any{map[string]any{"name": "main", "image": "pause"}}}
	for _, tc := range []struct {
		name    string
		spec    map[string]any
		wantErr string
	}{
		{"on a Karpenter pool", placed, ""},
		{"on the lab's own nodes", map[string]any{"containers": []any{}}, "is not on one"},
		{"no pod spec", nil, "needs the cell's namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			installed = ""
			cell := &Cell{Namespace: "bb-x-1", PodSpec: tc.spec, Log: func(string, string, string) {},
				Install: func(_ context.Context, _ string, m []byte) (int, error) { installed = string(m); return 2, nil }}
			err := b.(Applier).Apply(context.Background(), cell, "3")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || installed != "" {
					t.Fatalf("got %v (installed %q), want an error containing %q and nothing installed", err, installed, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{`"kind":"PodTemplate"`, `"kind":"CapacityBuffer"`, `"replicas":3`, `"namespace":"bb-x-1"`, `"podTemplateRef":{"name":"bb-headroom"}`, `"brakebench.io/pool":"bb-node-repair"`} {
				if !strings.Contains(installed, want) {
					t.Errorf("manifest lacks %s:\n%s", want, installed)
				}
			}
		})
	}
}
