package helm_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// valuesFiles are the chart's default values (no file) and every file in ci/.
func valuesFiles(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chart, "ci", "*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("want at least two values files in %s/ci: %v %v", chart, files, err)
	}
	out := map[string][]string{"default values": nil}
	for _, f := range files {
		out[filepath.Base(f)] = []string{"-f", f}
	}
	return out
}

func TestLintStrict(t *testing.T) {
	controlplane.SkipIfShort(t)
	for name, args := range valuesFiles(t) {
		t.Run(name, func(t *testing.T) {
			helm(t, append([]string{"lint", "--strict", chart}, args...)...)
		})
	}
}

// The schema rejects keys it does not know: a typo must not silently do nothing.
func TestSchemaRejectsUnknownValues(t *testing.T) {
	controlplane.SkipIfShort(t)
	for _, set := range []string{"replicas=3", "rbac.kinds[0].verbs=list", "image.tagg=1"} {
		out, err := tryRun(t, "", helmBin, "template", "x", chart, "--set", set)
		if err == nil || !strings.Contains(out, "additional properties") {
			t.Errorf("--set %s: want a schema error about additional properties, got %v:\n%s", set, err, out)
		}
	}
}

// The values of chart 0.1.0 that this chart replaced are refused by name,
// with the fix, not as unknown keys: rbac.watch and rbac.patch listed
// resources, and rbac.kinds lists kinds, which the chart cannot guess.
func TestOldChartValuesAreRefusedByName(t *testing.T) {
	controlplane.SkipIfShort(t)
	for _, set := range []string{"rbac.watch[0].apiGroup=apps", "rbac.patch[0].apiGroup=", "rbac.create=false,rbac.watch[0].apiGroup="} {
		out, err := tryRun(t, "", helmBin, "template", "x", chart, "--set", set)
		for _, want := range []string{"rbac.watch and rbac.patch (chart 0.1.0) are replaced by rbac.kinds", "--chart-values", "Upgrading from 0.1.0"} {
			if err == nil || !strings.Contains(out, want) {
				t.Errorf("--set %s: %v, want a failure saying %q:\n%s", set, err, want, out)
			}
		}
	}
}

// Every rendering the API server accepts (server-side dry run), with each
// values file, in a namespace that enforces the "restricted" Pod Security Standard.
func TestRenderedManifestsPassServerSideDryRun(t *testing.T) {
	controlplane.SkipIfShort(t)
	kubectl(t, "", "create", "namespace", "render")
	kubectl(t, "", "label", "namespace", "render", "pod-security.kubernetes.io/enforce=restricted", "pod-security.kubernetes.io/warn=restricted")
	applyStubCRDs(t)
	for name, args := range valuesFiles(t) {
		t.Run(name, func(t *testing.T) {
			manifests := helm(t, append([]string{"template", "metawatch", chart, "-n", "render"}, args...)...)
			if rbac := rbacDocuments(manifests); strings.Contains(rbac, `"*"`) || strings.Contains(rbac, "'*'") {
				t.Errorf("the rendered RBAC has a wildcard:\n%s", rbac)
			}
			cmd := exec.Command(cp.Binaries.Kubectl, "--kubeconfig", cp.KubeconfigPath, "apply", "--dry-run=server", "-n", "render", "-f", "-")
			cmd.Stdin = strings.NewReader(manifests)
			out, err := cmd.CombinedOutput() // warnings, such as Pod Security ones, go to stderr
			if err != nil {
				t.Fatalf("kubectl apply --dry-run=server: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "deployment.apps/") {
				t.Errorf("the dry run did not include the Deployment:\n%s", out)
			}
			if strings.Contains(manifests, "\nkind: FlowSchema\n") && !strings.Contains(string(out), "flowschema.flowcontrol.apiserver.k8s.io/") {
				t.Errorf("the dry run did not include the FlowSchema of flowControl.enabled:\n%s", out)
			}
			if strings.Contains(string(out), "PodSecurity") {
				t.Errorf("the Deployment does not meet the restricted Pod Security Standard:\n%s", out)
			}
		})
	}
}

// rbacDocuments are the Roles and ClusterRoles of manifests (a FlowSchema,
// which matches requests, not grants, may match every resource).
func rbacDocuments(manifests string) string {
	var rbac []string
	for _, doc := range strings.Split(manifests, "\n---") {
		if strings.Contains(doc, "\nkind: ClusterRole\n") || strings.Contains(doc, "\nkind: Role\n") {
			rbac = append(rbac, doc)
		}
	}
	return strings.Join(rbac, "\n---")
}

// applyStubCRDs applies stubCRD for the kinds of other projects the chart
// renders, the Prometheus Operator's ServiceMonitor and cert-manager's
// Certificate, and waits until they are served.
func applyStubCRDs(t *testing.T) {
	t.Helper()
	for _, crd := range []struct{ group, kind, plural string }{
		{"monitoring.coreos.com", "ServiceMonitor", "servicemonitors"},
		{"cert-manager.io", "Certificate", "certificates"},
	} {
		kubectl(t, stubCRD(crd.group, crd.kind, crd.plural), "apply", "-f", "-")
		testkit.WaitFor(t, "the "+crd.kind+" CRD", testkit.Timeout, func() bool {
			_, err := tryRun(t, "", cp.Binaries.Kubectl, "--kubeconfig", cp.KubeconfigPath, "get", crd.plural+"."+crd.group, "-A")
			return err == nil
		})
	}
}

// stubCRD is a minimal stand-in for a CRD of another project (the Prometheus
// Operator's ServiceMonitor, cert-manager's Certificate) that accepts any
// object, so that the chart's objects of that kind can be dry-run.
func stubCRD(group, kind, plural string) string {
	return fmt.Sprintf(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[3]s.%[1]s}
spec:
  group: %[1]s
  names: {kind: %[2]s, listKind: %[2]sList, plural: %[3]s, singular: %[4]s}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, group, kind, plural, strings.ToLower(kind))
}

