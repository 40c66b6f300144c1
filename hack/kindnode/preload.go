package kindnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// preloadImages imports the images of archive into the containerd store of
// the node's root file system, as kind's builder does in its build container
// (`ctr -n k8s.io images import --all-platforms --no-unpack --digests`): this
// machine's containerd, Debian's like the node's, runs on that store for the
// import, with its own socket and state and no CRI plugin. The node's
// kubelet finds every image present and pulls nothing.
func preloadImages(ctx context.Context, root, archive string) (err error) {
	// Named after the build's work directory, so that what a killed build
	// left is found with it (removeLeftovers); in the temporary directory,
	// where the socket's path stays short.
	state, err := os.MkdirTemp("", containerdStatePrefix(filepath.Dir(root)))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, removeTree(state)) }()
	socket := filepath.Join(state, "containerd.sock")
	config := filepath.Join(state, "config.toml")
	if err := os.WriteFile(config, []byte("version = 2\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n"), 0o644); err != nil {
		return err
	}
	daemon := ChildCommand(ctx, "containerd", "--config", config, "--root", filepath.Join(root, "var/lib/containerd"),
		"--state", filepath.Join(state, "run"), "--address", socket)
	logFile, err := os.Create(filepath.Join(state, "containerd.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	daemon.Stdout, daemon.Stderr = logFile, logFile
	if err := daemon.Start(); err != nil {
		return fmt.Errorf("starting containerd (Debian's containerd package) to import the node's images: %w", err)
	}
	defer func() {
		_ = daemon.Process.Signal(os.Interrupt)
		_ = daemon.Wait()
	}()
	ctr := func(args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, "ctr", append([]string{"--address", socket, "--namespace", "k8s.io"}, args...)...)
	}
	for deadline := time.Now().Add(30 * time.Second); ctr("version").Run() != nil; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile.Name())
			return fmt.Errorf("containerd did not answer on %s within 30s:\n%s", socket, tailOf(string(log), 2000))
		}
	}
	if b, err := ctr("images", "import", "--all-platforms", "--no-unpack", "--digests", archive).CombinedOutput(); err != nil {
		return fmt.Errorf("importing the node's images: %w\n%s", err, b)
	}
	return nil
}

// containerdStatePrefix names the state directories of the import's
// containerd for the build whose work directory is work.
func containerdStatePrefix(work string) string {
	return "kindnode-containerd-" + filepath.Base(work) + "-"
}
