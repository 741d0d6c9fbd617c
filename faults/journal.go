package faults

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Journal ops.
const (
	OpCluster    = "cluster"    // first entry: which cluster the run touched
	OpCreated    = "created"    // an object brakebench created (labelled; cleanup deletes it by name)
	OpChanged    = "changed"    // an object brakebench changed; Original holds what to restore
	OpController = "controller" // the lab controller's original version and flags
	OpReverted   = "reverted"   // a change (by Ref) was undone
)

// Entry is one journal line. Every change is written (and synced) before it is made, so a
// `brakebench cleanup` after SIGKILL or a power cut knows what to undo.
type Entry struct {
	Run        string          `json:"run"`
	Time       time.Time       `json:"time"`
	Op         string          `json:"op"`
	Ref        string          `json:"ref,omitempty"` // stable identity of the change (for reverted)
	APIVersion string          `json:"apiVersion,omitempty"`
	Kind       string          `json:"kind,omitempty"`
	Resource   string          `json:"resource,omitempty"`
	Namespace  string          `json:"namespace,omitempty"`
	Name       string          `json:"name,omitempty"`
	Original   json.RawMessage `json:"original,omitempty"`
	Server     string          `json:"server,omitempty"`
	Note       string          `json:"note,omitempty"`
}

// Journal appends entries to <dir>/<run>.jsonl.
type Journal struct {
	mu   sync.Mutex
	f    *os.File
	run  string
	Path string
}

// OpenJournal creates the run's journal and records which cluster it is about.
func OpenJournal(dir, run, server string) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, run+".jsonl")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	j := &Journal{f: f, run: run, Path: path}
	return j, j.Record(Entry{Op: OpCluster, Server: server})
}

// Record writes one entry and syncs it to disk.
func (j *Journal) Record(e Entry) error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	e.Run, e.Time = j.run, time.Now().UTC()
	raw, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if _, err := j.f.Write(append(raw, '\n')); err != nil {
		return fmt.Errorf("journal %s: %w", j.Path, err)
	}
	return j.f.Sync()
}

// Close closes the file.
func (j *Journal) Close() error {
	if j == nil {
		return nil
	}
	return j.f.Close()
}

// RunJournal is one run's journal as read back.
type RunJournal struct {
	Run     string
	Path    string
	Server  string
	Entries []Entry
}

// Pending are the changes and controller settings not yet marked reverted, newest first. A
// reverted entry undoes the latest earlier change of its Ref not yet undone (reverts run newest
// first): a Ref changed again after its revert (a fault armed in a later cell) is pending again.
func (r RunJournal) Pending() []Entry {
	open := map[string][]int{} // Ref -> its changes not yet reverted, oldest first
	pending := make([]bool, len(r.Entries))
	for i, e := range r.Entries {
		switch e.Op {
		case OpChanged, OpController:
			open[e.Ref] = append(open[e.Ref], i)
			pending[i] = true
		case OpReverted:
			if s := open[e.Ref]; len(s) > 0 {
				pending[s[len(s)-1]] = false
				open[e.Ref] = s[:len(s)-1]
			}
		}
	}
	var out []Entry
	for i := len(r.Entries) - 1; i >= 0; i-- {
		if pending[i] {
			out = append(out, r.Entries[i])
		}
	}
	return out
}

// ReadJournals reads every journal in dir (only run's, when run != ""). A torn last line (the
// process died while writing it) is skipped.
func ReadJournals(dir, run string) ([]RunJournal, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []RunJournal
	for _, f := range files {
		id := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		if run != "" && id != run {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		rj := RunJournal{Run: id, Path: f}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var e Entry
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			if e.Op == OpCluster {
				rj.Server = e.Server
			}
			rj.Entries = append(rj.Entries, e)
		}
		fh.Close()
		out = append(out, rj)
	}
	if run != "" && len(out) == 0 {
		return nil, fmt.Errorf("no journal for run %s in %s", run, dir)
	}
	return out, nil
}

// Remove deletes a journal once everything in it is undone.
func (r RunJournal) Remove() error {
	err := os.Remove(r.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