// The container's resources pace the Go runtime: the memory limit sets the
// GC's soft limit (--container-memory-limit from the downward API), the CPU
// request GOMAXPROCS; without them nothing is set.
func TestResourcesPaceTheRuntime(t *testing.T) {
	controlplane.SkipIfShort(t)
	paced := []string{
		"--container-memory-limit=$(CONTAINER_MEMORY_LIMIT)",
		"resourceFieldRef: {containerName: metawatch, resource: limits.memory}",
		"- name: GOMAXPROCS",
		`resourceFieldRef: {containerName: metawatch, resource: requests.cpu, divisor: "1"}`,
	}
	cases := map[string]struct {
		set  []string
		want bool
	}{
		"the default resources pace it": {want: true},
		"no resources pace nothing":     {set: []string{"--set", "resources.requests=null", "--set", "resources.limits=null"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			manifests := helm(t, append([]string{"template", "metawatch", chart, "--show-only", "templates/deployment.yaml"}, tc.set...)...)
			for _, line := range paced {
				if strings.Contains(manifests, line) != tc.want {
					t.Errorf("rendered %q: %v, want %v:\n%s", line, !tc.want, tc.want, manifests)
				}
			}
		})
	}
}

// leaderElection.warmStandby passes --warm-standby where there is a standby
// to keep warm: with leader election, not when sharded or without it (the
// binary would refuse the flag there).
func TestWarmStandbyFlag(t *testing.T) {
	controlplane.SkipIfShort(t)
	for name, tc := range map[string]struct {
		set  string
		want bool
	}{
		"off by default":                      {set: "replicaCount=2", want: false},
		"on with leader election":             {set: "leaderElection.warmStandby=true", want: true},
		"not without leader election":         {set: "leaderElection.enabled=false,leaderElection.warmStandby=true", want: false},
		"not when sharding replaces election": {set: "sharding.enabled=true,leaderElection.warmStandby=true", want: false},
	} {
		t.Run(name, func(t *testing.T) {
			manifests := helm(t, "template", "metawatch", chart, "-n", "render", "--set", tc.set)
			if got := strings.Contains(manifests, "--warm-standby"); got != tc.want {
				t.Errorf("--set %s: --warm-standby rendered: %t, want %t", tc.set, got, tc.want)
			}
		})
	}
}

// writeRate.retryAfterMax becomes --write-retry-after-max; a duration that
// is not positive is refused at install, not by metawatch at start (a Pod
// failing to start).
func TestRetryAfterMaxFlag(t *testing.T) {
	controlplane.SkipIfShort(t)
	for set, want := range map[string]string{
		"replicaCount=1":                "--write-retry-after-max=30s",
		"writeRate.retryAfterMax=1m30s": "--write-retry-after-max=1m30s",
		"writeRate.retryAfterMax=500ms": "--write-retry-after-max=500ms",
	} {
		if manifests := helm(t, "template", "metawatch", chart, "--show-only", "templates/deployment.yaml", "--set", set); !strings.Contains(manifests, want) {
			t.Errorf("--set %s: %s not rendered", set, want)
		}
	}
	for _, set := range []string{"writeRate.retryAfterMax=0s", "writeRate.retryAfterMax=0m0.0s", "writeRate.retryAfterMax=thirty", "writeRate.retryAfterMax=-5s"} {
		if out, err := tryRun(t, "", helmBin, "template", "x", chart, "--set", set); err == nil || !strings.Contains(out, "/writeRate/retryAfterMax") {
			t.Errorf("--set %s: %v, want the schema to refuse it:\n%s", set, err, out)
		}
	}
}

