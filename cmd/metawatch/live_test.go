package main_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// --wait-for-config: no ConfigMap yet is not an exit; metawatch waits, not
// ready, and runs the configuration once one is applied.
func TestWaitForConfig(t *testing.T) {
	controlplane.SkipIfShort(t)
	probe := testkit.FreeAddress(t)
	cmd, stderr := start(t, "--kubeconfig", cp.KubeconfigPath, "--config-map", "default/later", "--wait-for-config",
		"--health-probe-bind-address", probe, "--metrics-bind-address", "0")
	defer stopProcess(t, cmd, stderr)
	waitBody(t, "http://"+probe+"/readyz/configuration", "waiting for a valid configuration in ConfigMap default/later", stderr)
	c, err := client.New(cp.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "later"}, Data: map[string]string{"config.yaml": "watches: [{kind: Namespace}]"}}
	if err := c.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	waitHTTP200(t, "http://"+probe+"/readyz", stderr)
}

// An API server that cannot be reached at start: metawatch says so and
// retries with backoff, then runs once it can reach it.
func TestUnreachableAtStartIsRetried(t *testing.T) {
	controlplane.SkipIfShort(t)
	address := testkit.FreeAddress(t) // nothing listens here yet
	probe := testkit.FreeAddress(t)
	cmd, stderr := start(t, "--kubeconfig", kubeconfigVia(t, address), "--config-file", writeConfig(t, "watches: [{kind: Namespace}]\n"),
		"--health-probe-bind-address", probe, "--metrics-bind-address", "0")
	defer stopProcess(t, cmd, stderr)
	testkit.WaitFor(t, "metawatch to say the API server is unreachable", testkit.Timeout, func() bool {
		return strings.Contains(stderr.String(), "the API server is unreachable; retrying")
	})
	testkit.Forward(t, address, testkit.APIServerHost(t, cp.Config))
	waitHTTP200(t, "http://"+probe+"/readyz", stderr)
}

// kubeconfigVia is the admin kubeconfig with the server at address (same certificates).
func kubeconfigVia(t *testing.T, address string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(cp.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, cluster := range cfg.Clusters {
		cluster.Server = "https://" + address
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func start(t *testing.T, args ...string) (*exec.Cmd, *testkit.SyncBuffer) {
	t.Helper()
	return startWithEnv(t, nil, args...)
}

// startWithEnv is start with env added to the test's environment.
func startWithEnv(t *testing.T, env []string, args ...string) (*exec.Cmd, *testkit.SyncBuffer) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(cmd.Environ(), env...)
	}
	stderr := &testkit.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stderr
}

func stopProcess(t *testing.T, cmd *exec.Cmd, stderr *testkit.SyncBuffer) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("metawatch exited with %v after SIGTERM:\n%s", err, stderr.String())
		}
	case <-time.After(testkit.Timeout):
		_ = cmd.Process.Kill()
		t.Errorf("metawatch did not stop within %s of SIGTERM", testkit.Timeout)
	}
}

func waitBody(t *testing.T, url, want string, log *testkit.SyncBuffer) {
	t.Helper()
	testkit.WaitFor(t, url+" to say "+want+"; metawatch said:\n"+log.String(), testkit.Timeout, func() bool {
		_, body := testkit.HTTPGet(url)
		return strings.Contains(body, want)
	})
}
