package undo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
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
	ClusterUID string          `json:"clusterUID,omitempty"`
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

// ClusterID says which cluster a journal is about: its API server's address, and the UID of its
// kube-system namespace. The address alone is not an identity: a lab recreated in another state
// directory gets the same loopback port, and a journal of the old lab (its paths and flags) must
// never be replayed on the new one.
type ClusterID struct {
	Server string
	UID    string // "" when it could not be read
}

// Matches reports whether a journal recorded for j is about the live cluster c. Both UIDs must
// be known and equal; when the live cluster's UID cannot be read the address decides. A journal
// without a UID (an older brakebench) matches nothing: see Unidentified.
func (j ClusterID) Matches(c ClusterID) bool {
	if j.Server != c.Server {
		return false
	}
	if c.UID == "" {
		return true
	}
	return j.UID == c.UID
}

// OpenJournal creates the run's journal and records which cluster it is about.
func OpenJournal(dir, run string, id ClusterID) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, run+".jsonl")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	j := &Journal{f: f, run: run, Path: path}
	return j, j.Record(Entry{Op: OpCluster, Server: id.Server, ClusterUID: id.UID})
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
	Cluster ClusterID
	Entries []Entry
}

// Unidentified reports whether the journal names its cluster's address but not its UID (written
// by a brakebench before cluster UIDs were journaled): cleanup leaves it for a person to check.
func (r RunJournal) Unidentified() bool { return r.Cluster.UID == "" }

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
				rj.Cluster = ClusterID{Server: e.Server, UID: e.ClusterUID}
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

// IdentifyCluster reads the live cluster's identity: its address and its kube-system
// namespace's UID (left "" when it cannot be read, e.g. an identity without that permission;
// the address then decides alone).
func IdentifyCluster(ctx context.Context, server string, cs kubernetes.Interface) ClusterID {
	id := ClusterID{Server: server}
	if ns, err := cs.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{}); err == nil {
		id.UID = string(ns.UID)
	}
	return id
}
