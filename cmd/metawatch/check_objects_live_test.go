package main_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// With --live, the Namespace and the owner chain the files lack are read
// from the cluster; nothing there is written.
func TestCheckObjectsReadsTheRestFromTheCluster(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "preview-live", map[string]string{"team": "red"})
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "preview-live", Name: "web", Labels: map[string]string{"cost-center": "cc-7"}},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: testkit.PodImage}}}}}}
	if err := c.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "config.yaml")
	objects := filepath.Join(t.TempDir(), "pod.yaml")
	write(t, conf, "watches:\n- kind: Pod\nrules:\n- {name: team, kinds: [Pod], copyFromNamespace: {labels: [team]}}\n"+
		"- {name: cost, kinds: [Pod], copyFromOwner: {kinds: [Deployment], labels: [cost-center]}}\n")
	write(t, objects, fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web-1\n  namespace: preview-live\n"+
		"  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: %s, controller: true}]\n", d.UID))
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(t.Context(), bin, "check", "-f", conf, "--live", "--kubeconfig", cp.KubeconfigPath, "--objects", objects)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	_ = cmd.Run()
	code := cmd.ProcessState.ExitCode()
	for _, want := range []string{`would set label team="red" (was absent; rule team, from Namespace preview-live)`,
		`would set label cost-center="cc-7" (was absent; rule cost, from owner Deployment/web)`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s%s", want, out.String(), errOut.String())
		}
	}
	if code != 3 {
		t.Errorf("exit code %d, want 3 (would write)", code)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
