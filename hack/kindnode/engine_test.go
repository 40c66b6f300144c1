package kindnode

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A dockerd started as make kind starts it, in a network namespace of its
// own whose forwarding is off, leaves forwarding off and the firewall empty,
// through its start and a bridge network such as kind's: in the host's
// namespace, make cluster's node reaches its API server through them.
func TestTheEngineLeavesTheNetworkNamespaceAsItWas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts dockerd: not under go test -short")
	}
	if err := CanRun(); err != nil {
		t.Skip(err)
	}
	// As make kind installs them on a new machine (this test is make kind-test's).
	if err := EnsurePackages(t.Context(), os.Stderr, map[string]string{"dockerd": "docker.io", "docker": "docker.io", "iptables-save": "iptables"}); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"unshare", "nsenter"} {
		if _, err := exec.LookPath(cmd); err != nil {
			t.Skipf("no %s here (util-linux's)", cmd)
		}
	}
	dir := t.TempDir()
	socket := "unix://" + filepath.Join(dir, "docker.sock")
	script := "echo 0 > /proc/sys/net/ipv4/ip_forward && exec dockerd " + strings.Join(dockerdNetworkArgs(), " ") +
		" --data-root " + filepath.Join(dir, "data") + " --exec-root " + filepath.Join(dir, "exec") +
		" --pidfile " + filepath.Join(dir, "dockerd.pid") + " -H " + socket
	daemon := exec.Command("unshare", "--net", "sh", "-c", script)
	logFile, err := os.Create(filepath.Join(dir, "dockerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	daemon.Stdout, daemon.Stderr = logFile, logFile
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = daemon.Process.Signal(os.Interrupt)
		_ = daemon.Wait()
	})
	docker := func(args ...string) {
		t.Helper()
		out, err := exec.Command("docker", append([]string{"-H", socket}, args...)...).CombinedOutput()
		if err != nil {
			log, _ := os.ReadFile(logFile.Name())
			t.Fatalf("docker %s: %v\n%s\ndockerd's log:\n%s", strings.Join(args, " "), err, out, log)
		}
	}
	inNamespace := func(command ...string) string {
		t.Helper()
		out, err := exec.Command("nsenter", append([]string{"-t", strconv.Itoa(daemon.Process.Pid), "-n"}, command...)...).Output()
		if err != nil {
			t.Fatalf("%s in dockerd's network namespace: %v", strings.Join(command, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	waitForEngine(t, func() bool { return exec.Command("docker", "-H", socket, "info").Run() == nil })
	docker("network", "create", "kind")
	if got := inNamespace("cat", "/proc/sys/net/ipv4/ip_forward"); got != "0" {
		t.Errorf("dockerd switched forwarding on: net.ipv4.ip_forward is %s", got)
	}
	if rules := inNamespace("iptables-save"); rules != "" {
		t.Errorf("dockerd wrote iptables rules:\n%s", rules)
	}
	docker("network", "rm", "kind")
}

func waitForEngine(t *testing.T, answers func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !answers(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("dockerd did not answer within 60s")
		}
	}
}
