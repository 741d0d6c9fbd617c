package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"sort"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/brakebench/brakebench/internal/sut/agentsandbox"
)

// AgentSpec is one burst for the in-cluster runner (`brakebench agent`): what the harness would
// fire itself, plus the absolute time to fire at (the harness and the agent share T0; their clocks
// are the machine's on the lab and NTP-synced nodes elsewhere).
type AgentSpec struct {
	Namespace    string            `json:"namespace"`
	Pool         string            `json:"pool"`
	Prefix       string            `json:"prefix"`
	Labels       map[string]string `json:"labels"`
	T0           time.Time         `json:"t0"`
	Schedule     Schedule          `json:"schedule"`
	Connections  int               `json:"connections"`
	QPS          float64           `json:"qps"`
	Burst        int               `json:"burst"`
	MaxInFlight  int               `json:"maxInFlight"`
	ClaimTimeout time.Duration     `json:"claimTimeout"`
	// Shards is how many pods of an Indexed Job share the schedule (0 or 1: one pod, which fires
	// all of it under today's names). Each pod finds its own index in JOB_COMPLETION_INDEX.
	Shards int `json:"shards,omitempty"`
}

// CompletionIndexEnv is where an Indexed Job's pod finds its completion index (its shard).
const CompletionIndexEnv = "JOB_COMPLETION_INDEX"

// ShardLabel marks a sharded runner's claims with the shard that fired them: each shard watches
// only its own claims (a label selector), so N shards do not each hold and decode all N shares.
const ShardLabel = "brakebench.dev/runner-shard"

// SplitSchedule deals the schedule's claims out to n shards in time order: the claim with the
// r-th earliest offset (ties by index) goes to shard r mod n. Each shard gets the indices of its
// claims, in time order. Interleaving, not contiguous slices, so every shard's arrivals span the
// whole schedule at 1/n of its rate and keep its shape (a Poisson schedule stays a thinned
// Poisson process, a step profile keeps its steps): with slices shard 0 would fire the whole
// first part alone and the shards would never load the API server together. The schedules
// brakebench builds are in time order, where this is simply claim i to shard i mod n.
func SplitSchedule(s Schedule, n int) [][]int {
	if n < 1 {
		n = 1
	}
	order := make([]int, len(s))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return s[order[a]] < s[order[b]] })
	out := make([][]int, n)
	for r, i := range order {
		out[r%n] = append(out[r%n], i)
	}
	return out
}

// ShardPlan is what one shard fires: its claims' indices in the whole schedule, their offsets
// (its own schedule, fired from the shared T0), and how its claims are named and labelled.
type ShardPlan struct {
	Index, Shards int
	Claims        []int    // indices in the spec's schedule, in time order
	Schedule      Schedule // Schedule[j] is the spec's Schedule[Claims[j]]
	// Prefix names the shard's j-th claim Prefix+%05d(j): the spec's prefix with one shard, plus
	// "s<index>-" with several, so names are unique across shards.
	Prefix   string
	Labels   map[string]string
	Selector string // the shard's claims ("" with one shard: the whole namespace, as before)
}

// Plan is shard index's share of the spec.
func (spec AgentSpec) Plan(index int) (ShardPlan, error) {
	n := max(spec.Shards, 1)
	if index < 0 || index >= n {
		return ShardPlan{}, fmt.Errorf("shard %d of %d: expected 0 to %d", index, n, n-1)
	}
	p := ShardPlan{Index: index, Shards: n, Claims: SplitSchedule(spec.Schedule, n)[index], Prefix: spec.Prefix, Labels: spec.Labels}
	p.Schedule = make(Schedule, len(p.Claims))
	for j, i := range p.Claims {
		p.Schedule[j] = spec.Schedule[i]
	}
	if n > 1 {
		p.Prefix = fmt.Sprintf("%ss%d-", spec.Prefix, index)
		p.Labels = map[string]string{ShardLabel: strconv.Itoa(index)}
		for k, v := range spec.Labels {
			p.Labels[k] = v
		}
		p.Selector = ShardLabel + "=" + strconv.Itoa(index)
	}
	return p, nil
}

