package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/brakebench/brakebench/internal/config"
	"github.com/brakebench/brakebench/internal/progress"
)

// A record that is not one is an error naming the file; a record of another lab directory is
// not removed by this one's Down.
func TestRealNodeRecordFiles(t *testing.T) {
	l := &Lab{cfg: config.Lab{Name: "t"}, dir: t.TempDir(), records: t.TempDir()}
	rn := &RealNode{Dir: filepath.Join(l.dir, "node"), CgroupRoot: "/brakebench-lab-t"}
	if rec, err := l.readRecord(rn.CgroupRoot); rec != nil || err != nil {
		t.Fatalf("no record: %+v %v", rec, err)
	}
	if err := l.writeRecord(rn); err != nil {
		t.Fatal(err)
	}
	rec, err := l.readRecord(rn.CgroupRoot)
	if err != nil || rec.LabDir != l.dir || rec.Node.Dir != rn.Dir || rec.BootID != bootID() {
		t.Fatalf("record %+v %v", rec, err)
	}
	other := &RealNode{Dir: "/elsewhere/node", CgroupRoot: rn.CgroupRoot}
	if err := l.removeRecord(other); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(l.recordPath(rn.CgroupRoot)); err != nil {
		t.Fatalf("another directory's Down removed the record: %v", err)
	}
	if err := l.removeRecord(rn); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(l.recordPath(rn.CgroupRoot)); !os.IsNotExist(err) {
		t.Fatalf("record still there: %v", err)
	}
	if err := os.WriteFile(l.recordPath(rn.CgroupRoot), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := l.readRecord(rn.CgroupRoot); err == nil || !strings.Contains(err.Error(), l.recordPath(rn.CgroupRoot)) {
		t.Fatalf("a broken record: %v", err)
	}
}

// What a killed run leaves of a real node on the host (cgroups with the kubelet's subtrees, the
// bridge, the kubelet's bind mount, the node directory) is reverted by the next lab up, with or
// without a record; a node with a process still in its cgroup is left alone. Needs root and
// writable cgroups: it makes them for real, under names of its own.
func TestReclaimRealNode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes cgroups, a bridge and a bind mount")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip (iproute2)")
	}
	if len(cgroupHierarchies()) == 0 {
		t.Skip("no cgroup hierarchy mounted")
	}
	cases := []struct {
		name       string
		record     bool   // a record as this version writes it
		bootID     string // of the record; "" for this boot's
		state      bool   // the old lab's state.json, found through its mount
		mount      bool   // the kubelet's bind mount left
		live       bool   // a process still in the cgroup
		wantErr    string
		wantRemain bool // the old node's cgroup is still there afterwards
	}{
		{name: "orphan with a record", record: true, state: true, mount: true},
		{name: "orphan without a record, found through its mount", state: true, mount: true},
		{name: "empty cgroup and bridge, nothing says whose", wantRemain: false},
		{name: "a record from before a reboot", record: true, bootID: "another-boot"},
		{name: "a live node is left alone", record: true, state: true, mount: true, live: true, wantErr: "still running", wantRemain: true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tag := fmt.Sprintf("ut%d%d", os.Getpid()%10000, i)
			root := "/" + realNodeCgroup + "-" + tag
			bridge := "bbt" + tag
			if len(bridge) > 15 {
				bridge = bridge[:15]
			}
			links, err := linkNames()
			if err != nil {
				t.Fatal(err)
			}
			oldLab := filepath.Join(t.TempDir(), "old")
			old := &RealNode{Name: RealNodeName, Dir: filepath.Join(oldLab, "node"), CgroupRoot: root, Bridge: bridge,
				Host: hostSnapshot{Links: links, Sysctls: map[string]string{}, IPTables: map[string][]string{}}}
			kubelet := old.files().KubeletRoot()
			// Cleanup whatever the case leaves, then check nothing of it is on the host.
			var sleeper *exec.Cmd
			t.Cleanup(func() {
				if sleeper != nil {
					_ = sleeper.Process.Kill()
					_ = sleeper.Wait()
				}
				_ = unmountAll(oldLab)
				_ = removeCgroupRoot(root)
				_ = exec.Command("ip", "link", "delete", bridge).Run()
			})

			if err := makeCgroupRoot(root); err != nil {
				t.Skipf("cgroups not writable here: %v", err)
			}
			for _, h := range cgroupHierarchies() {
				_ = os.MkdirAll(filepath.Join(h, root, "kubepods", "burstable"), 0o755)
			}
			if out, err := exec.Command("ip", "link", "add", bridge, "type", "bridge").CombinedOutput(); err != nil {
				t.Skipf("cannot add a bridge here: %v: %s", err, out)
			}
			if err := os.MkdirAll(kubelet, 0o700); err != nil {
				t.Fatal(err)
			}
			if tc.mount {
				if err := syscall.Mount(kubelet, kubelet, "", syscall.MS_BIND, ""); err != nil {
					t.Skipf("cannot bind-mount here: %v", err)
				}
			}
			if tc.state {
				raw, _ := json.Marshal(State{Name: "old", Dir: oldLab, RealNode: old})
				if err := os.WriteFile(filepath.Join(oldLab, "state.json"), raw, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.live {
				sleeper = exec.Command("sleep", "60")
				if err := sleeper.Start(); err != nil {
					t.Fatal(err)
				}
				procs := filepath.Join(cgroupDirs(root)[0], "cgroup.procs")
				if err := os.WriteFile(procs, []byte(strconv.Itoa(sleeper.Process.Pid)), 0o644); err != nil {
					t.Skipf("cannot move a process into %s: %v", procs, err)
				}
			}

			newLab := filepath.Join(t.TempDir(), "new")
			l := &Lab{cfg: config.Lab{Name: tag}, dir: newLab, records: t.TempDir(), pr: progress.Discard()}
			if tc.record {
				if err := (&Lab{dir: oldLab, records: l.records}).writeRecord(old); err != nil {
					t.Fatal(err)
				}
				if tc.bootID != "" {
					raw, _ := json.Marshal(realNodeRecord{BootID: tc.bootID, LabDir: oldLab, Node: old})
					if err := os.WriteFile(l.recordPath(root), raw, 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			rn := &RealNode{Name: RealNodeName, Dir: filepath.Join(newLab, "node"), CgroupRoot: root, Bridge: bridge}

			err = l.reclaimRealNode(context.Background(), rn)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("reclaim: %v, want an error with %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatalf("reclaim: %v", err)
			}
			if got := len(cgroupDirs(root)) > 0; got != tc.wantRemain {
				t.Errorf("cgroup %s there afterwards: %v, want %v", root, got, tc.wantRemain)
			}
			links, _ = linkNames()
			if got := slices.Contains(links, bridge); got != tc.wantRemain {
				t.Errorf("bridge %s there afterwards: %v, want %v", bridge, got, tc.wantRemain)
			}
			if tc.live {
				if !alive(sleeper.Process.Pid, "") {
					t.Error("the live node's process was killed")
				}
				if ms := mountsUnder(oldLab); len(ms) == 0 && tc.mount {
					t.Error("the live node's mount was removed")
				}
				return
			}
			if ms := mountsUnder(oldLab); len(ms) > 0 {
				t.Errorf("still mounted: %v", ms)
			}
			if tc.state || tc.record && tc.bootID == "" {
				if _, err := os.Stat(old.Dir); !os.IsNotExist(err) {
					t.Errorf("old node directory still there: %v", err)
				}
			}
			if _, err := os.Stat(l.recordPath(root)); !os.IsNotExist(err) {
				t.Errorf("record still there: %v", err)
			}
		})
	}
}