// rbac.kinds with write: true become --writable-kinds with their API group
// outside the core group: a custom resource called like a built-in kind is
// then allowed by its own entry only.
func TestWritableKindsCarryTheirGroup(t *testing.T) {
	controlplane.SkipIfShort(t)
	for name, tc := range map[string]struct{ set, want string }{
		"the defaults": {set: "replicaCount=1", want: "--writable-kinds=Pod,Deployment.apps"},
		"a custom resource called like a built-in kind": {
			set:  "rbac.kinds[0].kind=Pod,rbac.kinds[0].resource=pods,rbac.kinds[0].write=true,rbac.kinds[1].kind=Deployment,rbac.kinds[1].apiGroup=evil.example.com,rbac.kinds[1].resource=deployments,rbac.kinds[1].write=true",
			want: "--writable-kinds=Pod,Deployment.evil.example.com",
		},
	} {
		t.Run(name, func(t *testing.T) {
			if manifests := helm(t, "template", "metawatch", chart, "-n", "render", "--set", tc.set); !strings.Contains(manifests, tc.want) {
				t.Errorf("--set %s: %s not rendered", tc.set, tc.want)
			}
		})
	}
}

// The chart installs on the Kubernetes versions make test-versions proves
// (docs/kubernetes-versions.md), from the oldest, and refuses an older one
// by name.
func TestChartInstallsFromTheOldestProvenVersion(t *testing.T) {
	controlplane.SkipIfShort(t)
	for version, wantRefused := range map[string]bool{"1.33.9": true, "1.34.0": false, "1.37.2": false} {
		t.Run(version, func(t *testing.T) {
			out, err := tryRun(t, "", helmBin, "template", "x", chart, "--kube-version", version)
			if refused := err != nil && strings.Contains(out, "incompatible with Kubernetes"); refused != wantRefused {
				t.Errorf("helm template --kube-version %s: refused %v, want %v: %v\n%s", version, refused, wantRefused, err, out)
			}
		})
	}
}

// The chart's OpenReports CRDs are those of the openreports/reports-api
// module metawatch's types come from, and are rendered only when asked for
// (Kyverno or Policy Reporter may own them already).
func TestOpenReportsCRDsAreTheModulesAndOptional(t *testing.T) {
	controlplane.SkipIfShort(t) // helm is built by TestMain only then
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/openreports/reports-api").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/openreports/reports-api: %v", err)
	}
	module := strings.TrimSpace(string(out))
	for _, name := range []string{"openreports.io_reports.yaml", "openreports.io_clusterreports.yaml"} {
		want, err := os.ReadFile(filepath.Join(module, "config", "crd", name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(chart, "openreports", name))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s in the chart differs from the module's %s: copy it again (cp %s %s)", name, module, filepath.Join(module, "config", "crd", name), filepath.Join(chart, "openreports"))
		}
	}
	for name, tc := range map[string]struct {
		set  []string
		crds int
	}{
		"by default no CRD":                           {nil, 0},
		"enabled alone uses the CRDs there":           {[]string{"--set", "openReports.enabled=true"}, 0},
		"installCRDs renders both, kept on uninstall": {[]string{"--set", "openReports.enabled=true", "--set", "openReports.installCRDs=true"}, 2},
	} {
		t.Run(name, func(t *testing.T) {
			manifests := helm(t, append([]string{"template", "metawatch", chart, "-n", "render"}, tc.set...)...)
			if n := strings.Count(manifests, "\nkind: CustomResourceDefinition\n"); n != tc.crds {
				t.Errorf("%d CRDs rendered, want %d", n, tc.crds)
			}
			if n := strings.Count(manifests, "helm.sh/resource-policy: keep"); tc.crds > 0 && n < tc.crds {
				t.Errorf("the CRDs are not kept on uninstall (%d keep annotations)", n)
			}
		})
	}
}
