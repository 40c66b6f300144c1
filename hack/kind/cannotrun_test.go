package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/metawatch/metawatch/hack/kindnode"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// Where make kind cannot run, it says why and what to do, exits non-zero,
// and has started or made nothing: run by a user who is not root, on a
// machine whose /sys/fs/cgroup holds no cgroup file system (a mount
// namespace of the test's own, with an empty tmpfs there), with a
// configuration file that is not there, while another make kind runs (they
// would share one dockerd), given a Kubernetes release it cannot build, or
// given a flag it does not have.
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
	config, err := filepath.Abs(filepath.Join(repoRoot, "bench", "kind-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	asRoot := func(args ...string) func() *exec.Cmd {
		return func() *exec.Cmd { return exec.Command(bin, args...) }
	}
	for name, tc := range map[string]struct {
		command  func() *exec.Cmd
		rootOnly bool // needs root to set up
		locked   bool // while another make kind holds the machine's lock
		exitCode int
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
			exitCode: 1, want: []string{"kind needs root", "sudo make kind"},
		},
		"without cgroups": {
			command: func() *exec.Cmd {
				return exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
					"mount -t tmpfs none /sys/fs/cgroup && exec "+bin)
			},
			rootOnly: true, exitCode: 1, want: []string{"kind needs cgroups", "/sys/fs/cgroup"},
		},
		"with a configuration file that is not there": {
			command:  asRoot("--config", "no-such-config.yaml"),
			rootOnly: true, exitCode: 1, want: []string{"--config", "no-such-config.yaml", "bench/kind-config.yaml"},
		},
		"while another make kind runs": {
			command:  asRoot("--config", config),
			rootOnly: true, locked: true, exitCode: 1, want: []string{"another make kind is running", "pid " + strconv.Itoa(os.Getpid()), "cluster the-holder"},
		},
		"with a Kubernetes release that is not one": {
			command:  asRoot("--kubernetes", "1.35"),
			exitCode: 2, want: []string{"--kubernetes", `"1.35" is not a Kubernetes release`, "v1.<minor>.<patch>"},
		},
		"with a Kubernetes release older than the oldest tested": {
			command:  asRoot("--kubernetes", "v1.33.9"),
			exitCode: 2, want: []string{"--kubernetes", "older than the oldest minor", "pick v1.34 or newer"},
		},
		"with another Kubernetes release, which it starts again with": {
			command:  asRoot("--kubernetes", "v1.35.4", "--config", "no-such-config.yaml"),
			rootOnly: true, exitCode: 1, want: []string{"kind: Kubernetes v1.35.4,", "--config", "no-such-config.yaml"},
		},
		"with a flag it does not have (an imported package's)": {
			command:  asRoot("--kubeconfig", "x"),
			exitCode: 2, want: []string{"flag provided but not defined: -kubeconfig", "-name"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.rootOnly && os.Geteuid() != 0 {
				t.Skip("needs root to get past the root check")
			}
			if tc.locked {
				release, err := kindnode.LockMachine("the-holder")
				if err != nil {
					t.Skipf("a make kind is running here: %v", err)
				}
				defer release()
			}
			cmd := tc.command()
			cmd.Dir = workDir(t)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != tc.exitCode {
				t.Fatalf("make kind's command ended with %v, not exit status %d:\n%s", err, tc.exitCode, out)
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
