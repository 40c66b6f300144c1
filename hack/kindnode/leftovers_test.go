package kindnode

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A build killed before its own clean-up can leave debootstrap's /proc and
// /sys mounted in its target: removeTree unmounts them (nested ones too)
// and removes the directory, which os.RemoveAll alone cannot.
func TestRemoveTreeUnmountsWhatIsMountedUnderIt(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounts: needs root")
	}
	dir := filepath.Join(t.TempDir(), "with space")
	for _, sub := range []string{"proc", "sys"} {
		target := filepath.Join(dir, sub)
		if err := os.MkdirAll(target, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("none", target, "tmpfs", 0, ""); err != nil {
			t.Skipf("cannot mount a tmpfs here: %v", err)
		}
		t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })
	}
	nested := filepath.Join(dir, "proc", "nested")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("none", nested, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(nested, "file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := removeTree(dir); err != nil {
		t.Fatalf("removeTree: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is still there (%v)", dir, err)
	}
	if mounts, err := os.ReadFile("/proc/self/mounts"); err != nil || bytes.Contains(mounts, []byte(strings.ReplaceAll(dir, " ", `\040`))) {
		t.Errorf("still mounted under it (%v):\n%s", err, mounts)
	}
}

// What a stopped build left in the cache is removed; the cached tarballs and
// anything else are not.
func TestRemoveLeftoversKeepsTheCache(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("TMPDIR", t.TempDir())
	left := []string{".build-123", ".rootfs-456", "node-v1.36.3-abc.tar.tmp-99", filepath.Join(os.TempDir(), containerdStatePrefix(".build-123")+"789")}
	kept := []string{"node-v1.36.3-abc.tar", "rootfs-bookworm-def.tar", ".lock",
		filepath.Join(os.TempDir(), containerdStatePrefix(".build-running")+"1")} // another cache's build, running
	for _, name := range append(append([]string{}, left...), kept...) {
		path := name
		if !filepath.IsAbs(name) {
			path = filepath.Join(cache, name)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	if err := removeLeftovers(&log, cache); err != nil {
		t.Fatal(err)
	}
	for _, name := range left {
		path := name
		if !filepath.IsAbs(name) {
			path = filepath.Join(cache, name)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s was left (%v)", name, err)
		}
		if !bytes.Contains(log.Bytes(), []byte(path)) {
			t.Errorf("removing %s was not said:\n%s", path, log.String())
		}
	}
	for _, name := range kept {
		path := name
		if !filepath.IsAbs(name) {
			path = filepath.Join(cache, name)
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s was removed: %v", name, err)
		}
	}
}

// The machine's make kind lock tells the bench which make kind runs and its
// cluster, and nothing once it is released.
func TestRunningMakeKindNamesTheHolder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the lock is in /run/lock: needs root")
	}
	release, err := LockMachine("some-cluster")
	if err != nil {
		t.Skipf("a make kind runs here: %v", err)
	}
	pid, cluster, running := RunningMakeKind()
	if !running || pid != strconv.Itoa(os.Getpid()) || cluster != "some-cluster" {
		t.Errorf("RunningMakeKind() = %q, %q, %v with the lock held; want this pid, some-cluster, true", pid, cluster, running)
	}
	if _, err := LockMachine("other"); err == nil {
		t.Error("a second LockMachine got the lock held by the first")
	}
	release()
	if _, _, running := RunningMakeKind(); running {
		t.Error("RunningMakeKind() says a make kind runs after the lock was released")
	}
}

// The packages make kind installs start no service (Debian's docker.io would
// start a dockerd with iptables rules): a policy-rc.d refusing every start
// is there during the install and gone after; the machine's own is kept;
// one a killed make kind left is taken for make kind's and removed.
func TestHoldServices(t *testing.T) {
	machines := []byte("#!/bin/sh\nexit 0\n")
	leftByAKilledRun := []byte("#!/bin/sh\n# " + policyRCMarker + ", so that their services do not start.\nexit 101\n")
	for name, tc := range map[string]struct {
		before    []byte // nil: no policy-rc.d
		keptAfter bool
	}{
		"without a policy-rc.d":                  {},
		"with the machine's own":                 {before: machines, keptAfter: true},
		"with one a killed make kind left there": {before: leftByAKilledRun},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "policy-rc.d")
			old := policyRCPath
			policyRCPath = path
			t.Cleanup(func() { policyRCPath = old })
			if tc.before != nil {
				if err := os.WriteFile(path, tc.before, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			release, err := holdServices(os.Stderr)
			if err != nil {
				t.Fatal(err)
			}
			during, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("no policy-rc.d during the install: %v", err)
			}
			if tc.keptAfter && !bytes.Equal(during, tc.before) {
				t.Errorf("the machine's policy-rc.d was replaced:\n%s", during)
			}
			if !tc.keptAfter && !bytes.Contains(during, []byte("exit 101")) {
				t.Errorf("the policy-rc.d written does not refuse starts (exit 101):\n%s", during)
			}
			release()
			after, err := os.ReadFile(path)
			if tc.keptAfter && !bytes.Equal(after, tc.before) {
				t.Errorf("the machine's policy-rc.d is not as it was after: %q, %v", after, err)
			}
			if !tc.keptAfter && !os.IsNotExist(err) {
				t.Errorf("make kind's policy-rc.d is left after the install: %v", err)
			}
		})
	}
}

// A policy-rc.d a killed make kind left is removed by the next one, even
// when it installs nothing; the machine's own is not.
func TestRemoveHeldServices(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy-rc.d")
	old := policyRCPath
	policyRCPath = path
	t.Cleanup(func() { policyRCPath = old })
	if err := os.WriteFile(path, []byte("#!/bin/sh\nexit 101\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	removeHeldServices(io.Discard)
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the machine's own policy-rc.d was removed: %v", err)
	}
	if err := os.WriteFile(path, []byte("# "+policyRCMarker+"\nexit 101\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	removeHeldServices(io.Discard)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("make kind's policy-rc.d was left: %v", err)
	}
}