// ShardIndex is this pod's shard from its completion index (the value of CompletionIndexEnv):
// 0 for an unsharded runner whatever it says, else it must be 0 to shards-1.
func ShardIndex(env string, shards int) (int, error) {
	if shards <= 1 {
		return 0, nil
	}
	i, err := strconv.Atoi(env)
	if err != nil || i < 0 || i >= shards {
		return 0, fmt.Errorf("%s=%q: expected 0 to %d (the runner's Job is Indexed with %d completions)", CompletionIndexEnv, env, shards-1, shards)
	}
	return i, nil
}

// ShardHeader is a shard's report on itself, printed before it fires: which shard, how many
// claims it fires, its own clock when it started, and its clock against the API server's.
type ShardHeader struct {
	Index   int           `json:"index"`
	Shards  int           `json:"shards"`
	Claims  int           `json:"claims"`
	Started time.Time     `json:"started"`
	Clock   ClockEstimate `json:"clock"`
}

// shardLinePrefix starts the header line of an agent's output (records are bare JSON lines).
const shardLinePrefix = "shard "

// Record is one claim as the in-cluster runner saw it: the generator's times and the first
// Ready=True its own watch saw (zero when none within the claim timeout).
type Record struct {
	Name    string    `json:"name"`
	Index   int       `json:"index"`
	Planned time.Time `json:"planned"`
	Intent  time.Time `json:"intent"`
	Acked   time.Time `json:"acked"`
	Ready   time.Time `json:"ready"`
	Err     string    `json:"err,omitempty"`
}

// RunAgent fires spec's burst at spec.T0 from inside the cluster, watches the claims until each is
// Ready or past its timeout, and writes one JSON Record per line to out, then a line "done". A
// start after T0 is an error (the schedule would be shifted): nothing is sent. With spec.Shards
// above 1 it fires only its shard's share (CompletionIndexEnv) and watches only those claims.
// Before T0 it estimates its clock against the API server's (EstimateClock) and prints a
// ShardHeader line; the records carry the claims' indices in the whole schedule.
func RunAgent(ctx context.Context, cfg *rest.Config, spec AgentSpec, out io.Writer) error {
	started := time.Now()
	if late := time.Since(spec.T0); late > 0 {
		return fmt.Errorf("started %s after T0 %s: give the runner more time to start", late.Round(time.Millisecond), spec.T0.Format(time.RFC3339Nano))
	}
	index, err := ShardIndex(os.Getenv(CompletionIndexEnv), spec.Shards)
	if err != nil {
		return err
	}
	plan, err := spec.Plan(index)
	if err != nil {
		return err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ready := newReadyWatch()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	synced := make(chan error, 1)
	go func() { synced <- ready.run(wctx, dc, spec.Namespace, plan.Selector) }()
	gen, err := NewGenerator(cfg, spec.Connections, spec.QPS, spec.Burst)
	if err != nil {
		return err
	}
	gen.Namespace, gen.Pool, gen.Prefix, gen.Labels, gen.MaxInFlight = spec.Namespace, spec.Pool, plan.Prefix, plan.Labels, spec.MaxInFlight
	if err := gen.Warm(ctx); err != nil {
		return err
	}
	header := ShardHeader{Index: plan.Index, Shards: plan.Shards, Claims: len(plan.Claims), Started: started}
	if probe, err := DateProbe(cfg, spec.Namespace); err != nil {
		header.Clock.Err = err.Error()
	} else {
		header.Clock = EstimateClock(ctx, probe, spec.T0.Add(-clockMargin))
	}
	if err := writeHeader(out, header); err != nil {
		return err
	}
	if d := time.Until(spec.T0); d > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
	}
	sent := gen.Fire(ctx, spec.T0, plan.Schedule)
	deadline := time.Now().Add(spec.ClaimTimeout)
	for _, s := range sent {
		if s.Err == "" {
			if d := s.Intent.Add(spec.ClaimTimeout); d.After(deadline) {
				deadline = d
			}
		}
	}
	ready.waitAll(ctx, sent, deadline)
	stop()
	if err := <-synced; err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("watch claims: %w", err)
	}
	enc := json.NewEncoder(out)
	for j, s := range sent {
		r := Record{Name: s.Name, Index: plan.Claims[j], Planned: s.Planned, Intent: s.Intent, Acked: s.Acked, Err: s.Err, Ready: ready.at(s.Name)}
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintln(out, "done")
	return err
}

