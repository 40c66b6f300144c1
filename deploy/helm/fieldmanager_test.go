package helm_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// Charts of earlier commits, which the upgrade test installs first.
const (
	// chart010 is chart 0.1.0 (hack/cluster's previousRelease): its
	// Deployment passes no --field-manager, so metawatch wrote as the
	// binary's default, metawatch.
	chart010 = "110915f"
	// chartFieldManagerMetawatch is the last commit whose chart defaulted
	// fieldManager to metawatch, passed as --field-manager=metawatch.
	chartFieldManagerMetawatch = "38f9830"
)

// With default values every release renders a field manager of its own,
// metawatch/<namespace>/<release>, so that two installations never apply as
// one name (which replaces the other's keys on every write); an explicit
// fieldManager is used as given. helm template sees no cluster: what it
// renders is what a new install writes as.
func TestTheDefaultFieldManagerIsOnePerRelease(t *testing.T) {
	controlplane.SkipIfShort(t)
	longNamespace, longRelease := strings.Repeat("n", 63), strings.Repeat("r", 53) // the longest Kubernetes and Helm take
	for name, tc := range map[string]struct {
		namespace, release string
		set                []string
		want, wantAdopt    string
		wantErr            string
	}{
		"a default release writes as metawatch, its namespace and its name": {
			namespace: "metawatch-system", release: "metawatch", want: "metawatch/metawatch-system/metawatch",
		},
		"another default release in another namespace writes as another name": {
			namespace: "team-b", release: "team-b", want: "metawatch/team-b/team-b",
		},
		"the longest namespace and release names stay within the API server's 128 characters": {
			namespace: longNamespace, release: longRelease, want: "metawatch/" + longNamespace + "/" + longRelease,
		},
		"an explicit fieldManager is used as given": {
			namespace: "team-b", release: "team-b", set: []string{"fieldManager=metawatch-team-b"}, want: "metawatch-team-b",
		},
		"an explicit fieldManager with a colon and spaces stays one argument": {
			namespace: "team-b", release: "team-b", set: []string{"fieldManager=team b: metawatch"}, want: "team b: metawatch",
		},
		"adoptFieldManager with the derived name renames to the per-release one": {
			namespace: "team-b", release: "team-b", set: []string{"adoptFieldManager=metawatch"},
			want: "metawatch/team-b/team-b", wantAdopt: "metawatch",
		},
		"adoptFieldManager equal to fieldManager is refused": {
			namespace: "team-b", release: "team-b", set: []string{"fieldManager=metawatch", "adoptFieldManager=metawatch"},
			wantErr: `adoptFieldManager "metawatch" is the field manager this installation writes as`,
		},
		"a fieldManager over 128 characters is refused": {
			namespace: "team-b", release: "team-b", set: []string{"fieldManager=" + strings.Repeat("m", 129)}, wantErr: "/fieldManager': maxLength",
		},
		"a fieldManager with a character that is not printable is refused": {
			namespace: "team-b", release: "team-b", set: []string{"fieldManager=team\tb"}, wantErr: "/fieldManager': 'team\\tb' does not match pattern",
		},
	} {
		t.Run(name, func(t *testing.T) {
			args := []string{"template", tc.release, chart, "-n", tc.namespace, "--show-only", "templates/deployment.yaml"}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			out, err := tryRun(t, "", helmBin, args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(out, tc.wantErr) {
					t.Fatalf("helm %s: %v, want a failure saying %q:\n%s", strings.Join(args, " "), err, tc.wantErr, out)
				}
				return
			}
			if err != nil {
				t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			rendered := containerArgs(t, out)
			if got := flagValue(rendered, "--field-manager"); got != tc.want {
				t.Errorf("--field-manager=%q, want %q", got, tc.want)
			}
			if got := flagValue(rendered, "--adopt-field-manager"); got != tc.wantAdopt {
				t.Errorf("--adopt-field-manager=%q, want %q", got, tc.wantAdopt)
			}
		})
	}
}

// A helm upgrade with default values keeps the field manager the release's
// running Deployment passes, so that an installation keeps owning its keys:
// metawatch for one installed by a chart that defaulted to it (or by 0.1.0,
// which passed none), its own name for one installed since. With
// adoptFieldManager naming that name, the upgrade moves to the per-release
// name, which adopts its keys. NOTES.txt says which name it writes as.
func TestAnUpgradeKeepsTheFieldManagerItWritesAs(t *testing.T) {
	controlplane.SkipIfShort(t)
	for name, tc := range map[string]struct {
		release   string
		from      string // the commit whose chart installs the release; empty: this tree's
		install   []string
		upgrade   []string
		installed string // the --field-manager after the install; empty: not checked
		upgraded  string
		adopt     string // the --adopt-field-manager after the upgrade
		renamed   string // the Deployment's name after the upgrade; empty: unchanged
	}{
		"installed by chart 0.1.0, which passed none, it keeps metawatch": {
			release: "fm-010", from: chart010, upgraded: "metawatch",
		},
		"installed when the chart's default was metawatch, it keeps metawatch": {
			release: "fm-old", from: chartFieldManagerMetawatch, installed: "metawatch", upgraded: "metawatch",
		},
		"installed with default values, it keeps its own name": {
			release: "fm-new", installed: "metawatch/fm-new/fm-new", upgraded: "metawatch/fm-new/fm-new",
		},
		"installed when the chart's default was metawatch, it keeps metawatch when the upgrade renames the Deployment": {
			release: "fm-rename", from: chartFieldManagerMetawatch, upgrade: []string{"--set", "fullnameOverride=fm-renamed"}, renamed: "fm-renamed",
			installed: "metawatch", upgraded: "metawatch",
		},
		"installed with an explicit fieldManager, it keeps that name when the upgrade has none": {
			release: "fm-set", install: []string{"--set", "fieldManager=metawatch-team-b"}, installed: "metawatch-team-b", upgraded: "metawatch-team-b",
		},
		"with adoptFieldManager naming metawatch, it moves to its own name and adopts metawatch's keys": {
			release: "fm-adopt", from: chartFieldManagerMetawatch, upgrade: []string{"--set", "adoptFieldManager=metawatch"},
			installed: "metawatch", upgraded: "metawatch/fm-adopt/fm-adopt", adopt: "metawatch",
		},
	} {
		t.Run(name, func(t *testing.T) {
			from := chart
			if tc.from != "" {
				from = chartAt(t, tc.from)
			}
			ns, deployment := tc.release, tc.release+"-metawatch"
			kubectl(t, "", "create", "namespace", ns)
			helm(t, append([]string{"install", tc.release, from, "-n", ns, "--wait=false"}, tc.install...)...)
			uninstallAtCleanup(t, tc.release, ns)
			if got := flagValue(installedArgs(t, ns, deployment), "--field-manager"); tc.installed != "" && got != tc.installed {
				t.Errorf("after the install --field-manager=%q, want %q", got, tc.installed)
			}

			notes := helm(t, append([]string{"upgrade", tc.release, chart, "-n", ns, "--wait=false", "--reset-values"}, tc.upgrade...)...)
			args := installedArgs(t, ns, cmp.Or(tc.renamed, deployment))
			if got := flagValue(args, "--field-manager"); got != tc.upgraded {
				t.Errorf("after the upgrade --field-manager=%q, want %q", got, tc.upgraded)
			}
			if got := flagValue(args, "--adopt-field-manager"); got != tc.adopt {
				t.Errorf("after the upgrade --adopt-field-manager=%q, want %q", got, tc.adopt)
			}
			if want := fmt.Sprintf("field manager %q", tc.upgraded); !strings.Contains(notes, want) {
				t.Errorf("the upgrade's NOTES do not say %s:\n%s", want, notes)
			}
		})
	}
}

// Two releases installed with default values, each in its namespace, write
// as two field managers, and each keeps its own key on the same pod: run
// out of cluster with their Deployments' flags, each as its ServiceAccount,
// with a rule setting a label of its own, the pod carries both labels, each
// owned by its installation's name alone. Applying as one name (the chart's
// default before), each apply replaced the other's owned set: the pod never
// carried both.
func TestTwoDefaultInstallationsKeepTheirOwnKeys(t *testing.T) {
	controlplane.SkipIfShort(t)
	kubectl(t, "", "create", "namespace", sharedNamespace)
	kubectl(t, demoPod, "apply", "-n", sharedNamespace, "-f", "-")
	keys := map[string]string{} // field manager: the label key its installation sets
	for _, release := range []string{"fm-team-a", "fm-team-b"} {
		ns, fullname, key := release, release+"-metawatch", strings.TrimPrefix(release, "fm-")
		kubectl(t, "", "create", "namespace", ns)
		kubectl(t, selectorsSetting(key), "apply", "-n", ns, "-f", "-")
		helm(t, "install", release, chart, "-n", ns, "--wait=false")
		uninstallAtCleanup(t, release, ns)

		args := deploymentArgs(t, ns, fullname)
		fieldManager := flagValue(args, "--field-manager")
		if other, taken := keys[fieldManager]; taken {
			t.Fatalf("releases %s and %s both write as %q: each apply would replace the other's keys", release, "fm-"+other, fieldManager)
		}
		if want := "metawatch/" + ns + "/" + release; fieldManager != want {
			t.Errorf("release %s writes as %q, want %q", release, fieldManager, want)
		}
		keys[fieldManager] = key

		probe := testkit.FreeAddress(t)
		cmd := exec.Command(metawatch, append(args, "--kubeconfig", impersonatingKubeconfig(t, ns, fullname),
			"--health-probe-bind-address", probe, "--metrics-bind-address", "0")...)
		var stderr testkit.SyncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stop(t, cmd, &stderr) })
		testkit.WaitFor(t, "/readyz of "+release+" as its ServiceAccount:\n"+stderr.String(), time.Minute, func() bool {
			code, _ := testkit.HTTPGet("http://" + probe + "/readyz")
			return code == http.StatusOK
		})
	}

	var pod corev1.Pod
	testkit.WaitFor(t, "the demo pod to carry both installations' labels", time.Minute, func() bool {
		if err := json.Unmarshal([]byte(kubectl(t, "", "get", "pod", "-n", sharedNamespace, "web", "-o", "json", "--show-managed-fields")), &pod); err != nil {
			t.Fatal(err)
		}
		return pod.Labels["team-a"] == "yes" && pod.Labels["team-b"] == "yes"
	})
	for fieldManager, key := range keys {
		if owners := labelOwners(pod, key); owners != fieldManager {
			t.Errorf("label %s is owned by %q, want its installation's field manager %q alone", key, owners, fieldManager)
		}
	}
}

