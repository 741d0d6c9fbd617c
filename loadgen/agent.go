package loadgen

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
}

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
// start after T0 is an error (the schedule would be shifted): nothing is sent.
func RunAgent(ctx context.Context, cfg *rest.Config, spec AgentSpec, out io.Writer) error {
	if late := time.Since(spec.T0); late > 0 {
		return fmt.Errorf("started %s after T0 %s: give the runner more time to start", late.Round(time.Millisecond), spec.T0.Format(time.RFC3339Nano))
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ready := newReadyWatch()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	synced := make(chan error, 1)
	go func() { synced <- ready.run(wctx, dc, spec.Namespace) }()
	gen, err := NewGenerator(cfg, spec.Connections, spec.QPS, spec.Burst)
	if err != nil {
		return err
	}
	gen.Namespace, gen.Pool, gen.Prefix, gen.Labels, gen.MaxInFlight = spec.Namespace, spec.Pool, spec.Prefix, spec.Labels, spec.MaxInFlight
	if err := gen.Warm(ctx); err != nil {
		return err
	}
	if d := time.Until(spec.T0); d > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
	}
	sent := gen.Fire(ctx, spec.T0, spec.Schedule)
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
	for _, s := range sent {
		r := Record{Name: s.Name, Index: s.Index, Planned: s.Planned, Intent: s.Intent, Acked: s.Acked, Err: s.Err, Ready: ready.at(s.Name)}
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintln(out, "done")
	return err
}

// ReadRecords reads an agent's output (its pod log): the records, and an error when the final
// "done" line is missing (the agent died or its log was cut).
func ReadRecords(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		t := sc.Bytes()
		if string(t) == "done" {
			return out, nil
		}
		if len(t) == 0 || t[0] != '{' {
			continue // the agent's own messages
		}
		var rec Record
		if err := json.Unmarshal(t, &rec); err != nil {
			return out, fmt.Errorf("runner output line %d: %w", line, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return out, err
	}
	return out, fmt.Errorf("runner output ends after %d records without its final \"done\" line", len(out))
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

// run lists the namespace's claims once and then watches them, noting each event, until ctx ends
// (listing again only when a watch closes): the runner may list and watch claims, nothing else,
// and must not add a list per event to the server it measures.
func (w *readyWatch) run(ctx context.Context, dc dynamic.Interface, ns string) error {
	claims := dc.Resource(agentsandbox.ClaimGVR).Namespace(ns)
	for ctx.Err() == nil {
		l, err := claims.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for i := range l.Items {
			w.note(&l.Items[i])
		}
		wi, err := claims.Watch(ctx, metav1.ListOptions{ResourceVersion: l.GetResourceVersion()})
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
