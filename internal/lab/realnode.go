package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	toolswatch "k8s.io/client-go/tools/watch"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/brakebench/brakebench/internal/images"
	"github.com/brakebench/brakebench/internal/kube"
	"github.com/brakebench/brakebench/internal/labbuild"
)

const (
	// RealNodeName is the real node's name.
	RealNodeName = "brakebench-real-0"
	// RealNodeKey labels the real node (value "true") and taints it NoSchedule: only pods that
	// select it and tolerate the taint run there; simulated workloads never do.
	RealNodeKey = kube.RealNodeKey
	// PauseImage is the pod sandbox image; WorkloadImage is the tiny sandbox workload (the same
	// static program, see labbuild.PauseComponent).
	PauseImage    = "brakebench.local/pause:" + labbuild.PauseVersion
	WorkloadImage = images.RealNodeWorkload

	realNodeBridge = "bbr0"
	realNodeSubnet = "10.250.0.0/24"
	realNodeCgroup = "brakebench-lab"
)

// RealNode is the running real node, as saved in the lab's state.
type RealNode struct {
	Name       string            `json:"name"`
	IP         string            `json:"ip"`
	Dir        string            `json:"dir"`
	Socket     string            `json:"socket"`
	CgroupRoot string            `json:"cgroupRoot"`
	Bridge     string            `json:"bridge"`
	Binaries   map[string]string `json:"binaries"`
	Containerd *proc             `json:"containerd,omitempty"`
	Kubelet    *proc             `json:"kubelet,omitempty"`
	Host       hostSnapshot      `json:"host"`
	Images     []string          `json:"images"` // references imported into containerd's k8s.io namespace
	// ReadySeconds is how long the node took from the kubelet's start to Ready.
	ReadySeconds float64 `json:"readySeconds"`
}

func (rn *RealNode) files() realNodeFiles { return realNodeFiles{Dir: rn.Dir} }

