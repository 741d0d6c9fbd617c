package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
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

// Every claim goes to exactly one shard, shards differ by at most one claim, each shard's share
// is in time order, and a schedule in time order is dealt claim i to shard i mod n.
func TestSplitSchedule(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	unsorted := Schedule{5 * time.Second, 0, 3 * time.Second, 0, time.Second, 4 * time.Second, 2 * time.Second}
	cases := []struct {
		name   string
		s      Schedule
		n      int
		sorted bool
	}{
		{"burst, one shard", Burst(10), 1, true},
		{"burst, three shards", Burst(10), 3, true},
		{"poisson, seven shards", Poisson(200, time.Second, rng), 7, true},
		{"steps, two shards", Steps([]float64{10, 30}, time.Second), 2, true},
		{"out of time order, three shards", unsorted, 3, false},
		{"fewer claims than shards", Burst(2), 3, true},
		{"no claims", Schedule{}, 4, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parts := SplitSchedule(c.s, c.n)
			if len(parts) != c.n {
				t.Fatalf("%d parts, want %d", len(parts), c.n)
			}
			seen := make([]int, len(c.s))
			for k, p := range parts {
				if want := len(c.s)/c.n + b2i(k < len(c.s)%c.n); len(p) != want {
					t.Errorf("shard %d: %d claims, want %d", k, len(p), want)
				}
				for j, i := range p {
					seen[i]++
					if j > 0 && c.s[i] < c.s[p[j-1]] {
						t.Errorf("shard %d: claim %d (%s) after claim %d (%s): not in time order", k, i, c.s[i], p[j-1], c.s[p[j-1]])
					}
					if c.sorted && i%c.n != k {
						t.Errorf("shard %d has claim %d", k, i)
					}
				}
			}
			for i, n := range seen {
				if n != 1 {
					t.Errorf("claim %d dealt %d times", i, n)
				}
			}
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A shard fires its share from the spec's T0 (the same absolute planned times as one runner
// would), under names unique across shards, labelled and watched by shard; one shard keeps
// today's names, labels and namespace-wide watch.
func TestShardPlan(t *testing.T) {
	t0 := time.Unix(1000, 0).UTC()
	sched := Steps([]float64{20}, time.Second)
	for _, n := range []int{0, 1, 3, 64} {
		spec := AgentSpec{Namespace: "ns", Prefix: "claim-", Labels: map[string]string{"cell": "x"}, T0: t0, Schedule: sched, Shards: n}
		names := map[string]bool{}
		planned := map[int]time.Time{}
		for k := 0; k < max(n, 1); k++ {
			p, err := spec.Plan(k)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Schedule) != len(p.Claims) || p.Index != k || p.Shards != max(n, 1) {
				t.Fatalf("n=%d shard %d: plan %+v", n, k, p)
			}
			g := &Generator{Prefix: p.Prefix}
			for j, i := range p.Claims {
				names[g.ClaimName(j)] = true
				planned[i] = t0.Add(p.Schedule[j])
			}
			if n <= 1 {
				if p.Prefix != "claim-" || p.Selector != "" || !reflect.DeepEqual(p.Labels, spec.Labels) {
					t.Errorf("one shard: prefix %q selector %q labels %v: not today's", p.Prefix, p.Selector, p.Labels)
				}
				continue
			}
			if p.Prefix != fmt.Sprintf("claim-s%d-", k) || p.Selector != ShardLabel+"="+strconv.Itoa(k) || p.Labels["cell"] != "x" || p.Labels[ShardLabel] != strconv.Itoa(k) {
				t.Errorf("n=%d shard %d: prefix %q selector %q labels %v", n, k, p.Prefix, p.Selector, p.Labels)
			}
		}
		if len(names) != len(sched) || len(planned) != len(sched) {
			t.Errorf("n=%d: %d names and %d claims for %d planned", n, len(names), len(planned), len(sched))
		}
		for i, at := range planned {
			if !at.Equal(t0.Add(sched[i])) {
				t.Errorf("n=%d: claim %d planned at %s, want %s", n, i, at, t0.Add(sched[i]))
			}
		}
		if _, err := spec.Plan(max(n, 1)); err == nil {
			t.Errorf("n=%d: a shard past the last planned", n)
		}
	}
	// The spec's labels are not changed under a shard's feet.
	spec := AgentSpec{Labels: map[string]string{"cell": "x"}, Schedule: Burst(2), Shards: 2}
	if _, err := spec.Plan(1); err != nil || len(spec.Labels) != 1 {
		t.Errorf("spec labels %v after planning (%v)", spec.Labels, err)
	}
}

func TestShardIndex(t *testing.T) {
	cases := []struct {
		env    string
		shards int
		want   int
		err    bool
	}{
		{"", 1, 0, false},
		{"0", 0, 0, false},
		{"5", 1, 0, false}, // one shard fires everything whatever the Job says
		{"2", 3, 2, false},
		{"0", 3, 0, false},
		{"3", 3, 0, true},
		{"-1", 3, 0, true},
		{"", 3, 0, true},
		{"one", 3, 0, true},
	}
	for _, c := range cases {
		got, err := ShardIndex(c.env, c.shards)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ShardIndex(%q, %d) = %d, %v", c.env, c.shards, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), CompletionIndexEnv) {
			t.Errorf("error %q does not name %s", err, CompletionIndexEnv)
		}
	}
}

// fakeServer is an API server whose clock is this (virtual) clock plus offset, answering after
// a round trip drawn from [minRTT, maxRTT] and stamping its Date somewhere inside it.
type fakeServer struct {
	now            time.Time
	offset         func(probe int) time.Duration
	minRTT, maxRTT time.Duration
	rng            *rand.Rand
	probes         int
	failAt         int // the probe that fails (0: none)
}

func (f *fakeServer) probe(context.Context) (sent, recv, date time.Time, err error) {
	f.probes++
	if f.probes == f.failAt {
		return f.now, f.now, time.Time{}, errors.New("connection refused")
	}
	rtt := f.minRTT + time.Duration(f.rng.Int64N(int64(f.maxRTT-f.minRTT)+1))
	stamp := f.now.Add(time.Duration(f.rng.Int64N(int64(rtt) + 1)))
	sent, f.now = f.now, f.now.Add(rtt)
	return sent, f.now, stamp.Add(f.offset(f.probes)).Truncate(time.Second), nil
}

func (f *fakeServer) estimate(deadline time.Duration) ClockEstimate {
	start := f.now
	return estimateClock(context.Background(), f.probe, start.Add(deadline), func() time.Time { return f.now },
		func(_ context.Context, t time.Time) error {
			if t.After(f.now) {
				f.now = t
			}
			return nil
		})
}

// The estimate always contains the true offset, narrows to about two round trips (+1 ms) within
// its sweeps, and uses few probes; a probe's error, contradicting servers and no time are
// reported, never a bound that is wrong.
func TestEstimateClock(t *testing.T) {
	fixed := func(d time.Duration) func(int) time.Duration { return func(int) time.Duration { return d } }
	cases := []struct {
		name           string
		offset         func(int) time.Duration
		minRTT, maxRTT time.Duration
		deadline       time.Duration
		failAt         int
		maxWidth       time.Duration // 0: only containment
		wantErr        string
	}{
		{"same clock, lab round trips", fixed(0), 200 * time.Microsecond, 2 * time.Millisecond, 10 * time.Second, 0, 6 * time.Millisecond, ""},
		{"server 37.4 ms ahead", fixed(37400 * time.Microsecond), 200 * time.Microsecond, 2 * time.Millisecond, 10 * time.Second, 0, 6 * time.Millisecond, ""},
		{"server 2.5 s behind", fixed(-2500*time.Millisecond + 123*time.Microsecond), 500 * time.Microsecond, time.Millisecond, 10 * time.Second, 0, 4 * time.Millisecond, ""},
		{"server just under a second ahead", fixed(999900 * time.Microsecond), 100 * time.Microsecond, 300 * time.Microsecond, 10 * time.Second, 0, 2 * time.Millisecond, ""},
		{"a cloud round trip", fixed(-11 * time.Millisecond), 20 * time.Millisecond, 60 * time.Millisecond, 10 * time.Second, 0, 125 * time.Millisecond, ""},
		{"no time for a sweep", fixed(3 * time.Millisecond), time.Millisecond, 2 * time.Millisecond, 300 * time.Millisecond, 0, 0, ""},
		{"deadline passed", fixed(0), time.Millisecond, 2 * time.Millisecond, 0, 0, 0, "no time left"},
		{"first probe fails", fixed(0), time.Millisecond, 2 * time.Millisecond, 10 * time.Second, 1, 0, "connection refused"},
		{"a later probe fails", fixed(0), time.Millisecond, 2 * time.Millisecond, 10 * time.Second, 4, 0, "connection refused"},
	}
	for _, c := range cases {
		for seed := uint64(1); seed <= 20; seed++ {
			f := &fakeServer{now: time.Unix(1700000000, int64(seed)*37_000_000), offset: c.offset, minRTT: c.minRTT, maxRTT: c.maxRTT, rng: rand.New(rand.NewPCG(seed, 9)), failAt: c.failAt}
			e := f.estimate(c.deadline)
			if c.wantErr != "" {
				if !strings.Contains(e.Err, c.wantErr) || e.OK() {
					t.Errorf("%s seed %d: %+v, want error %q", c.name, seed, e, c.wantErr)
				}
				continue
			}
			truth := c.offset(0)
			if !e.OK() || truth < e.Lo || truth > e.Hi {
				t.Fatalf("%s seed %d: %+v does not contain the true offset %s", c.name, seed, e, truth)
			}
			if d := e.Offset() - truth; d < -e.HalfWidth() || d > e.HalfWidth() {
				t.Errorf("%s seed %d: %s ± %s misses %s", c.name, seed, e.Offset(), e.HalfWidth(), truth)
			}
			if c.maxWidth > 0 && e.Hi-e.Lo > c.maxWidth {
				t.Errorf("%s seed %d: width %s after %d probes, want <= %s", c.name, seed, e.Hi-e.Lo, e.Probes, c.maxWidth)
			}
			if e.Probes > clockMaxProbes {
				t.Errorf("%s seed %d: %d probes", c.name, seed, e.Probes)
			}
			if elapsed := f.now.Sub(time.Unix(1700000000, int64(seed)*37_000_000)); elapsed > c.deadline {
				t.Errorf("%s seed %d: ran %s, past its deadline %s", c.name, seed, elapsed, c.deadline)
			}
		}
	}
}

// Several API servers behind one address whose clocks differ by S: the probes may contradict each
// other (reported), or not, and then the bound still overlaps the servers' offsets, so it is off
// from any one of them by at most S.
func TestEstimateClockTwoServers(t *testing.T) {
	for _, gap := range []time.Duration{time.Millisecond, 30 * time.Millisecond, 300 * time.Millisecond} {
		contradicted := 0
		for seed := uint64(1); seed <= 30; seed++ {
			f := &fakeServer{now: time.Unix(1700000000, int64(seed)*41_000_000), rng: rand.New(rand.NewPCG(seed, 3)),
				offset: func(p int) time.Duration { return time.Duration(p%2) * gap }, minRTT: 200 * time.Microsecond, maxRTT: 2 * time.Millisecond}
			e := f.estimate(10 * time.Second)
			switch {
			case strings.Contains(e.Err, "contradict"):
				contradicted++
			case !e.OK() || e.Lo > gap || e.Hi < 0:
				t.Errorf("servers %s apart, seed %d: %+v does not overlap [0, %s]", gap, seed, e, gap)
			}
		}
		t.Logf("servers %s apart: %d of 30 estimates saw the contradiction", gap, contradicted)
	}
}

// DateProbe reads the Date header of a real HTTP answer, whatever its status, and bounds the
// offset of a server on this machine's clock to within a second.
func TestDateProbe(t *testing.T) {
	var path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.RequestURI()
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	probe, err := DateProbe(&rest.Config{Host: srv.URL}, "ns1")
	if err != nil {
		t.Fatal(err)
	}
	e := EstimateClock(context.Background(), probe, time.Now().Add(3*time.Second))
	if !e.OK() || e.Lo > 0 || e.Hi < 0 || e.Hi-e.Lo > time.Second+100*time.Millisecond {
		t.Fatalf("estimate %+v", e)
	}
	if path != "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/ns1/sandboxclaims?limit=1&resourceVersion=0" {
		t.Errorf("probed %s", path)
	}
	noDate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Date"] = nil // net/http then sends none
	}))
	defer noDate.Close()
	probe, _ = DateProbe(&rest.Config{Host: noDate.URL}, "ns1")
	if e := EstimateClock(context.Background(), probe, time.Now().Add(time.Second)); e.OK() || !strings.Contains(e.Err, "Date header") {
		t.Errorf("no Date header: %+v", e)
	}
}

