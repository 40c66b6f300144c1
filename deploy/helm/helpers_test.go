package helm_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// run runs a command and returns its stdout; it fails the test on a non-zero exit.
func run(t *testing.T, stdin string, name string, args ...string) string {
	t.Helper()
	out, err := tryRun(t, stdin, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return out
}

func tryRun(t testing.TB, stdin string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

func helm(t *testing.T, args ...string) string {
	t.Helper()
	return run(t, "", helmBin, append([]string{"--kubeconfig", cp.KubeconfigPath}, args...)...)
}

func kubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	return run(t, stdin, cp.Binaries.Kubectl, append([]string{"--kubeconfig", cp.KubeconfigPath}, args...)...)
}

// impersonatingKubeconfig writes a kubeconfig that acts as the given ServiceAccount.
func impersonatingKubeconfig(t *testing.T, namespace, serviceAccount string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(cp.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range cfg.AuthInfos {
		auth.Impersonate = "system:serviceaccount:" + namespace + ":" + serviceAccount
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func repoFile(t *testing.T, rel string) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	return path
}