// RealNodeTolerations and RealNodeSelector place a pod on the real node.
func RealNodeTolerations() []corev1.Toleration {
	return []corev1.Toleration{{Key: RealNodeKey, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
}

// RealNodeSelector is the node selector of pods meant for the real node.
func RealNodeSelector() map[string]string { return map[string]string{RealNodeKey: "true"} }

// startRealNode brings up containerd and a kubelet joined to the lab, with the pause and workload
// images imported. The host snapshot is saved before anything changes, so Down can revert it.
func (l *Lab) startRealNode(ctx context.Context, s *State, c *kube.Clients) error {
	runc, err := exec.LookPath("runc")
	if err != nil {
		return errors.New("lab.realNode needs runc on PATH (Debian: apt-get install runc); it runs the real node's containers")
	}
	bins, err := l.BuildAddons(ctx, labbuild.RealNodeAddons())
	if err != nil {
		return err
	}
	ip, err := nodeIP()
	if err != nil {
		return err
	}
	rn := &RealNode{
		Name: RealNodeName, IP: ip, Dir: filepath.Join(l.dir, "node"), CgroupRoot: "/" + realNodeCgroup + "-" + l.cfg.Name,
		Bridge: realNodeBridge,
		Binaries: map[string]string{
			"kubelet":    bins["kubelet"].Path("kubelet"),
			"containerd": bins["containerd"].Path("containerd"),
			"ctr":        bins["containerd"].Path("ctr"),
			"runc":       runc,
			"cni":        bins["cni-plugins"].Dir,
			"bbpause":    bins["pause"].Path("bbpause"),
		},
	}
	rn.Socket = rn.files().Socket()
	if err := l.reclaimRealNode(ctx, rn); err != nil {
		return err
	}
	if d := cgroupDirs(rn.CgroupRoot); len(d) > 0 {
		return fmt.Errorf("cgroup %s already exists (%s): another lab's real node, or one not cleaned up; run `brakebench lab down` for it", rn.CgroupRoot, d[0])
	}
	if rn.Host, err = snapshotHost(); err != nil {
		return err
	}
	if slices.Contains(rn.Host.Links, rn.Bridge) {
		return fmt.Errorf("network interface %s already exists: another lab's real node, or one not cleaned up", rn.Bridge)
	}
	s.RealNode = rn
	if err := l.save(s); err != nil { // the revert is known before anything changes
		return err
	}
	if err := l.writeRecord(rn); err != nil { // and found by a later lab up if this run is killed
		return err
	}
	task := l.pr.Task("real node "+rn.Name, 20*time.Second)
	if err := l.bootRealNode(ctx, s, c, rn); err != nil {
		task.Done("FAILED")
		return fmt.Errorf("real node: %w", err)
	}
	task.Done(fmt.Sprintf("Ready after %.1fs", rn.ReadySeconds))
	return l.save(s)
}

func (l *Lab) bootRealNode(ctx context.Context, s *State, c *kube.Clients, rn *RealNode) error {
	f := rn.files()
	for _, d := range []string{f.ContainerdRoot(), f.ContainerdState(), f.CNIConfDir(), f.CNIDataDir(), f.KubeletRoot(), f.PodLogs(), f.Images(), f.Opt()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if err := makeCgroupRoot(rn.CgroupRoot); err != nil {
		return err
	}
	pki := filepath.Join(l.clusterDir(), "pki")
	ca := filepath.Join(pki, "ca.crt")
	cert, key := filepath.Join(rn.Dir, "node.crt"), filepath.Join(rn.Dir, "node.key")
	if err := writeNodeClientCert(ca, filepath.Join(pki, "ca.key"), rn.Name, cert, key, 7*24*time.Hour); err != nil {
		return err
	}
	kc, err := nodeKubeconfig(s.Server, ca, cert, key)
	if err != nil {
		return err
	}
	kport, err := freePort()
	if err != nil {
		return err
	}
	hport, err := freePort()
	if err != nil {
		return err
	}
	kcfg, err := kubeletConfig(f, rn.IP, kport, hport, ca, rn.CgroupRoot, RealNodeKey)
	if err != nil {
		return err
	}
	cni, err := cniConfig(f, rn.Bridge, realNodeSubnet)
	if err != nil {
		return err
	}
	for path, b := range map[string][]byte{
		f.Kubeconfig():       kc,
		f.KubeletConfig():    kcfg,
		f.ContainerdConfig(): []byte(containerdConfig(f, rn.Binaries["runc"], rn.Binaries["cni"], PauseImage)),
		filepath.Join(f.CNIConfDir(), "10-brakebench.conflist"): cni,
	} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return err
		}
	}
	// containerd finds its shim on PATH.
	env := []string{"PATH=" + filepath.Dir(rn.Binaries["containerd"]) + ":" + os.Getenv("PATH")}
	p, _, err := startProc("containerd", rn.Binaries["containerd"], []string{"--config", f.ContainerdConfig()}, env, filepath.Join(l.dir, "logs", "containerd.log"))
	if err != nil {
		return err
	}
	rn.Containerd = p
	if err := l.save(s); err != nil {
		return err
	}
	if err := waitFor(ctx, 30*time.Second, func() bool { return alive(p.PID, p.Binary) }, func() bool {
		_, err := rn.ctr(ctx, "version")
		return err == nil
	}); err != nil {
		return fmt.Errorf("containerd not answering on %s: %w\n%s", rn.Socket, err, tailFile(p.Log, 2000))
	}
	for _, spec := range []images.Spec{
		{Ref: PauseImage, Files: map[string]string{"/bbpause": rn.Binaries["bbpause"]}},
		{Ref: WorkloadImage, Files: map[string]string{"/bbpause": rn.Binaries["bbpause"]}},
	} {
		if err := rn.ImportImage(ctx, spec); err != nil {
			return err
		}
	}
	args := []string{
		"--config=" + f.KubeletConfig(), "--kubeconfig=" + f.Kubeconfig(), "--root-dir=" + f.KubeletRoot(),
		"--hostname-override=" + rn.Name, "--node-ip=" + rn.IP, "--node-labels=" + RealNodeKey + "=true", "--v=1",
	}
	start := time.Now()
	kp, _, err := startProc("kubelet", rn.Binaries["kubelet"], args, nil, filepath.Join(l.dir, "logs", "kubelet.log"))
	if err != nil {
		return err
	}
	rn.Kubelet = kp
	if err := l.save(s); err != nil {
		return err
	}
	if err := waitNodeReady(ctx, c, rn.Name, l.cfg.UpTimeout, func() bool { return alive(kp.PID, kp.Binary) }); err != nil {
		return fmt.Errorf("%w\nkubelet log (%s):\n%s", err, kp.Log, tailFile(kp.Log, 3000))
	}
	rn.ReadySeconds = time.Since(start).Seconds()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, kube.ManagedByKey, kube.ManagedByValue)
	if _, err := c.Typed.CoreV1().Nodes().Patch(ctx, rn.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label node %s: %w", rn.Name, err)
	}
	return nil
}

