package check_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metawatch/metawatch/pkg/check"
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
	code := check.Run(t.Context(), []string{"-f", conf, "--live", "--kubeconfig", cp.KubeconfigPath, "--objects", objects}, &out, &errOut)
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

// check --live --report lists the cluster's objects not as the rules want,
// grouped by rule and namespace: missing keys, a key another manager holds,
// a requirement failed; objects as wanted are counted, not listed.
func TestCheckReportGroupsWhatIsOff(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "report-a", map[string]string{"team": "red"})
	testkit.Namespace(t, c, "report-b", map[string]string{"team": "blue"})
	for i := range 3 {
		testkit.Pod(t, c, "report-a", fmt.Sprintf("bare-%d", i), nil)
	}
	testkit.Pod(t, c, "report-b", "labelled", map[string]string{"team": "blue", "owner": "jane"})
	held := testkit.Pod(t, c, "report-b", "held", map[string]string{"owner": "joe"})
	testkit.MergePatch(t, c, held, "kubectl-label", `{"metadata":{"labels":{"team":"green"}}}`)
	conf := filepath.Join(t.TempDir(), "config.yaml")
	write(t, conf, "watches:\n- kind: Pod\n  namespaces: [report-a, report-b]\nrules:\n- {name: team, kinds: [Pod], copyFromNamespace: {labels: [team]}}\n"+
		"- {name: owner, kinds: [Pod], requireLabels: [owner]}\n")
	var out, errOut bytes.Buffer
	code := check.Run(t.Context(), []string{"-f", conf, "--live", "--report", "--kubeconfig", cp.KubeconfigPath}, &out, &errOut)
	rows := map[string][]string{}
	for line := range strings.Lines(out.String()) {
		if f := strings.Fields(line); len(f) >= 8 {
			rows[f[0]+" "+f[1]] = f[2:8]
		}
	}
	for group, want := range map[string]string{
		"team report-a":  "3 0 0 0 0 0", // missing in 3 pods
		"team report-b":  "0 0 0 0 1 0", // held by kubectl-label
		"owner report-a": "0 0 0 0 0 3", // 3 pods without owner
	} {
		if got := strings.Join(rows[group], " "); got != want {
			t.Errorf("%s: %q, want %q (missing wrong remove release conflicting violating)\n%s%s", group, got, want, out.String(), errOut.String())
		}
	}
	if !strings.Contains(out.String(), "5 objects: 4 not as the rules want") {
		t.Errorf("the summary:\n%s", out.String())
	}
	if code != 5 {
		t.Errorf("exit code %d, want 5 (would write, and offending)", code)
	}
}