// A shard's output reads back with its header; a broken or second header is an error.
func TestReadShard(t *testing.T) {
	t0 := time.Unix(1000, 0).UTC()
	h := ShardHeader{Index: 2, Shards: 3, Claims: 1, Started: t0.Add(-time.Second), Clock: ClockEstimate{Lo: -time.Millisecond, Hi: 2 * time.Millisecond, Probes: 9, MinRTT: time.Millisecond}}
	recs := []Record{{Name: "claim-s2-00000", Index: 2, Planned: t0, Intent: t0, Acked: t0.Add(time.Millisecond)}}
	var buf bytes.Buffer
	buf.WriteString("I0101 client-go says hello\n")
	if err := WriteShardOutput(&buf, h, recs); err != nil {
		t.Fatal(err)
	}
	out, err := ReadShard(bytes.NewReader(buf.Bytes()))
	if err != nil || out.Header == nil || !reflect.DeepEqual(*out.Header, h) || len(out.Records) != 1 || out.Records[0].Index != 2 {
		t.Fatalf("read back %+v, %v", out, err)
	}
	if got, err := ReadRecords(bytes.NewReader(buf.Bytes())); err != nil || len(got) != 1 {
		t.Errorf("ReadRecords: %d, %v", len(got), err)
	}
	for name, log := range map[string]string{
		"broken header": "shard {\"index\":\n" + "done\n",
		"two headers":   "shard {}\nshard {}\ndone\n",
	} {
		if _, err := ReadShard(strings.NewReader(log)); err == nil || !strings.Contains(err.Error(), "header") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