// ImportImage writes spec as an image tarball and imports it into the node's containerd
// (namespace k8s.io, where the CRI looks), unpacked for the CRI's snapshotter.
func (rn *RealNode) ImportImage(ctx context.Context, spec images.Spec) error {
	file := filepath.Join(rn.files().Images(), strings.NewReplacer("/", "_", ":", "_").Replace(spec.Ref)+".tar")
	if err := images.Write(spec, file); err != nil {
		return err
	}
	if out, err := rn.ctr(ctx, "-n", "k8s.io", "images", "import", "--platform", "linux/amd64", "--snapshotter", "overlayfs", file); err != nil {
		return fmt.Errorf("import image %s: %w: %s", spec.Ref, err, tail(out, 1000))
	}
	if !slices.Contains(rn.Images, spec.Ref) {
		rn.Images = append(rn.Images, spec.Ref)
	}
	_ = os.Remove(file) // containerd holds the content now
	return nil
}

func (rn *RealNode) ctr(ctx context.Context, args ...string) ([]byte, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return exec.CommandContext(cctx, rn.Binaries["ctr"], append([]string{"--address", rn.Socket}, args...)...).CombinedOutput()
}

// nodeIP is this machine's first global IPv4 address: the kubelet serves there and the
// apiserver reaches it there (a node IP cannot be loopback).
func nodeIP() (string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
				return n.IP.String(), nil
			}
		}
	}
	return "", errors.New("the real node needs an IPv4 address on a non-loopback interface; found none")
}

