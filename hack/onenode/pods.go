package onenode

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// PodProcess finds the process of a container of pod uid whose command is
// command (argv[0], e.g. "/metawatch"), by the pod's cgroup: the node runs on
// this machine, so its containers are processes here. Tests kill it to
// simulate a crash; the bench reads its CPU time and peak memory.
func PodProcess(uid types.UID, command string) (int, error) {
	// The kubelet's cgroupfs driver names a pod's cgroup pod<uid>; systemd's
	// replaces the dashes with underscores.
	names := []string{string(uid), strings.ReplaceAll(string(uid), "-", "_")}
	cgroups, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	for _, cg := range cgroups {
		b, err := os.ReadFile(cg)
		if err != nil || (!strings.Contains(string(b), names[0]) && !strings.Contains(string(b), names[1])) {
			continue
		}
		dir := filepath.Dir(cg)
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		if argv0, _, _ := strings.Cut(string(cmdline), "\x00"); argv0 == command {
			return strconv.Atoi(filepath.Base(dir))
		}
	}
	return 0, fmt.Errorf("no process %s in pod %s on this machine", command, uid)
}
