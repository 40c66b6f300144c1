package reload_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/reload"
	"github.com/metawatch/metawatch/pkg/settings"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// instance is metawatch wired as cmd/metawatch wires it, in-process, following a ConfigMap.
type instance struct {
	probe string // host:port of /readyz
	stop  func()
	// describe is the detail cmd/metawatch adds to /readyz/configuration's "ok".
	describe func() string
}

func startInstance(t *testing.T, cfg *rest.Config, configMap string, tune ...func(*reload.Reloader)) *instance {
	t.Helper()
	inst := &instance{probe: testkit.FreeAddress(t)}
	mgr, err := metamanager.New(cfg, nil, metamanager.Options{MetricsBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	reloader := &reload.Reloader{
		// Recorder is left zero: AddTo takes the Manager's.
		Config: cfg, Source: reload.Source{ConfigMap: configMap}, Settings: defaultSettings(),
		Log: mgr.GetLogger().WithName("reload"),
	}
	for _, f := range tune {
		f(reloader)
	}
	if err := reloader.AddTo(mgr); err != nil {
		t.Fatal(err)
	}
	if err := metamanager.ServeProbes(mgr, inst.probe, metamanager.Probes{
		Live: map[string]healthz.Checker{"ping": healthz.Ping}, Ready: map[string]healthz.Checker{"configuration": reloader.Ready},
	}); err != nil {
		t.Fatal(err)
	}
	inst.describe = reloader.Describe
	inst.stop = testkit.Start(t, mgr)
	return inst
}

// readiness is /readyz/configuration's answer: "ok" or why not.
func (inst *instance) readiness() string {
	_, body := testkit.HTTPGet("http://" + inst.probe + "/readyz/configuration")
	return body
}

// kubectlApply applies a manifest as a user would.
func kubectlApply(t *testing.T, manifest string) {
	t.Helper()
	if err := applyManifest(manifest); err != nil {
		t.Fatal(err)
	}
}

// applyManifest is kubectlApply for a goroutine other than the test's.
func applyManifest(manifest string) error {
	return testkit.KubectlApply(cp.Binaries.Kubectl, cp.KubeconfigPath, manifest)
}

func kubectl(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(cp.Binaries.Kubectl, append([]string{"--kubeconfig", cp.KubeconfigPath}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
}

// selectors is a selectors ConfigMap manifest holding configYAML.
func selectors(ns, configYAML string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: selectors, namespace: %s}\ndata:\n  config.yaml: |\n%s", ns, indent(configYAML))
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func podLabel(t *testing.T, c client.Client, ns, name, key string) string {
	t.Helper()
	var pod corev1.Pod
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &pod); err != nil {
		return ""
	}
	return pod.Labels[key]
}

// eventWith reports whether an Event about the selectors ConfigMap of ns with reason has part in its note.
func eventWith(t *testing.T, c client.Client, ns, reason, part string) bool {
	for _, e := range testkit.Events(t, c, ns, "ConfigMap", "selectors", reason) {
		if strings.Contains(e.Note, part) {
			return true
		}
	}
	return false
}

func podLabels(t *testing.T, c client.Client, ns, name string) map[string]string {
	t.Helper()
	var pod corev1.Pod
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &pod); err != nil {
		t.Fatal(err)
	}
	return pod.Labels
}

func namespaceObject(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: objectMeta(name)}
}

func objectMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

func contains(s, part string) bool { return strings.Contains(s, part) }

func podObject(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// defaultSettings are the settings of a process given no flag.
func defaultSettings() *settings.Settings {
	s := settings.Defaults()
	return &s
}
