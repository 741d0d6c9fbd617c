package lab

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// hostSysctls are the kernel settings the kubelet sets when it starts (vm.overcommit_memory,
// vm.panic_on_oom, kernel.panic, kernel.panic_on_oops, kernel.keys.*) and the bridge plugin sets
// for a gateway (net.ipv4.ip_forward); Down writes back what they were.
var hostSysctls = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "net/ipv4/ip_forward",
}

// hostPaths are where the kubelet, containerd and the CNI library keep state whatever root they
// are given (device-plugin sockets, shim sockets, the CNI result cache, container log links).
// Down removes those that did not exist before the node came up.
var hostPaths = []string{
	"/var/lib/kubelet", "/run/containerd", "/var/lib/cni", "/run/netns", "/var/log/pods",
	"/var/log/containers", "/opt/containerd", "/run/nri", "/var/run/cdi", "/etc/cdi",
	"/var/lib/containerd", "/etc/containerd", "/etc/cni", "/opt/cni",
}

// hostSnapshot is the host as it was before the real node came up: taken and saved before the
// node changes anything, so Down can put it back even after a crash.
type hostSnapshot struct {
	Sysctls  map[string]string   `json:"sysctls"`
	Absent   []string            `json:"absent"`   // hostPaths that did not exist
	Links    []string            `json:"links"`    // network interfaces
	IPTables map[string][]string `json:"iptables"` // iptables-save / ip6tables-save rule lines
}

func snapshotHost() (hostSnapshot, error) {
	h := hostSnapshot{Sysctls: map[string]string{}, IPTables: map[string][]string{}}
	for _, k := range hostSysctls {
		raw, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if err != nil {
			continue // not on this kernel
		}
		h.Sysctls[k] = strings.TrimSpace(string(raw))
	}
	for _, p := range hostPaths {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			h.Absent = append(h.Absent, p)
		}
	}
	links, err := linkNames()
	if err != nil {
		return h, err
	}
	h.Links = links
	for _, tool := range []string{"iptables", "ip6tables"} {
		rules, err := iptablesRules(tool)
		if err != nil {
			return h, err
		}
		h.IPTables[tool] = rules
	}
	return h, nil
}

func linkNames() ([]string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("list network interfaces: %w", err)
	}
	out := make([]string, 0, len(ifs))
	for _, i := range ifs {
		out = append(out, i.Name)
	}
	sort.Strings(out)
	return out, nil
}

// iptablesRules returns tool-save's tables, chains and rules without counters; nil when the tool
// is not installed (then nothing can have added rules with it either).
func iptablesRules(tool string) ([]string, error) {
	bin, err := exec.LookPath(tool + "-save")
	if err != nil {
		return nil, nil
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		return nil, fmt.Errorf("%s-save: %w", tool, err)
	}
	return parseIPTablesSave(string(out)), nil
}

// parseIPTablesSave keeps user chains (":CHAIN -"), built-in chains whose policy is not ACCEPT,
// and "-A" rules, each prefixed with its table so equal rules in two tables stay apart. A table
// holding only built-in chains that accept everything filters nothing (iptables-nft creates such
// tables on first use and cannot delete them), so it does not count.
func parseIPTablesSave(out string) []string {
	var rules []string
	table := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "*"):
			table = line[1:]
		case strings.HasPrefix(line, ":"):
			f := strings.Fields(line)
			if len(f) >= 2 && f[1] != "ACCEPT" {
				rules = append(rules, table+" "+f[0]+" "+f[1])
			}
		case strings.HasPrefix(line, "-A "):
			rules = append(rules, table+" "+line)
		}
	}
	return rules
}

// addedIPTables lists the rules and chains in now that were not in before and are the real
// node's doing: the kubelet's KUBE-* chains and rules that use them, and anything naming the
// node's bridge or the CNI's chains. Rules another program (Docker, a firewall) added meanwhile
// are not ours to delete.
func addedIPTables(before, now []string, bridge string) []string {
	var out []string
	for _, r := range now {
		if slices.Contains(before, r) {
			continue
		}
		if strings.Contains(r, "KUBE-") || strings.Contains(r, "CNI-") || (bridge != "" && strings.Contains(r, bridge)) {
			out = append(out, r)
		}
	}
	return out
}

// ownedMountRoots are the host-wide prefixes the node may mount under and remove: those of
// sharedMountRoots that did not exist before it came up (a host's own containerd or kubelet keeps
// its mounts), plus the node's own directory.
func (h hostSnapshot) ownedMountRoots(dir string) []string {
	out := []string{dir}
	for _, p := range sharedMountRoots {
		if slices.Contains(h.Absent, p) {
			out = append(out, p)
		}
	}
	return out
}

// sharedMountRoots are host paths where the kubelet and containerd mount whatever root they are
// given.
var sharedMountRoots = []string{"/run/containerd", "/var/lib/kubelet", "/run/netns"}

