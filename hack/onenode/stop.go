package onenode

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Stop deletes the workloads (so the kubelet stops their containers), stops
// every component in reverse start order, then removes what the cluster left
// on the host: mounts, cgroups, the network namespace, its directories.
func (c *Cluster) Stop() error {
	c.say("stopping: deleting the pods, then the components, then removing what they left")
	if c.Config != nil && len(c.processes) > 0 {
		c.deletePods()
	}
	var errs []error
	for i := len(c.processes) - 1; i >= 0; i-- {
		if err := c.processes[i].stop(20 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	c.processes = nil
	if err := c.cleanup(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// deletePods removes the node's pods and what recreates them, and waits (up
// to a minute) for the kubelet to stop their containers: stopping the kubelet
// alone would leave them running. Pods bound to other nodes (the bench's
// simulated ones) have no containers here and go with etcd's data: waiting
// for them would wait for a kubelet that is not there.
func (c *Cluster) deletePods() {
	cfg := rest.CopyConfig(c.Config)
	cfg.WarningHandler = rest.NoWarnings{}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	all := metav1.ListOptions{}
	onNode := metav1.ListOptions{FieldSelector: "spec.nodeName=" + nodeName}
	background := metav1.DeletePropagationBackground
	owners := metav1.DeleteOptions{PropagationPolicy: &background}
	for _, ns := range nss.Items {
		n := ns.Name
		_ = cs.AppsV1().Deployments(n).DeleteCollection(ctx, owners, all)
		_ = cs.AppsV1().ReplicaSets(n).DeleteCollection(ctx, owners, all)
		_ = cs.AppsV1().StatefulSets(n).DeleteCollection(ctx, owners, all)
		_ = cs.AppsV1().DaemonSets(n).DeleteCollection(ctx, owners, all)
		_ = cs.BatchV1().Jobs(n).DeleteCollection(ctx, owners, all)
		grace := int64(5)
		_ = cs.CoreV1().Pods(n).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &grace}, onNode)
	}
	for ctx.Err() == nil {
		pods, err := cs.CoreV1().Pods("").List(ctx, onNode)
		if err != nil || len(pods.Items) == 0 {
			return
		}
		time.Sleep(time.Second)
	}
}

// cleanup removes what a cluster leaves on the host, whether it stopped
// cleanly or was killed: stray container processes, mounts under its data
// directory, the kubelet's cgroups, the network namespace and the directories.
func (c *Cluster) cleanup() error {
	l := c.layout
	killShims(l)
	killStrays(l)
	var errs []error
	if err := UnmountUnder(l.data); err != nil {
		errs = append(errs, err)
	}
	if err := UnmountUnder(l.runDir); err != nil {
		errs = append(errs, err)
	}
	removeCgroups("kubepods")
	if err := deleteNetwork(); err != nil {
		errs = append(errs, err)
	}
	for _, dir := range []string{l.data, l.runDir, "/var/lib/cni/networks/" + netnsName} {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	removeCNIResults()
	for _, dir := range c.hostDirs {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// nodeHostDirs are directories on the host that the kubelet, containerd's
// shims and the CNI plugins create outside the cluster's own directories.
var nodeHostDirs = []string{"/var/lib/kubelet", "/run/containerd", "/var/lib/cni"}

// newHostDirs lists those of nodeHostDirs that do not exist yet: Stop removes
// them; one that existed before belongs to someone else and stays.
func newHostDirs() []string {
	var out []string
	for _, dir := range nodeHostDirs {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			out = append(out, dir)
		}
	}
	return out
}

// killShims kills containerd shims (and with them their containers) started
// for this cluster's containerd, found by its socket in their command line.
func killShims(l layout) {
	for pid, cmdline := range processes() {
		if strings.Contains(cmdline, "containerd-shim") && strings.Contains(cmdline, l.containerdSocket()) {
			_ = exec.Command("kill", "-9", "--", "-"+pid).Run() // its process group: the shim and the container
			_ = exec.Command("kill", "-9", pid).Run()
		}
	}
}

// killStrays kills what is left of a cluster that was not stopped (its
// program was killed): its components still run, and they would hold its
// network namespace, and with it the veth, after the namespace's name is gone.
// It waits (up to ten seconds) for them to be gone.
func killStrays(l layout) {
	for pid := range strayProcesses(l) {
		_ = exec.Command("kill", "-9", pid).Run()
	}
	for deadline := time.Now().Add(10 * time.Second); len(strayProcesses(l)) > 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
}

// processes maps each process id on the host to its command line, arguments
// separated by spaces.
func processes() map[string]string {
	out := map[string]string{}
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			out[filepath.Base(filepath.Dir(p))] = strings.ReplaceAll(string(b), "\x00", " ")
		}
	}
	return out
}

// UnmountUnder lazily unmounts every mount at or below dir, deepest first:
// what a killed node (or node image build) left mounted, before its
// directories are removed.
func UnmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return err
	}
	defer f.Close()
	var mounts []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 {
			continue
		}
		if point := unescapeMountPath(fields[1]); point == dir || strings.HasPrefix(point, dir+"/") {
			mounts = append(mounts, point)
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	var errs []error
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
		}
	}
	return errors.Join(errs...)
}

// unescapeMountPath undoes the octal escapes of /proc/self/mounts (\040 for
// a space).
func unescapeMountPath(s string) string {
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

// removeCgroups removes the kubelet's cgroup tree (children first) from every
// cgroup v1 controller.
func removeCgroups(name string) {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/" + name)
	for _, root := range roots {
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = syscall.Rmdir(dirs[i])
		}
	}
}

// removeCNIResults removes the CNI plugins' cached results for this network.
func removeCNIResults() {
	results, _ := filepath.Glob("/var/lib/cni/results/" + netnsName + "-*")
	for _, r := range results {
		_ = os.Remove(r)
	}
}
