package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/metawatch/metawatch/hack/kindnode"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// clusterName is the kind cluster of the test: the bench's default name, as
// the README's commands give it.
const clusterName = "metawatch-bench"

// The README's kind instructions, run as written: make kind; the chart on it
// the way users install it (the image loaded with kind, default values but
// the pull policy, the selectors applied with kubectl) with the demo rule
// converging and the pods Ready under the restricted Pod Security level; the
// bench on it; make cluster's own test beside it, which a dockerd that
// rewrote the host's firewall would break; then Ctrl-C, after which nothing
// is left but the cached node image; and the same after a make kind whose
// cluster is deleted with kind delete cluster, and after one whose terminal
// closed, and after one killed with kill -9 and the make kind run after it.
// The bench refuses, saying what to do, to run its chart beside the user's
// and to make a cluster of its own on make kind's dockerd.
func TestKindClusterChartAndBench(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a kind node image and starts a kind cluster: not under go test -short")
	}
	if err := kindnode.CanRun(); err != nil {
		t.Skip(err)
	}
	engineBefore, linksBefore, networkBefore := kindnode.EngineAnswers(t.Context()), links(), readHostNetwork(t)
	makeKind, lines, done := startMakeKind(t)
	start := time.Now()
	if !testkit.WaitForLine(lines, "kind: cluster "+clusterName+" is up", 60*time.Minute) {
		t.Fatal("make kind did not bring the cluster up")
	}
	t.Logf("make kind: the cluster was up %s after start", time.Since(start).Round(time.Second))
	assertHostNetworkUnchanged(t, networkBefore, "with the kind cluster up")

	k := newKubectl(t, filepath.Join("bin", "kind", clusterName+".kubeconfig"))
	t.Logf("\n%s", k.run("get", "nodes,pods", "-A", "-o", "wide"))
	helm := installChart(t, k)
	t.Logf("\n%s", k.run("get", "nodes,pods", "-A", "-o", "wide"))
	benchRefuses(t, "--kind "+clusterName+" --sizes 10 --variants chart", "uninstall it first (helm uninstall metawatch -n metawatch-system)")
	benchRefuses(t, "--kind another-cluster --sizes 10 --variants metawatch", "is running cluster "+clusterName, "use --kind "+clusterName)
	uninstallChart(t, k, helm)

	out := t.TempDir()
	if b, err := makeBench(`--kind ` + clusterName + ` --sizes 2000 --variants metawatch,chart --out ` + out).CombinedOutput(); err != nil {
		t.Fatalf("make bench on kind: %v\n%s", err, tail(string(b), 6000))
	}
	report, err := os.ReadFile(filepath.Join(out, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"| 2000 | metawatch |", "| 2000 | chart |"} {
		if !strings.Contains(string(report), row) {
			t.Errorf("the bench's report has no row %q:\n%s", row, report)
		}
	}
	t.Logf("bench report on kind:\n%s", report)
	makeTestNodeBeside(t)

	drain(lines)
	if err := syscall.Kill(-makeKind.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	assertStoppedCleanly(t, lines, "Ctrl-C")
	waitStopped(t, makeKind, done, "Ctrl-C")
	assertNothingLeft(t, engineBefore, linksBefore, networkBefore, "after Ctrl-C")

	for _, end := range []string{endByKindDelete, endByHangUp, endByKill} {
		endAnotherWay(t, end)
		if end == endByKill {
			// What it left is the next make kind's to remove, before it starts.
			restartAfterKill(t)
		}
		assertNothingLeft(t, engineBefore, linksBefore, networkBefore, "after "+end)
	}
}

// The other ways a make kind ends: its cluster deleted from another
// terminal, its own terminal closed, and killed (kill -9) with make.
const (
	endByKindDelete = "kind delete cluster"
	endByHangUp     = "SIGHUP (its terminal closed)"
	endByKill       = "kill -9, then make kind again and Ctrl-C"
)

// makeBench is the README's make bench with args.
func makeBench(args string) *exec.Cmd {
	cmd := exec.Command("make", "--no-print-directory", "bench", "ARGS="+args)
	cmd.Dir = repoRoot
	return cmd
}

// benchRefuses runs make bench with args, which must fail saying each of want.
func benchRefuses(t *testing.T, args string, want ...string) {
	t.Helper()
	b, err := makeBench(args).CombinedOutput()
	if err == nil {
		t.Fatalf("make bench ARGS=%q ran; it should have refused:\n%s", args, tail(string(b), 3000))
	}
	for _, w := range want {
		if !strings.Contains(string(b), w) {
			t.Errorf("make bench ARGS=%q failed without saying %q:\n%s", args, w, tail(string(b), 3000))
		}
	}
}

// restartAfterKill runs make kind after one was killed: it must say it
// removes what the killed one left (its dockerd still running, its
// cluster), bring a cluster up, and stop cleanly on Ctrl-C.
func restartAfterKill(t *testing.T) {
	t.Helper()
	makeKind, lines, done := startMakeKind(t)
	if !testkit.WaitForLine(lines, "did not end cleanly", 5*time.Minute) {
		t.Fatal("make kind after a killed one did not say it removes what that one left")
	}
	if !testkit.WaitForLine(lines, "kind: cluster "+clusterName+" is up", 15*time.Minute) {
		t.Fatal("make kind after a killed one did not bring its cluster up")
	}
	if err := syscall.Kill(-makeKind.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	assertStoppedCleanly(t, lines, "Ctrl-C after a killed make kind")
	waitStopped(t, makeKind, done, "Ctrl-C")
}

// assertStoppedCleanly reads make kind's output to its end (make, like any
// program a Ctrl-C reaches, then dies of the signal, as a shell shows by
// status 130): neither make kind nor make may say it failed.
func assertStoppedCleanly(t *testing.T, lines <-chan string, after string) {
	t.Helper()
	deadline := time.After(5 * time.Minute)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return
			}
			if strings.Contains(line, "make: ***") || strings.Contains(line, "kind: interrupted:") {
				t.Errorf("after %s, make kind failed: %s", after, line)
			}
		case <-deadline:
			t.Errorf("make kind's output did not end within 5 minutes of %s", after)
			return
		}
	}
}