func writeHeader(out io.Writer, h ShardHeader) error {
	raw, err := json.Marshal(h)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s%s\n", shardLinePrefix, raw)
	return err
}

// WriteShardOutput writes what RunAgent prints (a header line, one record per line, "done"):
// for tests and replays that stand in for a runner pod's log.
func WriteShardOutput(out io.Writer, h ShardHeader, recs []Record) error {
	if err := writeHeader(out, h); err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(out, "done")
	return err
}

// ReadRecords reads an agent's output (its pod log): the records, and an error when the final
// "done" line is missing (the agent died or its log was cut).
func ReadRecords(r io.Reader) ([]Record, error) {
	o, err := ReadShard(r)
	return o.Records, err
}

// ShardOutput is one runner pod's log as read back: its header (nil when it printed none) and
// its records.
type ShardOutput struct {
	Header  *ShardHeader
	Records []Record
}

// ReadShard reads an agent's output: its header line, its records, and an error when a record or
// the header is not what the agent writes, or the final "done" line is missing (the agent died
// or its log was cut). Other lines are the agent's own messages and are skipped.
func ReadShard(r io.Reader) (ShardOutput, error) {
	var out ShardOutput
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		t := sc.Bytes()
		switch {
		case string(t) == "done":
			return out, nil
		case bytes.HasPrefix(t, []byte(shardLinePrefix+"{")):
			var h ShardHeader
			if err := json.Unmarshal(t[len(shardLinePrefix):], &h); err != nil {
				return out, fmt.Errorf("runner output line %d (its header): %w", line, err)
			}
			if out.Header != nil {
				return out, fmt.Errorf("runner output line %d: a second header", line)
			}
			out.Header = &h
		case len(t) == 0 || t[0] != '{':
			continue // the agent's own messages
		default:
			var rec Record
			if err := json.Unmarshal(t, &rec); err != nil {
				return out, fmt.Errorf("runner output line %d: %w", line, err)
			}
			out.Records = append(out.Records, rec)
		}
	}
	if err := sc.Err(); err != nil {
		return out, err
	}
	return out, fmt.Errorf("runner output ends after %d records without its final \"done\" line", len(out.Records))
}

// Sent turns records back into the generator's view of the burst.
func (r Record) Sent() Sent {
	return Sent{Index: r.Index, Name: r.Name, Planned: r.Planned, Intent: r.Intent, Acked: r.Acked, Err: r.Err}
}

// readyWatch notes, on the agent's clock, when each claim is first seen Ready=True.
type readyWatch struct {
	mu      sync.Mutex
	first   map[string]time.Time
	changed chan struct{}
}

func newReadyWatch() *readyWatch {
	return &readyWatch{first: map[string]time.Time{}, changed: make(chan struct{}, 1)}
}

func (w *readyWatch) at(name string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first[name]
}

// run lists the namespace's claims (those selector matches) once and then watches them, noting
// each event, until ctx ends (listing again only when a watch closes): the runner may list and
// watch claims, nothing else, and must not add a list per event to the server it measures.
func (w *readyWatch) run(ctx context.Context, dc dynamic.Interface, ns, selector string) error {
	claims := dc.Resource(agentsandbox.ClaimGVR).Namespace(ns)
	for ctx.Err() == nil {
		l, err := claims.List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		for i := range l.Items {
			w.note(&l.Items[i])
		}
		wi, err := claims.Watch(ctx, metav1.ListOptions{ResourceVersion: l.GetResourceVersion(), LabelSelector: selector})
		if err != nil {
			return err
		}
		for ev := range wi.ResultChan() {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok {
				w.note(u)
			}
		}
		wi.Stop()
	}
	return ctx.Err()
}

