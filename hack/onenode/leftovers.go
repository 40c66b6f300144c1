package onenode

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// CannotRun says why this machine cannot run a node ("" if it can): Start
// would fail on it. Tests use it to skip with that reason.
func CannotRun() string {
	if err := checkHost(); err != nil {
		return err.Error()
	}
	return ""
}

// Leftovers lists what a cluster left on the host: its processes, network
// namespace and veth, mounts, cgroups and directories. After Stop it is empty.
func Leftovers() []string {
	l := defaultLayout()
	var out []string
	for pid, cmdline := range strayProcesses(l) {
		out = append(out, "process "+pid+": "+cmdline)
	}
	for _, path := range []string{netnsPath(), "/sys/class/net/" + hostVeth, l.data, l.runDir} {
		if _, err := os.Stat(path); err == nil {
			out = append(out, path)
		}
	}
	if mounts, err := os.ReadFile("/proc/self/mounts"); err == nil {
		for _, line := range strings.Split(string(mounts), "\n") {
			if f := strings.Fields(line); len(f) > 1 && (strings.HasPrefix(f[1], l.data) || strings.HasPrefix(f[1], l.runDir)) {
				out = append(out, "mount "+f[1])
			}
		}
	}
	cgroups, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	out = append(out, cgroups...)
	return out
}

// strayProcesses are the processes of a cluster of layout l that are still
// running (by process id): the components and shims, whose command lines
// name its directories, and anything else inside its network namespace;
// never this process.
func strayProcesses(l layout) map[string]string {
	netns := namespaceOf(netnsPath())
	self := strconv.Itoa(os.Getpid())
	out := map[string]string{}
	for pid, cmdline := range processes() {
		if pid == self {
			continue
		}
		inNetns := netns != "" && namespaceOf("/proc/"+pid+"/ns/net") == netns
		if inNetns || strings.Contains(cmdline, l.data) || strings.Contains(cmdline, l.runDir) {
			out[pid] = cmdline
		}
	}
	return out
}

// namespaceOf identifies the namespace of a /proc/PID/ns file or of a bind
// mount of one (as `ip netns` makes) by device and inode, "" if there is none.
func namespaceOf(path string) string {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return ""
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}