// endAnotherWay runs make kind again (the node image cached now) and ends
// it the other way: make kind must see it, clean up and exit by itself.
func endAnotherWay(t *testing.T, end string) {
	t.Helper()
	makeKind, lines, done := startMakeKind(t)
	start := time.Now()
	if !testkit.WaitForLine(lines, "kind: cluster "+clusterName+" is up", 15*time.Minute) {
		t.Fatalf("make kind did not bring the cluster up again (to end it by %s)", end)
	}
	t.Logf("make kind, warm: the cluster was up %s after start", time.Since(start).Round(time.Second))
	switch end {
	case endByKindDelete:
		kind, err := controlplane.EnsureKind(t.Context(), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		mustRun(t, kind, "delete", "cluster", "--name", clusterName, "--kubeconfig", filepath.Join("bin", "kind", clusterName+".kubeconfig"))
	case endByHangUp:
		if err := syscall.Kill(-makeKind.Process.Pid, syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	case endByKill:
		if err := syscall.Kill(-makeKind.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	waitStopped(t, makeKind, done, end)
	if end == endByKindDelete && makeKind.ProcessState.ExitCode() != 0 {
		t.Errorf("make kind exited %d after its cluster was deleted, not 0", makeKind.ProcessState.ExitCode())
	}
}

// drain drops the lines nobody read, so that what comes next is not lost
// for want of room.
func drain(lines <-chan string) {
	for {
		select {
		case _, ok := <-lines:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

// waitStopped waits for make kind to exit after what should stop it.
func waitStopped(t *testing.T, makeKind *exec.Cmd, done <-chan struct{}, after string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		t.Fatalf("make kind did not stop within 5 minutes of %s", after)
	}
	_ = makeKind.Wait()
}

// makeTestNodeBeside runs make test-node (make cluster's one-node cluster,
// the chart on it, its signals and restarts) while the kind cluster is up.
func makeTestNodeBeside(t *testing.T) {
	t.Helper()
	start := time.Now()
	cmd := exec.Command("make", "--no-print-directory", "test-node")
	cmd.Dir = repoRoot
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make test-node beside the kind cluster: %v\n%s", err, tail(string(b), 6000))
	}
	if !strings.Contains(string(b), "--- PASS: TestChartOnARealNode") {
		t.Fatalf("make test-node beside the kind cluster ran no node test (skipped?):\n%s", tail(string(b), 6000))
	}
	t.Logf("make test-node passed beside the kind cluster in %s", time.Since(start).Round(time.Second))
}

// repoRoot is where the README's commands run.
const repoRoot = "../.."

// startMakeKind runs `make kind` (its cluster metawatch-bench) in a process
// group of its own (Ctrl-C reaches make and what it runs, as in a terminal).
func startMakeKind(t *testing.T) (*exec.Cmd, <-chan string, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("make", "--no-print-directory", "kind")
	cmd.Dir = repoRoot
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	output, input, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = input, input
	err = cmd.Start()
	input.Close()
	if err != nil {
		t.Fatal(err)
	}
	lines, done := testkit.LogLines(t, output)
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(5 * time.Minute):
		}
		output.Close()
	})
	return cmd, lines, done
}

// assertNothingLeft checks the machine after make kind stopped: no kind
// container, network or image but the cached node image in the engine (one
// is started for the look if make kind stopped the one it had started), no
// dockerd it started still running, no network link it made, and the host's
// firewall and forwarding as they were.
func assertNothingLeft(t *testing.T, engineBefore bool, linksBefore map[string]bool, networkBefore hostNetwork, when string) {
	t.Helper()
	if !engineBefore && kindnode.EngineAnswers(t.Context()) {
		t.Errorf("%s: make kind started dockerd and left it running", when)
	}
	for link := range links() {
		if !linksBefore[link] {
			t.Errorf("%s: network link left: %s", when, link)
		}
	}
	assertHostNetworkUnchanged(t, networkBefore, when)
	engine, err := kindnode.StartEngine(t.Context(), io.Discard, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Stop(io.Discard)
	if left := dockerLines(t, "ps", "-a", "--format", "{{.Names}}"); len(left) > 0 {
		t.Errorf("%s: containers left: %v", when, left)
	}
	for _, n := range dockerLines(t, "network", "ls", "--format", "{{.Name}}") {
		if n != "bridge" && n != "host" && n != "none" {
			t.Errorf("%s: network left: %s", when, n)
		}
	}
	for _, img := range dockerLines(t, "images", "--format", "{{.Repository}}:{{.Tag}}") {
		if img != kindnode.Image() {
			t.Errorf("%s: image left: %s (only the cached node image %s should be)", when, img, kindnode.Image())
		}
	}
}

// links are the names of this machine's network links.
func links() map[string]bool {
	out, _ := exec.Command("ip", "-o", "link", "show").Output()
	names := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if fields := strings.Fields(line); len(fields) > 1 {
			name, _, _ := strings.Cut(strings.TrimSuffix(fields[1], ":"), "@")
			names[name] = true
		}
	}
	return names
}

func dockerLines(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("docker", args...).Output()
	if err != nil {
		t.Fatalf("docker %s: %v", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out))
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// kubectl runs the control plane's kubectl against one kubeconfig.
type kubectl struct {
	t           *testing.T
	bin, config string
}

func newKubectl(t *testing.T, kubeconfig string) kubectl {
	t.Helper()
	cp, err := controlplane.EnsureBinaries(t.Context(), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	return kubectl{t: t, bin: cp.Kubectl, config: kubeconfig} // relative to repoRoot, where every command runs
}

func (k kubectl) run(args ...string) string {
	k.t.Helper()
	return mustRun(k.t, k.bin, append([]string{"--kubeconfig", k.config}, args...)...)
}

// mustRun runs name with args in the repository's root, failing t with its output.
func mustRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}
