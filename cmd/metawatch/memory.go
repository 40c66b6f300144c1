package main

import (
	"os"
	"runtime"
	"runtime/debug"

	"github.com/metawatch/metawatch/pkg/memlimit"
)

// applyMemoryLimit sets the Go runtime's soft memory limit from
// --container-memory-limit, and says what the GC is paced by.
func applyMemoryLimit(containerLimit string) error {
	limit, err := memlimit.FromContainer(containerLimit, os.Getenv("GOMEMLIMIT"))
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
