package main

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/metawatch/metawatch/bench/report"
	"github.com/metawatch/metawatch/bench/target"
)

// describeMachine is the report's account of where it was measured.
func describeMachine(cfg *rest.Config, cluster *target.Cluster) report.Machine {
	version := "unknown"
	if dc, err := discovery.NewDiscoveryClientForConfig(cfg); err == nil {
		if v, err := dc.ServerVersion(); err == nil {
			version = v.GitVersion
		}
	}
	return report.Machine{
		Date: time.Now().UTC().Format("2006-01-02"), OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(),
		CPU: cpuModel(), MemoryBytes: memTotal(), GoVersion: runtime.Version(),
		KubernetesVersion: version, Target: cluster.Description,
	}
}

// cpuModel is /proc/cpuinfo's model name, "" where there is none.
func cpuModel() string {
	return procField("/proc/cpuinfo", "model name")
}

// memTotal is /proc/meminfo's MemTotal in bytes, 0 where there is none.
func memTotal() int64 {
	kb, _ := strconv.ParseInt(strings.TrimSuffix(procField("/proc/meminfo", "MemTotal"), " kB"), 10, 64)
	return kb << 10
}

func procField(path, name string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if key, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(key) == name {
			return strings.TrimSpace(value)
		}
	}
	return ""
}
