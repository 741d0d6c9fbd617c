package undo

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

const testServer = "https://127.0.0.1:6443"

var testCluster = ClusterID{Server: testServer, UID: "uid-1"}

// writeJournal records entries in a new journal of run in dir (after OpenJournal's cluster entry)
// and closes it.
func writeJournal(t *testing.T, dir, run string, entries ...Entry) string {
	t.Helper()
	j, err := OpenJournal(dir, run, testCluster)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := j.Record(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return j.Path
}

// readRun reads back the one journal of run in dir.
func readRun(t *testing.T, dir, run string) RunJournal {
	t.Helper()
	js, err := ReadJournals(dir, run)
	if err != nil {
		t.Fatal(err)
	}
	if len(js) != 1 {
		t.Fatalf("%d journals for run %s, want 1", len(js), run)
	}
	return js[0]
}

// brief is what identifies an entry in these tests: "op ref original".
func brief(es []Entry) []string {
	out := []string{}
	for _, e := range es {
		s := strings.TrimSpace(e.Op + " " + e.Ref)
		if len(e.Original) > 0 {
			s += " " + string(e.Original)
		}
		out = append(out, s)
	}
	return out
}

func appendRaw(t *testing.T, path, raw string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(raw); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestJournalRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journals") // created by OpenJournal
	from := time.Now().UTC().Add(-time.Second)
	in := []Entry{
		{Op: OpCreated, APIVersion: "flowcontrol.apiserver.k8s.io/v1", Kind: "FlowSchema", Resource: "flowschemas", Name: "bb-throttle", Note: "n1"},
		{Op: OpChanged, Ref: "node/gpu-0", APIVersion: "v1", Kind: "Node", Resource: "nodes", Name: "gpu-0", Original: json.RawMessage(`{"taints":[{"key":"k"}]}`)},
		{Op: OpController, Ref: "controller", Original: json.RawMessage(`{"version":"v0.5.3","flags":["--a=1"]}`)},
		{Op: OpCreated, APIVersion: "v1", Kind: "Event", Resource: "events", Namespace: "default", Name: "ev1"},
		{Op: OpReverted, Ref: "node/gpu-0"},
		// Run and Time are the journal's, whatever the caller set.
		{Run: "someone-else", Time: time.Unix(0, 0), Op: OpChanged, Ref: "component/kube-scheduler", Kind: "LabComponent", Name: "kube-scheduler", Original: json.RawMessage(`["--v=2"]`)},
	}
	path := writeJournal(t, dir, "run1", in...)
	to := time.Now().UTC().Add(time.Second)
	if want := filepath.Join(dir, "run1.jsonl"); path != want {
		t.Errorf("path %s, want %s", path, want)
	}
	rj := readRun(t, dir, "run1")
	if rj.Run != "run1" || rj.Path != path || rj.Cluster != testCluster {
		t.Errorf("journal run %q path %q cluster %+v", rj.Run, rj.Path, rj.Cluster)
	}
	want := append([]Entry{{Op: OpCluster, Server: testServer, ClusterUID: testCluster.UID}}, in...)
	if len(rj.Entries) != len(want) {
		t.Fatalf("%d entries, want %d: %v", len(rj.Entries), len(want), brief(rj.Entries))
	}
	for i, got := range rj.Entries {
		if got.Run != "run1" || got.Time.Before(from) || got.Time.After(to) || (i > 0 && got.Time.Before(rj.Entries[i-1].Time)) {
			t.Errorf("entry %d: run %q time %v; want run1, in order within [%v, %v]", i, got.Run, got.Time, from, to)
		}
		w := want[i]
		w.Run, w.Time = got.Run, got.Time
		if !reflect.DeepEqual(got, w) {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, got, w)
		}
	}
	if got, want := brief(rj.Pending()), []string{
		`changed component/kube-scheduler ["--v=2"]`,
		`controller controller {"version":"v0.5.3","flags":["--a=1"]}`,
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("pending %q, want %q", got, want)
	}
}

func TestJournalNilIsANoop(t *testing.T) {
	var j *Journal
	if err := j.Record(Entry{Op: OpChanged, Ref: "x"}); err != nil {
		t.Errorf("nil Record: %v", err)
	}
	if err := j.Close(); err != nil {
		t.Errorf("nil Close: %v", err)
	}
}

