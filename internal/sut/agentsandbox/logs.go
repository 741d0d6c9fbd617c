package agentsandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// createPassMsg is what the warm-pool controller logs (at info) each time one reconcile pass
// issues pool creates, with "count" the sandboxes that pass asked for (v0.4 and later).
const createPassMsg = "Creating new pool sandboxes"

var passMsg = []byte(`"` + createPassMsg + `"`)

// CreatePasses reads a controller log (controller-runtime's zap JSON lines) and returns the
// count of each create pass for the pool in namespace ns logged at or after since, in log order.
// Lines that are not JSON (a panic trace, klog output) are skipped.
func CreatePasses(r io.Reader, ns string, since time.Time) ([]int, error) {
	var out []int
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		// Most lines are other messages: skip them before decoding (a run's log grows to many MB).
		if len(line) == 0 || line[0] != '{' || !bytes.Contains(line, passMsg) {
			continue
		}
		var e struct {
			Msg       string          `json:"msg"`
			TS        json.RawMessage `json:"ts"`
			Namespace string          `json:"namespace"`
			Count     *int            `json:"count"`
		}
		if json.Unmarshal(line, &e) != nil || e.Msg != createPassMsg || e.Namespace != ns || e.Count == nil {
			continue
		}
		if t, whole, ok := logTime(e.TS); ok && (t.Before(since) && !whole || whole && t.Before(since.Truncate(time.Second))) {
			continue
		}
		out = append(out, *e.Count)
	}
	return out, sc.Err()
}

// logTime reads zap's "ts": an RFC 3339 string (controller-runtime's default, whole seconds
// unless --zap-time-encoding says otherwise: whole is then true, and a pass logged in T0's
// second reads as before T0) or epoch seconds.
func logTime(raw json.RawMessage) (t time.Time, whole, ok bool) {
	if len(raw) == 0 {
		return time.Time{}, false, false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return time.Time{}, false, false
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		return t, !strings.Contains(s, "."), err == nil
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return time.Time{}, false, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), false, true
}
