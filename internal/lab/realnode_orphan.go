package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// A run killed outright (SIGKILL, an OOM kill, a CI job or session whose processes are all ended)
// cannot revert its real node: the cgroups, the bridge, the kubelet's mounts, iptables rules and
// sysctls stay on the host, and the next lab of that name would refuse to start. Its lab directory
// may be in a temporary directory no later run looks at (the end-to-end tests use one per test
// binary), so the real node also registers itself in a host-wide record, before it changes
// anything, and the next lab up reclaims an orphan: one none of whose processes still run.

// DefaultRealNodeRecords is where real nodes register themselves (one JSON file per cgroup root).
const DefaultRealNodeRecords = "/run/brakebench/real-nodes"

// realNodeRecord is a real node's registration: enough to revert it without its lab's state.
type realNodeRecord struct {
	BootID string    `json:"bootID"` // a record from before a reboot has nothing left to revert
	LabDir string    `json:"labDir"`
	Node   *RealNode `json:"node"`
}

func bootID() string {
	raw, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(raw))
}

func (l *Lab) recordPath(cgroupRoot string) string {
	return filepath.Join(l.records, strings.Trim(cgroupRoot, "/")+".json")
}

func (l *Lab) writeRecord(rn *RealNode) error {
	if err := os.MkdirAll(l.records, 0o700); err != nil {
		return fmt.Errorf("real node record: %w", err)
	}
	raw, err := json.MarshalIndent(realNodeRecord{BootID: bootID(), LabDir: l.dir, Node: rn}, "", "  ")
	if err != nil {
		return err
	}
	p := l.recordPath(rn.CgroupRoot)
	if err := os.WriteFile(p+".tmp", raw, 0o600); err != nil {
		return fmt.Errorf("real node record: %w", err)
	}
	return os.Rename(p+".tmp", p)
}