// A process killed while writing leaves a partial last line: it is skipped, and every entry
// before it is read back (a change journaled before it was made is still restored).
func TestJournalTornLastLine(t *testing.T) {
	full, err := json.Marshal(Entry{Run: "run1", Op: OpReverted, Ref: "node/gpu-0"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, tail string }{
		{"cut inside a string", `{"run":"run1","time":"2026-12-01T12:00:00Z","op":"rever`},
		{"cut inside the original", `{"run":"run1","op":"changed","ref":"node/gpu-1","original":{"spec":{"taints":[`},
		{"cut before the closing brace", string(full[:len(full)-1])},
		{"only the opening brace", `{`},
		{"torn line ended by a newline", `{"run":"run1","op":"reverted","ref":"node/gp` + "\n"},
		{"zero bytes of a preallocated block", "\x00\x00\x00\x00"},
		{"an empty last line", "\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeJournal(t, dir, "run1",
				Entry{Op: OpCreated, APIVersion: "v1", Kind: "Event", Resource: "events", Namespace: "default", Name: "ev1"},
				Entry{Op: OpChanged, Ref: "node/gpu-0", Kind: "Node", Name: "gpu-0", Original: json.RawMessage(`{"a":1}`)},
			)
			appendRaw(t, path, tc.tail)
			rj := readRun(t, dir, "run1")
			if got, want := brief(rj.Entries), []string{"cluster", "created", `changed node/gpu-0 {"a":1}`}; !reflect.DeepEqual(got, want) {
				t.Errorf("entries %q, want %q", got, want)
			}
			if rj.Cluster != testCluster {
				t.Errorf("cluster %+v", rj.Cluster)
			}
			// The torn line may have been the change's "reverted": it is not, so the change is
			// still pending and cleanup restores it.
			if got, want := brief(rj.Pending()), []string{`changed node/gpu-0 {"a":1}`}; !reflect.DeepEqual(got, want) {
				t.Errorf("pending %q, want %q", got, want)
			}
		})
	}
}

// Reverted entries undo the latest earlier change of their Ref still in effect (reverts run newest
// first); Pending is every change or controller setting left, newest first.
func TestJournalPending(t *testing.T) {
	changed := func(ref, orig string) Entry {
		return Entry{Op: OpChanged, Ref: ref, Kind: "Node", Original: json.RawMessage(orig)}
	}
	reverted := func(ref string) Entry { return Entry{Op: OpReverted, Ref: ref} }
	cases := []struct {
		name    string
		entries []Entry
		want    []string
	}{{
		name:    "nothing changed",
		entries: nil,
		want:    []string{},
	}, {
		name: "created objects are not pending (cleanup deletes them by name)",
		entries: []Entry{
			{Op: OpCreated, APIVersion: "v1", Kind: "Event", Resource: "events", Name: "ev1"},
			{Op: OpCreated, APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps", Name: "cm1"},
		},
		want: []string{},
	}, {
		name:    "changed then reverted",
		entries: []Entry{changed("node/a", "1"), reverted("node/a")},
		want:    []string{},
	}, {
		name:    "changed, crash before the revert",
		entries: []Entry{changed("node/a", "1")},
		want:    []string{"changed node/a 1"},
	}, {
		name: "interleaved refs, newest first",
		entries: []Entry{
			{Op: OpController, Ref: "controller", Original: json.RawMessage(`"c0"`)},
			changed("node/a", "1"),
			changed("component/kube-scheduler", "2"),
			reverted("node/a"),
			changed("node/b", "3"),
			{Op: OpCreated, Kind: "Event", Name: "ev1"},
			changed("keda", "4"),
			reverted("keda"),
		},
		want: []string{"changed node/b 3", "changed component/kube-scheduler 2", `controller controller "c0"`},
	}, {
		name:    "reverted of a ref never changed is ignored",
		entries: []Entry{changed("node/a", "1"), reverted("node/z")},
		want:    []string{"changed node/a 1"},
	}, {
		name:    "controller setting reverted",
		entries: []Entry{{Op: OpController, Ref: "controller", Original: json.RawMessage(`"c0"`)}, changed("node/a", "1"), reverted("controller")},
		want:    []string{"changed node/a 1"},
	}, {
		// A fault armed in one cell and again in a later one (same node, same component): the
		// first revert does not cover the second change, whose original cleanup must restore.
		name:    "ref changed again after its revert",
		entries: []Entry{changed("node/a", "1"), reverted("node/a"), changed("node/a", "2")},
		want:    []string{"changed node/a 2"},
	}, {
		name:    "ref changed, reverted, changed, reverted",
		entries: []Entry{changed("node/a", "1"), reverted("node/a"), changed("node/a", "2"), reverted("node/a")},
		want:    []string{},
	}, {
		// Changed twice before any revert: the one revert undid the newer change; the older
		// one's original (the real one) is still to restore.
		name:    "nested changes of one ref, one revert",
		entries: []Entry{changed("node/a", "1"), changed("node/a", "2"), reverted("node/a")},
		want:    []string{"changed node/a 1"},
	}, {
		name:    "nested changes of one ref, no revert: newest first",
		entries: []Entry{changed("node/a", "1"), changed("node/a", "2")},
		want:    []string{"changed node/a 2", "changed node/a 1"},
	}, {
		// Out of order: a reverted entry before the change cannot undo it (the journal is
		// written before each change and after each revert).
		name:    "reverted before the change",
		entries: []Entry{reverted("node/a"), changed("node/a", "1")},
		want:    []string{"changed node/a 1"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// In memory, and through a journal file.
			if got := brief(RunJournal{Entries: tc.entries}.Pending()); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("pending %q, want %q", got, tc.want)
			}
			dir := t.TempDir()
			writeJournal(t, dir, "run1", tc.entries...)
			if got := brief(readRun(t, dir, "run1").Pending()); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("pending read back %q, want %q", got, tc.want)
			}
		})
	}
}

