package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// lockPath is held by the make kind running on this machine. Two at once
// would share one dockerd (the first to stop would stop it under the
// other's cluster) and kind's network, from any checkout.
const lockPath = "/run/lock/metawatch-make-kind.lock"

// lockMachine takes lockPath, or says which make kind holds it. The kernel
// lets it go when this process ends, however it ends.
func lockMachine() (release func(), err error) {
	if err := os.MkdirAll(filepath.Dir(lockPath), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(lockPath)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("another make kind is running on this machine (pid %s): one at a time, as they would share one dockerd; use its cluster, or stop it (Ctrl-C) first",
				strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("locking %s: %w", lockPath, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}
