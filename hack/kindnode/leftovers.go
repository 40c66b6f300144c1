package kindnode

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/metawatch/metawatch/hack/onenode"
)

// stoppableCommand is exec.CommandContext for a program that cleans up after
// itself when asked to stop (debootstrap unmounts the /proc and /sys it
// mounted in its target): in a process group of its own, so a terminal's
// Ctrl-C does not reach it before make kind decides; when ctx ends, SIGTERM
// to its group, and SIGKILL only 30 s later.
// If make kind itself is killed, so is the program (SIGTERM too): the build
// lock goes with make kind, and the next build removes its directories.
func stoppableCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	return cmd
}

// ChildCommand is exec.CommandContext for a program that must not outlive
// make kind (the import's containerd, kind create cluster): killed with it.
func ChildCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// removeTree removes dir after unmounting whatever is mounted under it: a
// build that was killed may have left debootstrap's /proc and /sys mounted
// in its target, which os.RemoveAll cannot remove and must not walk into.
func removeTree(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	// The mount table names real paths: a cache or TMPDIR behind a link too.
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved
	} else if os.IsNotExist(err) {
		return nil
	}
	if err := onenode.UnmountUnder(abs); err != nil {
		return err
	}
	return os.RemoveAll(abs)
}

// removeLeftovers removes what a build that was killed before its own
// clean-up left: its work and root file system directories and half-written
// tarballs in cacheDir, and its import's containerd state in the temporary
// directory. Only under the cache's build lock, so never another build's.
func removeLeftovers(log io.Writer, cacheDir string) error {
	var left []string
	for _, pattern := range []string{".build-*", ".rootfs-*", "*.tmp-*"} {
		matches, _ := filepath.Glob(filepath.Join(cacheDir, pattern))
		for _, m := range matches {
			if strings.HasPrefix(filepath.Base(m), ".build-") {
				states, _ := filepath.Glob(filepath.Join(os.TempDir(), containerdStatePrefix(m)+"*"))
				left = append(left, states...)
			}
			left = append(left, m)
		}
	}
	for _, path := range left {
		fmt.Fprintf(log, "kindnode: removing %s, left by a build that was stopped\n", path)
		if err := removeTree(path); err != nil {
			return fmt.Errorf("removing what a stopped build left: %w", err)
		}
	}
	return nil
}
