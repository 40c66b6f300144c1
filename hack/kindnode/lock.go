package kindnode

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// machineLockPath is held by the make kind running on this machine, with its
// pid and cluster written in it. Two at once would share one dockerd (the
// first to stop would stop it under the other's cluster) and kind's network,
// from any checkout.
const machineLockPath = "/run/lock/metawatch-make-kind.lock"

// LockMachine takes the machine's make kind lock for cluster, or says which
// make kind holds it. The kernel lets it go when this process ends, however
// it ends.
func LockMachine(cluster string) (release func(), err error) {
	f, err := openLockFile(machineLockPath)
	if err != nil {
		return nil, err
	}
	// A few tries: the bench's RunningMakeKind holds it shared for an instant.
	for try := 0; try < 5; try++ {
		if err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		holder, _ := os.ReadFile(machineLockPath)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			pid, name := parseHolder(string(holder))
			return nil, fmt.Errorf("another make kind is running on this machine (pid %s, cluster %s): one at a time, as they would share one dockerd; use its cluster, or stop it (Ctrl-C) first", pid, name)
		}
		return nil, fmt.Errorf("locking %s: %w", machineLockPath, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = fmt.Fprintf(f, "%d %s\n", os.Getpid(), cluster)
	}
	return func() { f.Close() }, nil
}

// RunningMakeKind reports the pid and cluster of the make kind running on
// this machine, if one is.
func RunningMakeKind() (pid, cluster string, running bool) {
	f, err := os.Open(machineLockPath)
	if err != nil {
		return "", "", false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err == nil {
		return "", "", false // nobody holds it
	}
	holder, _ := os.ReadFile(machineLockPath)
	pid, cluster = parseHolder(string(holder))
	return pid, cluster, true
}

func parseHolder(s string) (pid, cluster string) {
	pid, cluster, _ = strings.Cut(strings.TrimSpace(s), " ")
	if cluster == "" {
		cluster = "unknown"
	}
	return pid, cluster
}

func openLockFile(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
}
