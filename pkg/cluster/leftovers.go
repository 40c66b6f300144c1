package cluster

import (
	"os"
	"path/filepath"
	"strings"
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
	for pid, cmdline := range processes() {
		if strings.Contains(cmdline, l.data) || strings.Contains(cmdline, l.runDir) {
			out = append(out, "process "+pid+": "+cmdline)
		}
	}
	for _, path := range []string{"/run/netns/" + netnsName, "/sys/class/net/mwc-host", l.data, l.runDir} {
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
