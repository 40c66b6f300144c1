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
// bench on it; then Ctrl-C, after which nothing is left but the cached node
// image.
func TestKindClusterChartAndBench(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a kind node image and starts a kind cluster: not under go test -short")
	}
	if err := kindnode.CanRun(); err != nil {
		t.Skip(err)
	}
	engineBefore, linksBefore := kindnode.EngineAnswers(t.Context()), links()
	makeKind, lines, done := startMakeKind(t)
	start := time.Now()
	if !testkit.WaitForLine(lines, "kind: cluster "+clusterName+" is up", 60*time.Minute) {
		t.Fatal("make kind did not bring the cluster up")
	}
	t.Logf("make kind: the cluster was up %s after start", time.Since(start).Round(time.Second))

	k := newKubectl(t, filepath.Join("bin", "kind", clusterName+".kubeconfig"))
	t.Logf("\n%s", k.run("get", "nodes,pods", "-A", "-o", "wide"))
	helm := installChart(t, k)
	t.Logf("\n%s", k.run("get", "nodes,pods", "-A", "-o", "wide"))
	uninstallChart(t, k, helm)

	out := t.TempDir()
	bench := exec.Command("make", "--no-print-directory", "bench",
		`ARGS=--kind `+clusterName+` --sizes 2000 --variants metawatch,chart --out `+out)
	bench.Dir = repoRoot
	if b, err := bench.CombinedOutput(); err != nil {
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

	if err := syscall.Kill(-makeKind.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		t.Fatal("make kind did not stop within 5 minutes of Ctrl-C")
	}
	_ = makeKind.Wait()
	if !engineBefore && kindnode.EngineAnswers(t.Context()) {
		t.Error("make kind started dockerd and left it running")
	}
	assertNothingLeft(t, linksBefore)
}

// repoRoot is where the README's commands run.
const repoRoot = "../.."

// startMakeKind runs `make kind ARGS="--name metawatch-bench"` in a process
// group of its own (Ctrl-C reaches make and what it runs, as in a terminal).
func startMakeKind(t *testing.T) (*exec.Cmd, <-chan string, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("make", "--no-print-directory", "kind", "ARGS=--name "+clusterName)
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

// assertNothingLeft checks the container engine's state after make kind
// stopped: no kind container, no kind network, no image but the cached node
// image. If make kind stopped the engine it had started, one is started for
// the look and stopped again.
func assertNothingLeft(t *testing.T, linksBefore map[string]bool) {
	t.Helper()
	engine, err := kindnode.StartEngine(t.Context(), io.Discard, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Stop(io.Discard)
	if left := dockerLines(t, "ps", "-a", "--format", "{{.Names}}"); len(left) > 0 {
		t.Errorf("containers left: %v", left)
	}
	for _, n := range dockerLines(t, "network", "ls", "--format", "{{.Name}}") {
		if n != "bridge" && n != "host" && n != "none" {
			t.Errorf("network left: %s", n)
		}
	}
	for _, img := range dockerLines(t, "images", "--format", "{{.Repository}}:{{.Tag}}") {
		if img != kindnode.Image() {
			t.Errorf("image left: %s (only the cached node image %s should be)", img, kindnode.Image())
		}
	}
	for link := range links() {
		if !linksBefore[link] {
			t.Errorf("network link left: %s", link)
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
