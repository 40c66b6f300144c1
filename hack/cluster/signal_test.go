package main

import (
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/metawatch/metawatch/hack/onenode"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// `make cluster`, as users run it, stops the cluster and removes everything
// it made on SIGTERM (to make alone, which passes it on to the command it
// runs), on Ctrl-C (SIGINT to the whole process group), whether it is still
// starting or already up, and when its terminal closes (SIGHUP to the group).
func TestMakeClusterStopsOnSignals(t *testing.T) {
	skipUnlessANodeCanRun(t)
	for name, tc := range map[string]struct {
		when   string // the progress line after which the signal is sent
		signal syscall.Signal
		group  bool // to the process group, as a terminal's Ctrl-C, else to make alone
	}{
		"SIGTERM to make once the cluster is ready": {when: "cluster: ready", signal: syscall.SIGTERM},
		"Ctrl-C while the node is starting":         {when: "starting containerd", signal: syscall.SIGINT, group: true},
		"its terminal closed once it is ready":      {when: "cluster: ready", signal: syscall.SIGHUP, group: true},
	} {
		t.Run(name, func(t *testing.T) {
			makeCluster, lines := startMakeCluster(t)
			if !testkit.WaitForLine(lines, tc.when, 5*time.Minute) {
				t.Fatalf("make cluster never printed %q", tc.when)
			}
			pid := makeCluster.Process.Pid
			if tc.group {
				pid = -pid
			}
			signalled := time.Now()
			if err := syscall.Kill(pid, tc.signal); err != nil {
				t.Fatal(err)
			}
			_ = makeCluster.Wait() // make's own exit status is the signal's; what counts is what is left
			waitForNothingLeft(t, time.Minute)
			t.Logf("%s after %q: nothing left %s later", tc.signal, tc.when, time.Since(signalled).Round(100*time.Millisecond))
		})
	}
}

// After `make cluster` was killed (-9, nothing could clean up), the next
// start removes what it left (its components still running in the network
// namespace) and starts; its Stop then leaves nothing, and does not wait for
// pods bound to a node with no kubelet here (the bench's simulated nodes).
func TestStartAfterAKilledRun(t *testing.T) {
	skipUnlessANodeCanRun(t)
	makeCluster, lines := startMakeCluster(t)
	if !testkit.WaitForLine(lines, "cluster: ready", 5*time.Minute) {
		t.Fatal("make cluster never printed that it is ready")
	}
	if err := syscall.Kill(-makeCluster.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = makeCluster.Wait()
	if len(onenode.Leftovers()) == 0 {
		t.Fatal("the killed cluster left nothing: this test no longer tests a start over leftovers")
	}
	c, err := onenode.Start(t.Context(), onenode.Options{Log: io.Discard})
	if err != nil {
		t.Fatalf("starting over what the killed run left: %v", err)
	}
	podOnANodeWithoutKubelet(t, c)
	stopping := time.Now()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	// Stop waits up to 90 s for the pods it deletes to go; one that no
	// kubelet will ever finish must not be among them.
	if took := time.Since(stopping); took > time.Minute {
		t.Errorf("Stop took %s: it waited for a pod whose node has no kubelet here", took.Round(time.Second))
	}
	assertNothingLeft(t)
}

// podOnANodeWithoutKubelet creates a Node object nobody runs and a pod bound to it.
func podOnANodeWithoutKubelet(t *testing.T, c *onenode.Cluster) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "simulated"}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-simulated"},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}
	// The namespace's default ServiceAccount comes a moment after the cluster is ready.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if _, err = cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// startMakeCluster runs `make cluster` in a process group of its own and
// returns its output's lines; the test's cleanup kills the group.
func startMakeCluster(t *testing.T) (*exec.Cmd, <-chan string) {
	t.Helper()
	makeCluster := exec.Command("make", "-C", "../..", "--no-print-directory", "cluster")
	makeCluster.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A pipe of the test's own, not StderrPipe: Wait would close it while the
	// cluster, which outlives make, still prints how it stops (and a write to
	// a closed pipe would kill it).
	output, input, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	makeCluster.Stdout, makeCluster.Stderr = input, input
	err = makeCluster.Start()
	input.Close()
	if err != nil {
		t.Fatal(err)
	}
	lines, done := testkit.LogLines(t, output)
	t.Cleanup(func() {
		_ = syscall.Kill(-makeCluster.Process.Pid, syscall.SIGKILL)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
		output.Close()
	})
	return makeCluster, lines
}

// waitForNothingLeft waits for the stopping cluster's last process, mount,
// cgroup and directory to go (it goes on stopping after make has exited).
func waitForNothingLeft(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for len(onenode.Leftovers()) > 0 && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
	}
	assertNothingLeft(t)
}
