package lab

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a process the lab started itself (the kwokctl components are kwokctl's).
type proc struct {
	Name   string   `json:"name"`
	PID    int      `json:"pid"`
	Binary string   `json:"binary"`
	Args   []string `json:"args"`
	Log    string   `json:"log"`
}

// startProc starts binary detached from the terminal's process group (Ctrl-C reaches brakebench,
// which then stops it in order), with output in logPath.
func startProc(name, binary string, args, env []string, logPath string) (*proc, *exec.Cmd, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, nil, err
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	defer logf.Close()
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { _ = cmd.Wait() }() // reap it if it exits while we run
	return &proc{Name: name, PID: cmd.Process.Pid, Binary: binary, Args: args, Log: logPath}, cmd, nil
}

// alive reports whether pid is running and is still binary (not a recycled pid).
func alive(pid int, binary string) bool {
	if pid <= 0 {
		return false
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return false
	}
	// a zombie is not alive
	if f, err := procStat(pid); err == nil && len(f) > 0 && f[0] == "Z" {
		return false
	}
	exe = strings.TrimSuffix(exe, " (deleted)")
	if binary == "" {
		return true
	}
	want, _ := filepath.EvalSymlinks(binary)
	return exe == binary || exe == want
}

// stopPID sends SIGTERM, waits up to grace, then SIGKILL; it only signals pids running binary.
func stopPID(pid int, binary string, grace time.Duration) error {
	if !alive(pid, binary) {
		return nil
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	_ = p.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !alive(pid, binary) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = p.Signal(syscall.SIGKILL)
	for i := 0; i < 100; i++ {
		if !alive(pid, binary) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("process %d (%s) did not exit", pid, filepath.Base(binary))
}

// freePort returns an unused loopback port for a lab process to listen on, below the kernel's
// ephemeral range when it can: a port the kernel hands out for bind(:0) comes from the range it
// also picks outgoing connections' source ports from, so between this check and the process's
// own bind a busy client (the harness's watches, the controller's connections) may take it. On
// 2026-12-03 a restarted controller died with "bind: address already in use" on such a port.
func freePort() (int, error) {
	lo, _ := ephemeralRange()
	if lo > 1024+portSpan {
		for i := 0; i < 50; i++ {
			p := lo - 1 - rand.IntN(portSpan)
			if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
				_ = l.Close()
				return p, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// portSpan is how many ports below the ephemeral range freePort picks from.
const portSpan = 8000

// ephemeralRange is the kernel's range of ports for outgoing connections (Linux's
// net.ipv4.ip_local_port_range; 0, 0 where it cannot be read).
func ephemeralRange() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return 0, 0
	}
	return lo, hi
}

// procStat is /proc/PID/stat's fields after the command name, from field 3 (state) on: the
// command name sits in parentheses and may itself hold spaces and parentheses, so the fields
// start after the last ')'.
func procStat(pid int) ([]string, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	return strings.Fields(string(stat[i+1:])), nil
}

// readPID reads a pid file; a missing file is pid 0.
func readPID(path string) int {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	return n
}

var errNotUp = errors.New("lab is not up")

// processesMentioning lists running processes whose command line mentions s (a lab's state dir:
// every component the lab runs is given paths inside it).
func processesMentioning(s string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil || s == "" {
		return nil
	}
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(raw), s) && alive(pid, "") {
			out = append(out, pid)
		}
	}
	return out
}
