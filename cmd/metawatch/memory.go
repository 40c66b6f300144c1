package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"

	"k8s.io/apimachinery/pkg/api/resource"
)

// memoryLimitShare is the part of the container's memory limit the Go
// runtime's soft limit is set to. The rest is for what the runtime does not
// count against it (the kernel's share of thread stacks and sockets, memory
// freed but not yet returned): with the whole limit, the GC would work hard
// only once the container is as good as OOM-killed.
const memoryLimitShare = 0.9

// goMemoryLimit is the soft memory limit (bytes) --container-memory-limit
// asks for, or 0 for none: the flag is empty, or GOMEMLIMIT is set (the
// runtime honours that itself, and an operator who set it meant it).
func goMemoryLimit(containerLimit, gomemlimit string) (int64, error) {
	if containerLimit == "" || gomemlimit != "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(containerLimit)
	if err != nil || q.Sign() <= 0 {
		return 0, fmt.Errorf("--container-memory-limit=%q: want the container's memory limit in bytes or as a quantity such as 1Gi (the chart sets it from resources.limits.memory), or nothing for no GC memory limit", containerLimit)
	}
	return int64(float64(q.Value()) * memoryLimitShare), nil
}

// applyMemoryLimit sets the Go runtime's soft memory limit from
// --container-memory-limit, and says what the GC is paced by.
func applyMemoryLimit(containerLimit string) error {
	limit, err := goMemoryLimit(containerLimit, os.Getenv("GOMEMLIMIT"))
	if err != nil {
		return err
	}
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	current := debug.SetMemoryLimit(-1) // -1 reads it
	setupLog.Info("runtime: the GC paced by GOGC and a soft memory limit near the container's, GOMAXPROCS Ps", "goMemoryLimitBytes", current,
		"containerMemoryLimit", containerLimit, "GOMEMLIMIT", os.Getenv("GOMEMLIMIT"), "GOGC", os.Getenv("GOGC"), "GOMAXPROCS", runtime.GOMAXPROCS(0))
	return nil
}
