package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// Where kind cannot run, make kind says why and what to do, exits 1, and
// has started nothing: run by a user who is not root, and on a machine
// whose /sys/fs/cgroup holds no cgroup file system (a mount namespace of the
// test's own, with an empty tmpfs there).
func TestMakeKindSaysWhyItCannotRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds make kind's command: not under go test -short")
	}
	bin, remove, err := testkit.Build(".", "metawatch-kind")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil { // for the user who is not root
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		command  func() *exec.Cmd
		rootOnly bool // needs root to set up
		want     []string
	}{
		"as a user who is not root": {
			command: func() *exec.Cmd {
				cmd := exec.Command(bin)
				if os.Geteuid() == 0 {
					cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
				}
				return cmd
			},
			want: []string{"kind needs root", "sudo make kind"},
		},
		"without cgroups": {
			command: func() *exec.Cmd {
				return exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
					"mount -t tmpfs none /sys/fs/cgroup && exec "+bin)
			},
			rootOnly: true,
			want:     []string{"kind needs cgroups", "/sys/fs/cgroup"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.rootOnly && os.Geteuid() != 0 {
				t.Skip("hiding the cgroups needs root")
			}
			cmd := tc.command()
			cmd.Dir = workDir(t)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("make kind's command ended with %v, not exit status 1:\n%s", err, out)
			}
			for _, want := range tc.want {
				if !strings.Contains(string(out), want) {
					t.Errorf("its message does not say %q:\n%s", want, out)
				}
			}
			if entries, _ := os.ReadDir(cmd.Dir); len(entries) > 0 {
				t.Errorf("it made %s before saying it cannot run", entries[0].Name())
			}
		})
	}
}

// workDir is an empty directory that a user who is not root may work in
// (t.TempDir's parent is root's alone).
func workDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "metawatch-kind-cannot-run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}
