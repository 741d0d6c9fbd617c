//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brakebench/brakebench/internal/reproduce"
)

// TestReproduceQuick runs the published-number scenarios at CI size and checks that every figure
// got an honest verdict from a real measurement (or an explicit reason it cannot be reproduced).
func TestReproduceQuick(t *testing.T) {
	out := t.TempDir()
	stdout, err := runCLI(t, "reproduce", "--quick", "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(filepath.Join(out, "reproduce-*", "reproduce.json"))
	if len(matches) != 1 {
		t.Fatalf("reproduce.json: %v", matches)
	}
	raw, _ := os.ReadFile(matches[0])
	var doc struct {
		Quick bool            `json:"quick"`
		Rows  []reproduce.Row `json:"rows"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.Quick || len(doc.Rows) < 8 {
		t.Fatalf("quick=%v rows=%d", doc.Quick, len(doc.Rows))
	}
	for _, r := range doc.Rows {
		switch r.Verdict {
		case "reproduced", "differs":
			if float64(r.Measured) <= 0 {
				t.Errorf("%s: verdict %s without a measurement (%v)", r.ID, r.Verdict, r.Measured)
			}
		case "not reproducible here":
			if r.Why == "" {
				t.Errorf("%s: no reason", r.ID)
			}
		default:
			t.Errorf("%s: verdict %q (%s)", r.ID, r.Verdict, r.Why)
		}
	}
	if !strings.Contains(stdout, "refill-create-ceiling") {
		t.Errorf("table not printed")
	}
}