// removeRecord drops rn's record if it is rn's (a record of another lab directory is not ours).
func (l *Lab) removeRecord(rn *RealNode) error {
	rec, err := l.readRecord(rn.CgroupRoot)
	if err != nil || rec == nil || rec.Node == nil || rec.Node.Dir != rn.Dir {
		return err
	}
	if err := os.Remove(l.recordPath(rn.CgroupRoot)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (l *Lab) readRecord(cgroupRoot string) (*realNodeRecord, error) {
	p := l.recordPath(cgroupRoot)
	raw, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec realNodeRecord
	if err := json.Unmarshal(raw, &rec); err != nil || rec.Node == nil || rec.Node.Dir == "" {
		return nil, fmt.Errorf("real node record %s: not a record (%v); remove it if no brakebench lab runs", p, err)
	}
	return &rec, nil
}

// recordFromMounts finds the lab state of a real node with cgroup root root through the
// kubelet's mount that a killed run leaves (<lab dir>/node/kubelet): the way back for a node
// registered by nothing (one started before records existed, or whose record was lost).
func recordFromMounts(root, exclude string) *realNodeRecord {
	suffix := string(filepath.Separator) + filepath.Join("node", "kubelet")
	for _, m := range mountInfo() {
		i := strings.LastIndex(m.point, suffix)
		if i <= 0 || (i+len(suffix) != len(m.point) && m.point[i+len(suffix)] != filepath.Separator) {
			continue
		}
		labDir := m.point[:i]
		raw, err := os.ReadFile(filepath.Join(labDir, "state.json"))
		if err != nil {
			continue
		}
		var s State
		if json.Unmarshal(raw, &s) != nil || s.RealNode == nil || s.RealNode.CgroupRoot != root || s.RealNode.Dir == exclude {
			continue
		}
		return &realNodeRecord{BootID: bootID(), LabDir: labDir, Node: s.RealNode}
	}
	return nil
}

// runningProcesses lists what still runs of a registered real node or of its lab.
func (rec *realNodeRecord) runningProcesses() []int {
	var pids []int
	pids = append(pids, cgroupPIDs(rec.Node.CgroupRoot)...)
	pids = append(pids, processesMentioning(rec.Node.Dir)...)
	pids = append(pids, processesMentioning(rec.LabDir)...)
	for _, p := range []*proc{rec.Node.Kubelet, rec.Node.Containerd} {
		if p != nil && alive(p.PID, p.Binary) {
			pids = append(pids, p.PID)
		}
	}
	slices.Sort(pids)
	return slices.Compact(pids)
}

// reclaimRealNode makes room for rn: it reverts what a killed run left of a real node with rn's
// cgroup root, and refuses, changing nothing, while any process of that node or its lab runs.
func (l *Lab) reclaimRealNode(ctx context.Context, rn *RealNode) error {
	rec, err := l.readRecord(rn.CgroupRoot)
	if err != nil {
		return err
	}
	if rec != nil && rec.BootID != bootID() {
		// Registered before a reboot: cgroups, links, mounts and sysctls went with it.
		l.pr.Printf("real node: dropping the record of %s from before a reboot", rec.Node.Dir)
		if err := os.Remove(l.recordPath(rn.CgroupRoot)); err != nil {
			return err
		}
		rec = nil
	}
	if rec == nil {
		rec = recordFromMounts(rn.CgroupRoot, rn.Dir)
	}
	if rec != nil && rec.Node.Dir != rn.Dir {
		if pids := rec.runningProcesses(); len(pids) > 0 {
			return fmt.Errorf("the real node of the lab in %s is still running (processes %v); take that lab down first (brakebench lab down with lab.stateDir=%s)", rec.LabDir, pids, filepath.Dir(rec.LabDir))
		}
		left := rec.Node.Leftovers()
		l.pr.Printf("real node: reverting what a killed run left of the lab in %s (%d items: %s)", rec.LabDir, len(left), summarize(left, 4))
		// No kubeconfig: its API server is gone, and no other cluster may be asked.
		if err := l.stopRealNode(ctx, &State{RealNode: rec.Node}); err != nil {
			return fmt.Errorf("reclaim the real node of the lab in %s: %w", rec.LabDir, err)
		}
		if left := rec.Node.Leftovers(); len(left) > 0 {
			return fmt.Errorf("reclaim the real node of the lab in %s: still left: %s", rec.LabDir, strings.Join(left, "; "))
		}
		if err := os.Remove(l.recordPath(rn.CgroupRoot)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	// Nothing says whose they are: an empty cgroup holds nothing, and the bridge is the real
	// node's by name, free to remove once no real node's cgroup has a process in it.
	if d := cgroupDirs(rn.CgroupRoot); len(d) > 0 {
		if pids := cgroupPIDs(rn.CgroupRoot); len(pids) > 0 {
			return fmt.Errorf("cgroup %s already exists (%s) with processes %v: another lab's real node; take that lab down first (brakebench lab down)", rn.CgroupRoot, d[0], pids)
		}
		l.pr.Printf("real node: removing the empty cgroup %s a killed run left", rn.CgroupRoot)
		if err := removeCgroupRoot(rn.CgroupRoot); err != nil {
			return err
		}
	}
	links, err := linkNames()
	if err != nil {
		return err
	}
	if slices.Contains(links, rn.Bridge) {
		if busy := runningRealNodes(); len(busy) > 0 {
			return fmt.Errorf("network interface %s already exists and real nodes run (cgroups %s): take their labs down first", rn.Bridge, strings.Join(busy, ", "))
		}
		l.pr.Printf("real node: removing the bridge %s a killed run left", rn.Bridge)
		if out, err := exec.Command("ip", "link", "delete", rn.Bridge).CombinedOutput(); err != nil {
			return fmt.Errorf("ip link delete %s: %w: %s", rn.Bridge, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// runningRealNodes lists the real-node cgroup roots on this host that have a process in them.
func runningRealNodes() []string {
	var out []string
	for _, h := range cgroupHierarchies() {
		dirs, _ := filepath.Glob(filepath.Join(h, realNodeCgroup+"-*"))
		for _, d := range dirs {
			root := "/" + filepath.Base(d)
			if !slices.Contains(out, root) && len(cgroupPIDs(root)) > 0 {
				out = append(out, root)
			}
		}
	}
	return out
}

func summarize(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return strings.Join(items[:n], "; ") + fmt.Sprintf("; and %d more", len(items)-n)
}