func (w *readyWatch) note(u *unstructured.Unstructured) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" && m["status"] == "True" {
			w.mu.Lock()
			if _, ok := w.first[u.GetName()]; !ok {
				w.first[u.GetName()] = time.Now()
				select {
				case w.changed <- struct{}{}:
				default:
				}
			}
			w.mu.Unlock()
			return
		}
	}
}

// waitAll waits until every sent claim is Ready, or deadline.
func (w *readyWatch) waitAll(ctx context.Context, sent []Sent, deadline time.Time) {
	for {
		all := true
		w.mu.Lock()
		for _, s := range sent {
			if _, ok := w.first[s.Name]; s.Err == "" && !ok {
				all = false
				break
			}
		}
		w.mu.Unlock()
		if all {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(deadline)):
			return
		case <-w.changed:
		}
	}
}

// ClockEstimate bounds the API server's clock minus this process's: the true offset lies in
// [Lo, Hi] (a hard bound, not a confidence interval) if the server stamps its Date header from
// one clock that does not step while probed. Several API servers behind one address (an HA
// control plane) whose clocks differ by up to S: the bound overlaps their offsets, so it is off
// from any one server's by at most S (NTP keeps S to milliseconds), or their Date headers
// contradict each other and Err says so. It is how runner shards and the harness compare
// clocks they cannot read from each other: each estimates its own offset against the one API
// server, and the difference of two estimates bounds the difference of their clocks.
type ClockEstimate struct {
	Lo     time.Duration `json:"lo"`
	Hi     time.Duration `json:"hi"`
	Probes int           `json:"probes"`
	MinRTT time.Duration `json:"minRtt"` // the fastest probe's round trip
	Err    string        `json:"err,omitempty"`
}

// OK says the estimate bounds the offset (at least one probe answered, consistently).
func (e ClockEstimate) OK() bool { return e.Err == "" && e.Probes > 0 && e.Lo <= e.Hi }

// Offset is the midpoint of the bound (server minus this clock) and HalfWidth half its width:
// the offset lies within Offset ± HalfWidth.
func (e ClockEstimate) Offset() time.Duration { return e.Lo + (e.Hi-e.Lo)/2 }

// HalfWidth is half the bound's width, rounded up.
func (e ClockEstimate) HalfWidth() time.Duration { return (e.Hi - e.Lo + 1) / 2 }

// ClockProbe makes one request to the API server: when it was sent and its answer received, on
// this clock, and the answer's Date header (the server's clock, truncated to the second).
type ClockProbe func(ctx context.Context) (sent, recv, date time.Time, err error)

// clockMargin is how long before T0 a runner stops estimating its clock: the probes must not
// run into the burst they are taken for.
const clockMargin = 200 * time.Millisecond

const (
	clockSweeps    = 5   // second boundaries swept at most
	clockMaxProbes = 100 // requests at most, over all sweeps
	clockSteps     = 32  // probes across a sweep's window (fewer when the boundary shows early)
)

// EstimateClock estimates the API server's clock against this one from probes' Date headers,
// stopping by deadline. The method: a Date header says the server's clock read D.xxx at some
// moment between a probe's send s and receipt r, so the offset lies in [D - r, D + 1s - s]; the
// bounds of all probes intersect. One probe bounds it to 1 s plus its round trip. Each further
// sweep waits for the moment the server's clock may next pass a whole second (somewhere in a
// window as wide as the current bound) and probes across that window at 1/32 of its width (back
// to back when that is shorter than a round trip) until a Date header shows the new second: the
// last probe before the boundary and the first after it narrow the bound to about the spacing
// plus their round trips. Two or three sweeps bring it to about two round trips: simulated with
// lab round trips (0.2-2 ms) the width is 2 ms on average, 3 ms at most, after about 35 light
// requests (a list of at most one claim from the watch cache, which the runner's Role allows)
// and at most 4 s; with 20-60 ms round trips (a harness far from a cloud cluster) it is 60-100
// ms. It stops when the width is within two round trips + 2 ms, when a sweep did not halve it,
// after clockSweeps sweeps or clockMaxProbes probes, or when the next sweep would end past
// deadline (it is then as wide as it got). A probe's error ends it with Err set.
func EstimateClock(ctx context.Context, probe ClockProbe, deadline time.Time) ClockEstimate {
	return estimateClock(ctx, probe, deadline, time.Now, func(ctx context.Context, t time.Time) error {
		d := time.Until(t)
		if d <= 0 {
			return ctx.Err()
		}
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return nil
		}
	})
}