// uninstallAtCleanup uninstalls a release when the test ends, taking its
// cluster-scoped objects with it (t.Context() is canceled by then).
func uninstallAtCleanup(t *testing.T, release, ns string) {
	t.Cleanup(func() {
		if out, err := exec.Command(helmBin, "--kubeconfig", cp.KubeconfigPath, "uninstall", release, "-n", ns, "--wait").CombinedOutput(); err != nil {
			t.Errorf("helm uninstall %s: %v\n%s", release, err, out)
		}
	})
}

// sharedNamespace holds the pod both installations write.
const sharedNamespace = "fm-shared"

// selectorsSetting is a selectors ConfigMap whose one rule sets key=yes on
// the pods of sharedNamespace.
func selectorsSetting(key string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata: {name: metawatch-selectors}
data:
  config.yaml: |
    watches:
    - kind: Pod
      namespaces: [%s]
    rules:
    - {name: set-%s, kinds: [Pod], setLabels: {%s: "yes"}}
`, sharedNamespace, key, key)
}

// labelOwners are the field managers whose managedFields entries own label
// key on pod, joined by commas.
func labelOwners(pod corev1.Pod, key string) string {
	var owners []string
	for _, f := range pod.ManagedFields {
		var fields struct {
			Metadata struct {
				Labels map[string]json.RawMessage `json:"f:labels"`
			} `json:"f:metadata"`
		}
		if f.FieldsV1 == nil || json.Unmarshal(f.FieldsV1.GetRawBytes(), &fields) != nil {
			continue
		}
		if _, owns := fields.Metadata.Labels["f:"+key]; owns {
			owners = append(owners, f.Manager)
		}
	}
	return strings.Join(owners, ",")
}

// containerArgs are the args of the metawatch container of the Deployment
// in manifests (helm template --show-only templates/deployment.yaml).
func containerArgs(t *testing.T, manifests string) []string {
	t.Helper()
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict([]byte(manifests), &d); err != nil {
		t.Fatalf("the rendered Deployment: %v\n%s", err, manifests)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "metawatch" {
			return c.Args
		}
	}
	t.Fatalf("the rendered Deployment has no metawatch container:\n%s", manifests)
	return nil
}

// installedArgs are the args of the first container of a Deployment in the
// cluster, as they are (deploymentArgs makes them runnable out of cluster).
func installedArgs(t *testing.T, ns, deployment string) []string {
	t.Helper()
	var args []string
	if err := json.Unmarshal([]byte(kubectl(t, "", "get", "deployment", "-n", ns, deployment, "-o", "jsonpath={.spec.template.spec.containers[0].args}")), &args); err != nil {
		t.Fatal(err)
	}
	return args
}

// flagValue is the value of the last --name=value in args, as the binary
// reads its flags; empty if there is none.
func flagValue(args []string, name string) string {
	value := ""
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			value = v
		}
	}
	return value
}

// chartAt is the chart of an earlier commit, from git: the test skips in a
// checkout whose history lacks it.
func chartAt(t *testing.T, commit string) string {
	t.Helper()
	dir := t.TempDir()
	archive := exec.Command("git", "-C", "../..", "archive", "--format=tar", commit, "deploy/helm/metawatch")
	untar := exec.Command("tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	archiveErr := archive.Run()
	if err := untar.Wait(); err != nil || archiveErr != nil {
		t.Skipf("this checkout's history lacks the chart of %s (%v, %v)", commit, archiveErr, err)
	}
	return filepath.Join(dir, "deploy", "helm", "metawatch")
}
