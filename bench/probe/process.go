package probe

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// HeapAfterGC is the process's memory statistics after two full collections
// (the second frees what finalizers released in the first).
func HeapAfterGC() runtime.MemStats {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// SettledHeap is the lowest HeapAfterGC of samples taken a second apart: what
// the process holds, not what a piece of work still in progress holds for a
// moment. A controller whose map function deep-copies a whole namespace's
// pods when a Namespace event arrives (the typed variant's) can be in the
// middle of one when a single sample is taken, which made the typed
// variant's retained heap per pod grow with the number of pods (issue #14).
func SettledHeap(samples int) runtime.MemStats {
	lowest := HeapAfterGC()
	for range samples - 1 {
		time.Sleep(time.Second)
		if m := HeapAfterGC(); m.HeapAlloc < lowest.HeapAlloc {
			lowest = m
		}
	}
	return lowest
}

// PeakRSS is the process's high-water resident set (VmHWM), 0 where /proc is not.
func PeakRSS() int64 { return PeakRSSOf("self") }

// PeakRSSOf is PeakRSS of process pid ("self" for this one).
func PeakRSSOf(pid string) int64 { return statusBytes(pid, "VmHWM:") }

// RSS is the process's resident set now (VmRSS), 0 where /proc is not.
func RSS() int64 { return RSSOf("self") }

// RSSOf is RSS of process pid ("self" for this one).
func RSSOf(pid string) int64 { return statusBytes(pid, "VmRSS:") }

// statusBytes is the field of /proc/PID/status that starts with key, in
// bytes (the kernel gives kB), 0 if it cannot be read.
func statusBytes(pid, key string) int64 {
	data, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// CPUSeconds is the process's user and system CPU time so far.
func CPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// CPUSecondsOf is the user and system CPU time so far of process pid on this
// machine (a container's, the kubelet's node being this machine), from
// /proc/PID/stat, 0 if it cannot be read.
func CPUSecondsOf(pid string) float64 {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	// The command (field 2) is in parentheses and may hold spaces: count from after it.
	_, rest, _ := strings.Cut(string(data), ") ")
	fields := strings.Fields(rest)
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / clockTicksPerSecond
}

// clockTicksPerSecond is USER_HZ, 100 on Linux on every architecture Go supports.
const clockTicksPerSecond = 100

// NewestPIDOf is the pid of the most recently started process whose command
// name is comm ("" if none): the local control plane's kube-apiserver or
// etcd, whose pids envtest does not give out.
func NewestPIDOf(comm string) string {
	newest, newestStart := "", int64(-1)
	for _, pid := range pidsOf(comm) {
		if start := startTicks(pid); start > newestStart {
			newest, newestStart = pid, start
		}
	}
	return newest
}

// pidsOf are the pids of the processes whose command name is comm.
func pidsOf(comm string) []string {
	entries, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if name, err := os.ReadFile("/proc/" + e.Name() + "/comm"); err == nil && strings.TrimSpace(string(name)) == comm {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// startTicks is field 22 of /proc/PID/stat, when the process started.
func startTicks(pid string) int64 {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return -1
	}
	// The command name (field 2) may hold spaces; the fields after it do not.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(fields) < 20 {
		return -1
	}
	start, _ := strconv.ParseInt(fields[19], 10, 64)
	return start
}

// PIDServing is the pid of the process whose command name is comm and whose
// command line has --secure-port=port: the local control plane's
// kube-apiserver, told apart from other API servers on this machine (those
// of tests running beside the bench) by the port it serves. "" if none.
func PIDServing(comm, port string) string {
	for _, pid := range pidsOf(comm) {
		cmdline, err := os.ReadFile("/proc/" + pid + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		for i, arg := range args {
			if arg == "--secure-port="+port || arg == "--secure-port" && i+1 < len(args) && args[i+1] == port {
				return pid
			}
		}
	}
	return ""
}

// ResetPeakRSS sets process pid's high-water mark (VmHWM) back to its
// resident set now (proc(5), /proc/PID/clear_refs "5"), so that PeakRSSOf
// then gives the peak since: the process's own, or root's.
func ResetPeakRSS(pid string) error {
	return os.WriteFile("/proc/"+pid+"/clear_refs", []byte("5"), 0)
}
