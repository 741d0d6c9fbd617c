package undo

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

// ErrNoJournal: the run asked for has no journal (it never changed anything, or was cleaned up).
var ErrNoJournal = errors.New("no journal")

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
	// torn is set when a write failed part-way: the next entry starts on a new line, so the
	// partial one cannot swallow it.
	torn bool
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
	line := append(raw, '\n')
	if j.torn {
		line = append([]byte{'\n'}, line...)
	}
	if _, err := j.f.Write(line); err != nil {
		j.torn = true
		return fmt.Errorf("journal %s: %w", j.Path, err)
	}
	j.torn = false
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

// ReadJournals reads every journal in dir (only run's, when run != ""). A line that is not an
// entry (the process died while writing it, or a write failed part-way: the change it announced
// was never made) is skipped; a journal that cannot be read to its end is an error, so cleanup
// never removes a journal it did not read whole.
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
		err = sc.Err()
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("journal %s: %w", f, err)
		}
		out = append(out, rj)
	}
	if run != "" && len(out) == 0 {
		return nil, fmt.Errorf("%w for run %s in %s", ErrNoJournal, run, dir)
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
