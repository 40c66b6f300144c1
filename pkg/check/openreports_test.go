package check_test

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/check"
	"github.com/metawatch/metawatch/pkg/reports"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// reportList is check -o openreports's output, read back.
func reportList(t *testing.T, out []byte) []openreports.Report {
	t.Helper()
	var list struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ListMeta      `json:"metadata"`
		Items           []openreports.Report `json:"items"`
	}
	if err := yaml.UnmarshalStrict(out, &list); err != nil || list.Kind != "List" {
		t.Fatalf("not a List of reports (%v):\n%s", err, out)
	}
	return list.Items
}

// byResult counts a report's results per check, action and result.
func byResult(r openreports.Report) map[string]int {
	out := map[string]int{}
	for _, res := range r.Results {
		out[fmt.Sprintf("%s %s %s %s", res.Policy, res.Rule, res.Properties["action"], res.Result)]++
	}
	return out
}

// check --objects -o openreports, offline, for labels and annotations: the
// reports metawatch would keep for the objects given, with a warn result
// per write it would make.
func TestCheckObjectsAsOpenReports(t *testing.T) {
	for name, kt := range testkit.KeyTypes {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			conf, objects := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "objects.yaml")
			write(t, conf, fmt.Sprintf("watches:\n- kind: Pod\nrules:\n- {name: tier, kinds: [Pod], %s: {tier: gold}}\n- {name: owner, kinds: [Pod], %s: [owner]}\n",
				kt.Set, kt.Require))
			write(t, objects, fmt.Sprintf(`apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Pod, metadata: {name: bare, namespace: shop}}
- {apiVersion: v1, kind: Pod, metadata: {name: silver, namespace: shop, %[1]s: {tier: silver, owner: jo}}}
- {apiVersion: v1, kind: Pod, metadata: {name: fine, namespace: shop, %[1]s: {tier: gold, owner: jo}}}
`, kt.Field))
			var out, errOut bytes.Buffer
			code := check.Run(t.Context(), []string{"-f", conf, "--objects", objects, "-o", "openreports"}, &out, &errOut)
			if code != 5 {
				t.Errorf("exit code %d, want 5 (would write, and offending): %s", code, errOut.String())
			}
			items := reportList(t, out.Bytes())
			if len(items) != 1 || items[0].Namespace != "shop" || items[0].Name != (reports.Names{Identity: authority.NewIdentity("metawatch", "")}).Name() {
				t.Fatalf("reports %+v: want one, in shop, named as the controller names it", items)
			}
			r := items[0]
			want := map[string]int{"tier write set warn": 1, "tier write change warn": 1, "owner required-metadata  fail": 1}
			if got := byResult(r); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("results %v, want %v", got, want)
			}
			for _, res := range r.Results {
				if res.Rule == reports.CheckWrite && !strings.Contains(res.Properties["keys"], kt.Name+" tier=") {
					t.Errorf("write result %q: want it to name the %s tier", res.Properties["keys"], kt.Name)
				}
			}
			if r.Summary.Fail != 1 || r.Summary.Warn != 2 || r.Summary.Pass != 1 {
				t.Errorf("summary %+v, want 1 fail, 2 warn, 1 pass (the pod as the rules want)", r.Summary)
			}
		})
	}
}

// check --live --report -o openreports prints reports the API server
// accepts, with the OpenReports CRDs installed (server-side dry run), for
// labels and annotations copied from the Namespace and required.
func TestCheckReportAsOpenReportsIsAcceptedByTheAPIServer(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.InstallOpenReports(t, cp.Config, "../..")
	for name, kt := range testkit.KeyTypes {
		t.Run(name, func(t *testing.T) {
			ns := "openreports-" + name
			testkit.Namespace(t, c, ns, nil)
			red, jo := "red", "jo"
			testkit.MergePatch(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, "kubectl-"+kt.Kubectl, kt.Patch("team", &red))
			for i := range 3 {
				testkit.Pod(t, c, ns, fmt.Sprintf("bare-%d", i), nil)
			}
			fine := testkit.Pod(t, c, ns, "fine", nil)
			testkit.MergePatch(t, c, fine, "kubectl-"+kt.Kubectl, kt.Patch("team", &red))
			testkit.MergePatch(t, c, fine, "kubectl-"+kt.Kubectl, kt.Patch("owner", &jo))
			conf := filepath.Join(t.TempDir(), "config.yaml")
			write(t, conf, fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: team, kinds: [Pod], copyFromNamespace: {%s: [team]}}\n"+
				"- {name: owner, kinds: [Pod], %s: [owner]}\n", ns, kt.Copy, kt.Require))
			var out, errOut bytes.Buffer
			code := check.Run(t.Context(), []string{"-f", conf, "--live", "--report", "--kubeconfig", cp.KubeconfigPath, "-o", "openreports"}, &out, &errOut)
			if code != 5 {
				t.Errorf("exit code %d, want 5: %s", code, errOut.String())
			}
			items := reportList(t, out.Bytes())
			if len(items) != 1 || items[0].Summary.Fail != 3 || items[0].Summary.Warn != 3 || items[0].Summary.Pass != 1 {
				t.Fatalf("reports %+v: want one with 3 fails (owner), 3 warns (team would be set), 1 pass", items)
			}
			cmd := exec.Command(cp.Binaries.Kubectl, "--kubeconfig", cp.KubeconfigPath, "apply", "--dry-run=server", "-f", "-")
			cmd.Stdin = bytes.NewReader(out.Bytes())
			dry, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(dry), "report.openreports.io/"+items[0].Name+" created (server dry run)") {
				t.Errorf("kubectl apply --dry-run=server: %v\n%s", err, dry)
			}
		})
	}
}
