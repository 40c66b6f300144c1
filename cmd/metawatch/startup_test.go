package main_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// A bad configuration stops metawatch at start-up, non-zero, with the field
// path in its message, instead of running half-configured.
func TestBadConfigExitsNonZeroNamingTheField(t *testing.T) {
	controlplane.SkipIfShort(t)
	cases := map[string]struct {
		config string
		want   []string
	}{
		"unknown field":            {config: "watches:\n- kind: Pod\n  labelSelctor: app=web\n", want: []string{`unknown field "watches[0].labelSelctor"`}},
		"bad label selector":       {config: "watches:\n- kind: Pod\n- kind: Node\n- kind: Deployment\n  labelSelector: team in (a\n", want: []string{`watches[2].labelSelector: Invalid value: "team in (a"`}},
		"bad field selector":       {config: "watches:\n- kind: Pod\n  fieldSelector: status.phase\n", want: []string{`watches[0].fieldSelector: Invalid value: "status.phase"`}},
		"field the server rejects": {config: "watches:\n- kind: Pod\n  fieldSelector: spec.priority=1\n", want: []string{`watches[0].fieldSelector "spec.priority=1"`}},
		"unknown kind":             {config: "watches:\n- kind: Podz\n", want: []string{`watches[0].kind: Invalid value: "Podz"`}},
		"duplicate kind":           {config: "watches:\n- kind: Pod\n- kind: Pod\n", want: []string{`watches[1].kind: Duplicate value: "Pod"`}},
		"invalid namespace":        {config: "watches:\n- kind: Pod\n  namespaces: [Shop]\n", want: []string{`watches[0].namespaces[0]: Invalid value: "Shop"`}},
		"empty file":               {config: "", want: []string{"configuration is empty"}},
		"not YAML":                 {config: "watches: [kind: Pod\n", want: []string{"decoding configuration"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			stderr, err := runToExit(t, "--config-file", writeConfig(t, tc.config))
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("metawatch exited with %v, want a non-zero exit; stderr:\n%s", err, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestConfigMapWithoutTheDataKeyExitsNonZero(t *testing.T) {
	controlplane.SkipIfShort(t)
	c, err := client.New(cp.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "no-key"}, Data: map[string]string{"config.yml": "watches: []"}}
	if err := c.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	for arg, want := range map[string]string{
		"default/no-key":  `ConfigMap default/no-key has no data key "config.yaml"`,
		"default/missing": `reading ConfigMap default/missing`,
		"missing-slash":   `--config-map "missing-slash": want NAMESPACE/NAME`,
	} {
		stderr, err := runToExit(t, "--config-map", arg)
		if err == nil || !strings.Contains(stderr, want) {
			t.Errorf("--config-map %s: exit %v, want non-zero with %q; stderr:\n%s", arg, err, want, stderr)
		}
	}
}

// A good configuration: /readyz turns ready once every kind has synced, and
// SIGTERM shuts metawatch down cleanly with exit code 0.
func TestReadyAfterSyncAndGracefulShutdown(t *testing.T) {
	controlplane.SkipIfShort(t)
	probe := testkit.FreeAddress(t)
	cmd := exec.Command(bin, "--kubeconfig", cp.KubeconfigPath, "--config-file", writeConfig(t, "watches:\n- kind: Pod\n- kind: Namespace\n"),
		"--health-probe-bind-address", probe, "--metrics-bind-address", "0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitHTTP200(t, "http://"+probe+"/readyz", &stderr)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM metawatch exited with %v, want 0; stderr:\n%s", err, stderr.String())
	}
}

func runToExit(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", cp.KubeconfigPath,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	return stderr.String(), err
}

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func waitHTTP200(t *testing.T, url string, log fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(testkit.Timeout)
	for code, _ := testkit.HTTPGet(url); code != http.StatusOK; code, _ = testkit.HTTPGet(url) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered 200; metawatch said:\n%s", url, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Only the configuration's own faults are called an invalid configuration:
// a broken kubeconfig is named as what it is, and a certificate authority
// that did not sign the API server's certificate ends the start at once,
// instead of being waited out as an unreachable server.
func TestStartupNamesTheRealCause(t *testing.T) {
	controlplane.SkipIfShort(t)
	good := writeConfig(t, "watches:\n- kind: Pod\n")
	broken := writeConfig(t, "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\ncontexts: [{name: x, context: {cluster: c, user: nobody}}]\ncurrent-context: absent\n")
	for name, tc := range map[string]struct {
		args          []string
		want, wantNot string
	}{
		"a kubeconfig whose context does not exist": {args: []string{"--config-file", good, "--kubeconfig", broken},
			want: "metawatch: loading the configuration: ", wantNot: "invalid configuration"},
		"a configuration with an unknown kind": {args: []string{"--config-file", writeConfig(t, "watches:\n- kind: Podz\n")},
			want: "metawatch: invalid configuration: "},
		"a kubeconfig trusting another certificate authority": {
			args: []string{"--config-file", good, "--kubeconfig", testkit.KubeconfigTrusting(t, cp.KubeconfigPath, testkit.ForeignCA(t))},
			want: "check the server address and certificate authority of the kubeconfig", wantNot: "unreachable"},
	} {
		t.Run(name, func(t *testing.T) {
			stderr, err := runToExit(t, tc.args...)
			if err == nil || !strings.Contains(stderr, tc.want) || (tc.wantNot != "" && strings.Contains(stderr, tc.wantNot)) {
				t.Errorf("exit %v, want non-zero saying %q and not %q; stderr:\n%s", err, tc.want, tc.wantNot, stderr)
			}
		})
	}
}

// Every flag is checked before metawatch sends its first request: a wrong
// flag is named at once, not after the configuration was loaded from a
// server that may be slow or unreachable (where it would retry first).
func TestFlagsAreCheckedBeforeAnyRequest(t *testing.T) {
	controlplane.SkipIfShort(t)
	var requests atomic.Int64
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(server.Close)
	kubeconfig := writeConfig(t, fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %q}}]\n"+
		"contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: t}}]\ncurrent-context: c\n", server.URL))
	config := writeConfig(t, "watches:\n- kind: Pod\n")
	leader := []string{"--leader-elect", "--leader-election-namespace", "default"}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"a renew deadline past the lease duration": {args: append([]string{"--leader-election-renew-deadline", "20s"}, leader...),
			want: "--leader-election-renew-deadline=20s"},
		"a Lease name that is not an object name": {args: append([]string{"--leader-election-id", "Leader_1"}, leader...),
			want: `--leader-election-id="Leader_1"`},
		"sharding with leader election":   {args: append([]string{"--sharding"}, leader...), want: "--sharding and --leader-elect exclude each other"},
		"no reconciles at once":           {args: []string{"--max-concurrent-reconciles", "0"}, want: "--max-concurrent-reconciles=0"},
		"a negative shutdown timeout":     {args: []string{"--graceful-shutdown-timeout", "-1s"}, want: "--graceful-shutdown-timeout=-1s"},
		"a negative bookmark interval":    {args: []string{"--unchanged-bookmark-interval", "-1s"}, want: "--unchanged-bookmark-interval=-1s"},
		"an unreadable metrics cert dir":  {args: []string{"--metrics-cert-dir", "/nonexistent"}, want: "--metrics-cert-dir"},
		"a memory limit that is no value": {args: []string{"--container-memory-limit", "lots"}, want: "--container-memory-limit"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("POD_NAME", "metawatch-0")
			before := requests.Load()
			stderr, err := runToExit(t, append([]string{"--kubeconfig", kubeconfig, "--config-file", config}, tc.args...)...)
			if err == nil || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %v, want non-zero naming %q; stderr:\n%s", err, tc.want, stderr)
			}
			if n := requests.Load() - before; n != 0 {
				t.Errorf("%d requests reached the API server before the flag was refused, want none", n)
			}
		})
	}
}