func waitFor(ctx context.Context, timeout time.Duration, stillAlive, ok func() bool) error {
	deadline := time.Now().Add(timeout)
	for !ok() {
		if !stillAlive() {
			return errors.New("process exited")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// waitNodeReady waits, on a watch, until node name reports Ready.
func waitNodeReady(ctx context.Context, c *kube.Clients, name string, timeout time.Duration, stillAlive func() bool) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	go func() { // a kubelet that dies ends the wait at once
		for wctx.Err() == nil {
			if !stillAlive() {
				cancel()
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
	}()
	lw := cache.NewListWatchFromClient(c.Typed.CoreV1().RESTClient(), "nodes", "", fields.OneTermEqualSelector("metadata.name", name))
	_, err := toolswatch.UntilWithSync(wctx, lw, &corev1.Node{}, nil, func(ev watch.Event) (bool, error) {
		n, ok := ev.Object.(*corev1.Node)
		if !ok {
			return false, nil
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		if !stillAlive() {
			return fmt.Errorf("kubelet exited before node %s was Ready", name)
		}
		return fmt.Errorf("node %s not Ready within %s: %w", name, timeout, err)
	}
	return nil
}

// stopRealNode takes the real node down and puts the host back as it was: pods drained through
// the kubelet, then every pod sandbox stopped and removed through the CRI (network torn down),
// kubelet and containerd stopped, whatever is left in the node's cgroups killed, its mounts,
// cgroups, bridge and iptables rules removed, sysctls restored, and host paths it created removed.
// Safe on a node that is half up or whose brakebench was killed.
func (l *Lab) stopRealNode(ctx context.Context, s *State) error {
	rn := s.RealNode
	if rn == nil {
		return nil
	}
	var errs []error
	if rn.Kubelet != nil && alive(rn.Kubelet.PID, rn.Kubelet.Binary) {
		if c, err := s.clients(); err == nil {
			if err := drainNode(ctx, c, rn.Name, 30*time.Second); err != nil {
				l.pr.Printf("real node: drain through the kubelet did not finish (%v); removing pods through the CRI", err)
			}
		}
		if err := stopPID(rn.Kubelet.PID, rn.Kubelet.Binary, 10*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if rn.Containerd != nil && alive(rn.Containerd.PID, rn.Containerd.Binary) {
		if err := removeSandboxes(ctx, rn.Socket); err != nil {
			errs = append(errs, fmt.Errorf("remove pod sandboxes: %w", err))
		}
		if err := stopPID(rn.Containerd.PID, rn.Containerd.Binary, 10*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	for _, pid := range processesMentioning(rn.Dir) { // shims
		if err := stopPID(pid, "", 5*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if err := removeCgroupRoot(rn.CgroupRoot); err != nil {
		errs = append(errs, err)
	}
	if err := unmountAll(rn.Host.ownedMountRoots(rn.Dir)...); err != nil {
		errs = append(errs, err)
	}
	if links, err := linkNames(); err == nil {
		for _, n := range links {
			if isOurLink(n, rn.Bridge, rn.Host.Links) {
				if out, err := exec.Command("ip", "link", "delete", n).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("ip link delete %s: %w: %s", n, err, strings.TrimSpace(string(out))))
				}
			}
		}
	}
	for tool, before := range rn.Host.IPTables {
		now, err := iptablesRules(tool)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := revertIPTables(tool, addedIPTables(before, now, rn.Bridge)); err != nil {
			errs = append(errs, err)
		}
	}
	for k, v := range rn.Host.Sysctls {
		if err := os.WriteFile(filepath.Join("/proc/sys", k), []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore sysctl %s=%s: %w", strings.ReplaceAll(k, "/", "."), v, err))
		}
	}
	for _, p := range rn.Host.Absent {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		}
	}
	if c, err := s.clients(); err == nil {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := c.Typed.CoreV1().Nodes().Delete(cctx, rn.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) && cctx.Err() == nil {
			l.pr.Printf("real node: delete Node %s: %v", rn.Name, err)
		}
		cancel()
	}
	if err := os.RemoveAll(rn.Dir); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		if err := l.removeRecord(rn); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// drainNode deletes every pod bound to node (with a short grace, so the kubelet stops each one and
// tears its network down before the pod object goes) and waits until none is left.
func drainNode(ctx context.Context, c *kube.Clients, node string, timeout time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sel := fields.OneTermEqualSelector("spec.nodeName", node).String()
	pods, err := c.Typed.CoreV1().Pods("").List(wctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return err
	}
	grace := int64(1)
	for _, p := range pods.Items {
		if err := c.Typed.CoreV1().Pods(p.Namespace).Delete(wctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return waitNoPods(wctx, c, "", sel, "")
}

// waitNoPods waits, on a watch, until no pod in namespace matches the field and label selectors.
func waitNoPods(ctx context.Context, c *kube.Clients, namespace, fieldSel, labelSel string) error {
	pods := c.Typed.CoreV1().Pods(namespace)
	left := 0
	err := kube.UntilList(ctx,
		func(ctx context.Context) (runtime.Object, error) {
			return pods.List(ctx, metav1.ListOptions{FieldSelector: fieldSel, LabelSelector: labelSel})
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector, o.LabelSelector = fieldSel, labelSel
			return pods.Watch(ctx, o)
		},
		func(obj runtime.Object) bool {
			left = len(obj.(*corev1.PodList).Items)
			return left == 0
		})
	if err != nil {
		return fmt.Errorf("%d pods still there (%s %s): %w", left, fieldSel, labelSel, err)
	}
	return nil
}

// removeSandboxes stops and removes every pod sandbox through containerd's CRI: the runtime then
// deletes the pods' containers, tears down their network (CNI DEL) and unmounts what it mounted.
func removeSandboxes(ctx context.Context, socket string) error {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	rs := runtimeapi.NewRuntimeServiceClient(conn)
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	list, err := rs.ListPodSandbox(cctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return err
	}
	var errs []error
	for _, sb := range list.Items {
		if _, err := rs.StopPodSandbox(cctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("stop sandbox %s: %w", sb.Id, err))
			continue
		}
		if _, err := rs.RemovePodSandbox(cctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("remove sandbox %s: %w", sb.Id, err))
		}
	}
	return errors.Join(errs...)
}

// Leftovers lists what of the real node is still on the host: processes (its own and any in its
// cgroups), mounts, cgroups, network interfaces, iptables rules, host paths it created, and
// sysctls not back at their old values. Empty after a clean Down.
func (rn *RealNode) Leftovers() []string {
	var out []string
	for _, pid := range processesMentioning(rn.Dir) {
		out = append(out, fmt.Sprintf("process %d (%s)", pid, cmdline(pid)))
	}
	for _, pid := range cgroupPIDs(rn.CgroupRoot) {
		out = append(out, fmt.Sprintf("process %d in cgroup %s (%s)", pid, rn.CgroupRoot, cmdline(pid)))
	}
	for _, m := range mountsUnder(rn.Host.ownedMountRoots(rn.Dir)...) {
		out = append(out, "mount "+m)
	}
	for _, d := range cgroupDirs(rn.CgroupRoot) {
		out = append(out, "cgroup "+d)
	}
	if links, err := linkNames(); err == nil {
		for _, n := range links {
			if isOurLink(n, rn.Bridge, rn.Host.Links) {
				out = append(out, "network interface "+n)
			}
		}
	}
	for tool, before := range rn.Host.IPTables {
		now, _ := iptablesRules(tool)
		for _, r := range addedIPTables(before, now, rn.Bridge) {
			out = append(out, tool+" "+r)
		}
	}
	for k, v := range rn.Host.Sysctls {
		if raw, err := os.ReadFile(filepath.Join("/proc/sys", k)); err == nil && strings.TrimSpace(string(raw)) != v {
			out = append(out, fmt.Sprintf("sysctl %s=%s (was %s)", strings.ReplaceAll(k, "/", "."), strings.TrimSpace(string(raw)), v))
		}
	}
	for _, p := range rn.Host.Absent {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, "path "+p)
		}
	}
	if _, err := os.Stat(rn.Dir); err == nil {
		out = append(out, "path "+rn.Dir)
	}
	return out
}

func cmdline(pid int) string {
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(strings.ReplaceAll(string(raw), "\x00", " "))
}