func TestReadJournalsEmptyAndMissing(t *testing.T) {
	t.Run("missing directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "absent")
		js, err := ReadJournals(dir, "")
		if err != nil || len(js) != 0 {
			t.Errorf("ReadJournals(all) = %v, %v; want none, no error", js, err)
		}
		if _, err := ReadJournals(dir, "run1"); err == nil || !strings.Contains(err.Error(), "no journal for run run1") {
			t.Errorf("ReadJournals(run1) error %v, want no journal for run run1", err)
		}
	})
	t.Run("empty directory, other files ignored", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "run1.json"), []byte(`{"op":"changed","ref":"x"}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		js, err := ReadJournals(dir, "")
		if err != nil || len(js) != 0 {
			t.Errorf("ReadJournals(all) = %v, %v; want none", js, err)
		}
		if _, err := ReadJournals(dir, "run1"); err == nil {
			t.Error("ReadJournals(run1) found a journal in a .json file")
		}
	})
	t.Run("empty journal file", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "run1.jsonl")
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		rj := readRun(t, dir, "run1")
		if rj.Run != "run1" || rj.Path != path || rj.Cluster != (ClusterID{}) || len(rj.Entries) != 0 || len(rj.Pending()) != 0 {
			t.Errorf("empty journal read as %+v", rj)
		}
	})
	t.Run("journal of only a torn line", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "run1.jsonl"), []byte(`{"run":"run1","op":"clus`), 0o644); err != nil {
			t.Fatal(err)
		}
		if rj := readRun(t, dir, "run1"); len(rj.Entries) != 0 || rj.Cluster != (ClusterID{}) {
			t.Errorf("torn-only journal read as %+v", rj)
		}
	})
}

func TestReadJournalsSelectsRuns(t *testing.T) {
	dir := t.TempDir()
	writeJournal(t, dir, "run2", Entry{Op: OpChanged, Ref: "node/b", Original: json.RawMessage(`2`)})
	writeJournal(t, dir, "run1", Entry{Op: OpChanged, Ref: "node/a", Original: json.RawMessage(`1`)})
	js, err := ReadJournals(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, j := range js {
		runs = append(runs, j.Run+":"+strings.Join(brief(j.Pending()), ","))
	}
	if want := []string{"run1:changed node/a 1", "run2:changed node/b 2"}; !reflect.DeepEqual(runs, want) {
		t.Errorf("journals %q, want %q (sorted by run)", runs, want)
	}
	if rj := readRun(t, dir, "run2"); rj.Run != "run2" || len(rj.Entries) != 2 {
		t.Errorf("run2 read as %+v", rj)
	}
	if _, err := ReadJournals(dir, "run3"); err == nil {
		t.Error("ReadJournals(run3) found a journal")
	}
}

// Opening a run's journal again appends to it: nothing already journaled is lost.
func TestJournalReopenAppends(t *testing.T) {
	dir := t.TempDir()
	writeJournal(t, dir, "run1", Entry{Op: OpChanged, Ref: "node/a", Original: json.RawMessage(`1`)})
	writeJournal(t, dir, "run1", Entry{Op: OpReverted, Ref: "node/a"})
	rj := readRun(t, dir, "run1")
	if got, want := brief(rj.Entries), []string{"cluster", "changed node/a 1", "cluster", "reverted node/a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("entries %q, want %q", got, want)
	}
	if p := rj.Pending(); len(p) != 0 {
		t.Errorf("pending %q, want none", brief(p))
	}
}

// An original larger than the reader's initial 1 MiB buffer is read back whole.
func TestJournalLargeOriginal(t *testing.T) {
	big := json.RawMessage(`{"data":"` + strings.Repeat("x", 3<<20) + `"}`)
	dir := t.TempDir()
	writeJournal(t, dir, "run1", Entry{Op: OpChanged, Ref: "node/a", Original: big}, Entry{Op: OpCreated, Name: "after"})
	rj := readRun(t, dir, "run1")
	if len(rj.Entries) != 3 {
		t.Fatalf("read back %d entries, want 3", len(rj.Entries))
	}
	if !bytes.Equal(rj.Entries[1].Original, big) || rj.Entries[2].Name != "after" {
		t.Errorf("original of %d bytes (want %d), last entry %+v", len(rj.Entries[1].Original), len(big), rj.Entries[2])
	}
}

func TestJournalRemove(t *testing.T) {
	dir := t.TempDir()
	path := writeJournal(t, dir, "run1")
	rj := readRun(t, dir, "run1")
	if err := rj.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("journal still there: %v", err)
	}
	if err := rj.Remove(); err != nil {
		t.Errorf("second Remove: %v", err)
	}
}