// revertIPTables deletes the rules, then flushes and deletes the chains, that were added.
func revertIPTables(tool string, added []string) error {
	var errs []error
	var chains [][2]string
	for _, r := range added {
		table, rest, _ := strings.Cut(r, " ")
		if strings.HasPrefix(rest, ":") {
			chains = append(chains, [2]string{table, strings.Fields(rest)[0][1:]})
			continue
		}
		args := append([]string{"-t", table, "-D"}, splitRule(strings.TrimPrefix(rest, "-A "))...)
		if out, err := exec.Command(tool, args...).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w: %s", tool, strings.Join(args, " "), err, strings.TrimSpace(string(out))))
		}
	}
	for _, c := range chains {
		for _, op := range []string{"-F", "-X"} {
			if out, err := exec.Command(tool, "-t", c[0], op, c[1]).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("%s -t %s %s %s: %w: %s", tool, c[0], op, c[1], err, strings.TrimSpace(string(out))))
			}
		}
	}
	return errors.Join(errs...)
}

// splitRule splits an iptables-save rule into arguments (double quotes group, as the tool writes
// comments).
func splitRule(s string) []string {
	var out []string
	var cur strings.Builder
	inQ, have := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && inQ && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case c == '"':
			inQ, have = !inQ, true
		case c == ' ' && !inQ:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteByte(c)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}

// cgroupHierarchies lists the mount points of every cgroup hierarchy (v1 and v2).
func cgroupHierarchies() []string {
	var out []string
	for _, m := range mountInfo() {
		if m.fsType == "cgroup" || m.fsType == "cgroup2" {
			out = append(out, m.point)
		}
	}
	return out
}

type mountEntry struct{ point, fsType string }

// mountInfo parses /proc/self/mountinfo (mount point and file system type).
func mountInfo() []mountEntry {
	raw, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []mountEntry
	for _, line := range strings.Split(string(raw), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 1 {
			continue
		}
		out = append(out, mountEntry{point: unescapeMount(f[4]), fsType: g[0]})
	}
	return out
}

func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountsUnder lists mount points at or below any of prefixes, deepest first.
func mountsUnder(prefixes ...string) []string {
	var out []string
	for _, m := range mountInfo() {
		for _, p := range prefixes {
			if p != "" && (m.point == p || strings.HasPrefix(m.point, p+"/")) {
				out = append(out, m.point)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return slices.Compact(out)
}

// unmountAll detaches every mount under prefixes (deepest first; repeated for stacked mounts).
func unmountAll(prefixes ...string) error {
	for round := 0; round < 5; round++ {
		ms := mountsUnder(prefixes...)
		if len(ms) == 0 {
			return nil
		}
		for _, m := range ms {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
	}
	if ms := mountsUnder(prefixes...); len(ms) > 0 {
		return fmt.Errorf("still mounted: %s", strings.Join(ms, ", "))
	}
	return nil
}

// cgroupDirs lists root's directory in every hierarchy that has it.
func cgroupDirs(root string) []string {
	var out []string
	for _, h := range cgroupHierarchies() {
		d := filepath.Join(h, root)
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			out = append(out, d)
		}
	}
	return out
}

// cgroupPIDs lists the processes in root or below it, in any hierarchy.
func cgroupPIDs(root string) []int {
	seen := map[int]bool{}
	for _, d := range cgroupDirs(root) {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || e.Name() != "cgroup.procs" {
				return nil
			}
			raw, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(raw)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	out := make([]int, 0, len(seen))
	for pid := range seen {
		out = append(out, pid)
	}
	sort.Ints(out)
	return out
}

// makeCgroupRoot creates root in every hierarchy (the kubelet requires its cgroupRoot to exist),
// with cpuset's cpus and mems copied from the top so tasks can join below it.
func makeCgroupRoot(root string) error {
	for _, h := range cgroupHierarchies() {
		d := filepath.Join(h, root)
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create cgroup %s: %w", d, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				_ = os.WriteFile(filepath.Join(d, f), v, 0o644)
			}
		}
	}
	return nil
}

// removeCgroupRoot kills whatever still runs under root and removes its directories, deepest
// first, in every hierarchy.
func removeCgroupRoot(root string) error {
	for i := 0; i < 50; i++ {
		pids := cgroupPIDs(root)
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var errs []error
	for _, d := range cgroupDirs(root) {
		var dirs []string
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, p := range dirs {
			var err error
			for try := 0; try < 20; try++ {
				if err = syscall.Rmdir(p); err == nil || errors.Is(err, fs.ErrNotExist) {
					err = nil
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", p, err))
			}
		}
	}
	return errors.Join(errs...)
}

// isOurLink reports whether a network interface is the real node's doing: its bridge, or a
// veth that did not exist before it came up.
func isOurLink(name, bridge string, before []string) bool {
	if slices.Contains(before, name) {
		return false
	}
	return name == bridge || strings.HasPrefix(name, "veth")
}
