package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"

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
	listGCPercent := "as GOGC says"     // memlimit.ProcessLists is nil
	if memlimit.ProcessLists != nil {
		listGCPercent = strconv.Itoa(memlimit.ListGCPercent)
	}
	setupLog.Info("runtime: the GC paced by GOGC (lower while lists stream in) and a soft memory limit near the container's, GOMAXPROCS Ps", "goMemoryLimitBytes", current,
		"containerMemoryLimit", containerLimit, "GOMEMLIMIT", os.Getenv("GOMEMLIMIT"), "GOGC", os.Getenv("GOGC"), "listGCPercent", listGCPercent, "GOMAXPROCS", runtime.GOMAXPROCS(0))
	return nil
}