func estimateClock(ctx context.Context, probe ClockProbe, deadline time.Time, now func() time.Time, sleepUntil func(context.Context, time.Time) error) ClockEstimate {
	var e ClockEstimate
	take := func() (time.Time, bool) {
		sent, recv, date, err := probe(ctx)
		if err != nil {
			e.Err = "clock probe: " + err.Error()
			return time.Time{}, false
		}
		rtt := recv.Sub(sent)
		lo, hi := date.Sub(recv), date.Add(time.Second).Sub(sent)
		if e.Probes == 0 {
			e.Lo, e.Hi, e.MinRTT = lo, hi, rtt
		} else {
			e.Lo, e.Hi, e.MinRTT = max(e.Lo, lo), min(e.Hi, hi), min(e.MinRTT, rtt)
		}
		e.Probes++
		if e.Lo > e.Hi {
			e.Err = "the API server's Date headers contradict each other (its clock stepped, or several servers with different clocks answer at one address)"
			return date, false
		}
		return date, true
	}
	if !now().Before(deadline) {
		e.Err = "no time left before T0 to estimate the clock"
		return e
	}
	if _, ok := take(); !ok {
		return e
	}
	prev := time.Duration(0)
	for sweep := 0; sweep < clockSweeps && e.Probes < clockMaxProbes; sweep++ {
		width := e.Hi - e.Lo
		if width <= 2*e.MinRTT+2*time.Millisecond || (sweep > 0 && 2*width > prev) {
			break // narrow enough, or the last sweep did not halve it: round trips limit it now
		}
		prev = width
		// The server's clock passes its next whole second n, on this clock, within [n-Hi, n-Lo].
		n := now().Add(e.Hi + e.MinRTT).Truncate(time.Second).Add(time.Second)
		start, end := n.Add(-e.Hi), n.Add(-e.Lo)
		if end.Add(e.MinRTT).After(deadline) {
			break
		}
		at := start
		for e.Probes < clockMaxProbes {
			// Aim the probe's middle, where the server most likely stamps it, at at.
			if err := sleepUntil(ctx, at.Add(-e.MinRTT/2)); err != nil {
				e.Err = "clock probe: " + err.Error()
				return e
			}
			date, ok := take()
			if !ok {
				return e
			}
			if !date.Before(n) {
				break // past the boundary: later probes would narrow nothing
			}
			at = at.Add(width / clockSteps)
			if t := now(); at.Before(t) {
				at = t
			}
		}
	}
	return e
}

// DateProbe is a ClockProbe against cfg's API server: a GET of at most one SandboxClaim in ns
// from the watch cache (resourceVersion=0), a request the runner's Role allows and the cheapest
// one for the server. Any answer with a Date header counts, whatever its status: only the
// header is read.
func DateProbe(cfg *rest.Config, ns string) (ClockProbe, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("clock probe client: %w", err)
	}
	u, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("clock probe URL: %w", err)
	}
	g := agentsandbox.ClaimGVR
	u.Path = path.Join(u.Path, "/apis", g.Group, g.Version, "namespaces", ns, g.Resource)
	u.RawQuery = "limit=1&resourceVersion=0"
	target := u.String()
	return func(ctx context.Context) (sent, recv, date time.Time, err error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return sent, recv, date, err
		}
		req.Header.Set("Accept", "application/json")
		sent = time.Now()
		resp, err := hc.Do(req)
		recv = time.Now()
		if err != nil {
			return sent, recv, date, err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		_ = resp.Body.Close()
		date, err = http.ParseTime(resp.Header.Get("Date"))
		if err != nil {
			return sent, recv, date, fmt.Errorf("the answer's Date header %q: %w", resp.Header.Get("Date"), err)
		}
		return sent, recv, date, nil
	}, nil
}