// A write that fails part-way leaves a partial line; the next entry must still read back.
func TestJournalEntryAfterAFailedWrite(t *testing.T) {
	dir := t.TempDir()
	j, err := OpenJournal(dir, "r1", ClusterID{Server: "https://x"})
	if err != nil {
		t.Fatal(err)
	}
	// What a failed write leaves: part of a line, and the journal knows it.
	if _, err := j.f.Write([]byte(`{"run":"r1","op":"chan`)); err != nil {
		t.Fatal(err)
	}
	j.torn = true
	if err := j.Record(Entry{Op: OpChanged, Ref: "node/n1", Kind: "Node", Name: "n1"}); err != nil {
		t.Fatal(err)
	}
	_ = j.Close()
	js, err := ReadJournals(dir, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if p := js[0].Pending(); len(p) != 1 || p[0].Name != "n1" {
		t.Fatalf("pending %+v, want the node change written after the torn line", p)
	}
}

// A line longer than the reader takes is an error, not a silently shortened journal.
func TestJournalTooLongIsAnError(t *testing.T) {
	dir := t.TempDir()
	long := make([]byte, 17<<20)
	for i := range long {
		long[i] = 'x'
	}
	if err := os.WriteFile(filepath.Join(dir, "r2.jsonl"), append(long, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadJournals(dir, "r2"); err == nil {
		t.Fatal("want an error for a journal that cannot be read to its end")
	}
}

// A journal is replayed only on the cluster it is about: same address is not enough (a new lab
// reuses the old one's port), and an unreadable live UID falls back to the address.
func TestClusterIDMatches(t *testing.T) {
	for _, tc := range []struct {
		name          string
		journal, live ClusterID
		want          bool
	}{
		{"same address and UID", ClusterID{"https://a:1", "u1"}, ClusterID{"https://a:1", "u1"}, true},
		{"same address, another cluster", ClusterID{"https://a:1", "u1"}, ClusterID{"https://a:1", "u2"}, false},
		{"another address", ClusterID{"https://a:1", "u1"}, ClusterID{"https://a:2", "u1"}, false},
		{"live UID unreadable", ClusterID{"https://a:1", "u1"}, ClusterID{"https://a:1", ""}, true},
		{"journal without UID, live UID known", ClusterID{"https://a:1", ""}, ClusterID{"https://a:1", "u1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.journal.Matches(tc.live); got != tc.want {
				t.Errorf("%+v.Matches(%+v) = %v, want %v", tc.journal, tc.live, got, tc.want)
			}
		})
	}
}

func TestIdentifyCluster(t *testing.T) {
	cs := fake.NewSimpleClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "ks-uid"}})
	if got := IdentifyCluster(context.Background(), "https://a:1", cs); got != (ClusterID{"https://a:1", "ks-uid"}) {
		t.Errorf("got %+v", got)
	}
	if got := IdentifyCluster(context.Background(), "https://a:1", fake.NewSimpleClientset()); got != (ClusterID{Server: "https://a:1"}) {
		t.Errorf("without kube-system: got %+v", got)
	}
}
