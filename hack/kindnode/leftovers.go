package kindnode

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/metawatch/metawatch/hack/onenode"
)

// stoppableCommand is exec.CommandContext for a program that cleans up after
// itself when asked to stop (debootstrap unmounts the /proc and /sys it
// mounted in its target): in a process group of its own, so a terminal's
// Ctrl-C does not reach it before make kind decides; when ctx ends, SIGTERM
// to its group, and SIGKILL only 30 s later.
func stoppableCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
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
	if err := onenode.UnmountUnder(abs); err != nil {
		return err
	}
	return os.RemoveAll(abs)
}

// removeLeftovers removes what a build that was killed before its own
// clean-up left: its work and root file system directories and half-written
// tarballs in cacheDir, and the import's containerd state in the temporary
// directory. Only under lockBuild, so never another build's.
func removeLeftovers(log io.Writer, cacheDir string) error {
	var left []string
	for _, pattern := range []string{
		filepath.Join(cacheDir, ".build-*"), filepath.Join(cacheDir, ".rootfs-*"), filepath.Join(cacheDir, "*.tmp-*"),
		filepath.Join(os.TempDir(), containerdStatePrefix+"*"),
	} {
		matches, _ := filepath.Glob(pattern)
		left = append(left, matches...)
	}
	for _, path := range left {
		fmt.Fprintf(log, "kindnode: removing %s, left by a build that was stopped\n", path)
		if err := removeTree(path); err != nil {
			return fmt.Errorf("removing what a stopped build left: %w", err)
		}
	}
	return nil
}
