package helm_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// rbacTemplates are the chart's RBAC: what the review judges.
var rbacTemplates = []string{"templates/serviceaccount.yaml", "templates/clusterrole.yaml", "templates/clusterrolebinding.yaml", "templates/role.yaml"}

// For every example in selectors/, the chart rendered with the rbac.kinds
// that `metawatch check --chart-values` derives from it grants its
// ServiceAccount exactly what metawatch needs: `metawatch check --rbac`, as
// that ServiceAccount and with the Deployment's guardrail flags, finds
// nothing missing and nothing to spare.
func TestChartRBACIsExactForEachExample(t *testing.T) {
	controlplane.SkipIfShort(t)
	examples, err := filepath.Glob(repoFile(t, "selectors") + "/*.yaml")
	if err != nil || len(examples) < 3 {
		t.Fatalf("want the examples of selectors/: %v %v", examples, err)
	}
	for i, example := range examples {
		t.Run(filepath.Base(example), func(t *testing.T) {
			values := filepath.Join(t.TempDir(), "values.yaml")
			out, err := checkAs(example, "", succeeds, "--chart-values", values, "--writable-kinds=*,Node,Namespace", "--allow-at-creation")
			if err != nil {
				t.Fatalf("check --chart-values: %v\n%s", err, out)
			}
			ns := fmt.Sprintf("rbac-%d", i)
			flags := installRBAC(t, ns, "-f", values)
			exact := func(out string, err error) bool {
				return err == nil && strings.Contains(out, "RBAC: nothing beyond what the configuration needs")
			}
			out, err = checkAs(example, "system:serviceaccount:"+ns+":"+ns+"-metawatch", exact, append(flags, "--rbac")...)
			if !exact(out, err) {
				t.Errorf("the chart's RBAC for %s is not exact (%v):\n%s", filepath.Base(example), err, out)
			}
		})
	}
}

// With openReports.enabled, the chart grants what the reports' writer
// needs and nothing more: the review, told --open-reports as the Deployment
// passes it, finds it exact; told nothing, it finds the grants spare.
func TestChartRBACIsExactWithOpenReports(t *testing.T) {
	controlplane.SkipIfShort(t)
	example := repoFile(t, "selectors/require-owner.yaml")
	values := filepath.Join(t.TempDir(), "values.yaml")
	if out, err := checkAs(example, "", succeeds, "--chart-values", values); err != nil {
		t.Fatalf("check --chart-values: %v\n%s", err, out)
	}
	flags := installRBAC(t, "rbac-reports", "-f", values, "--set", "openReports.enabled=true")
	if !slices.Contains(flags, "--open-reports=true") {
		t.Fatalf("the Deployment's flags %v: want --open-reports=true", flags)
	}
	sa := "system:serviceaccount:rbac-reports:rbac-reports-metawatch"
	exact := func(out string, err error) bool {
		return err == nil && strings.Contains(out, "RBAC: nothing beyond what the configuration needs")
	}
	if out, err := checkAs(example, sa, exact, append(flags, "--rbac")...); !exact(out, err) {
		t.Errorf("the chart's RBAC with openReports.enabled is not exact (%v):\n%s", err, out)
	}
	spare := func(out string, err error) bool {
		return err != nil && strings.Contains(out, "create reports.openreports.io")
	}
	without := slices.DeleteFunc(slices.Clone(flags), func(f string) bool { return strings.HasPrefix(f, "--open-reports=") })
	if out, err := checkAs(example, sa, spare, append(without, "--rbac", "--open-reports=false")...); !spare(out, err) {
		t.Errorf("without --open-reports the review should find the report grants spare, got %v:\n%s", err, out)
	}
}

// The review fails both ways: the default values grant more than an
// audit-only example needs, and less than a Node example needs.
func TestChartRBACReviewFindsSpareAndMissing(t *testing.T) {
	controlplane.SkipIfShort(t)
	flags := installRBAC(t, "rbac-defaults")
	sa := "system:serviceaccount:rbac-defaults:rbac-defaults-metawatch"
	spare := func(out string, err error) bool {
		return err != nil && strings.Contains(out, "holds more than the configuration needs") && strings.Contains(out, "patch deployments.apps")
	}
	out, err := checkAs(repoFile(t, "selectors/require-owner.yaml"), sa, spare, append(flags, "--rbac")...)
	if !spare(out, err) {
		t.Errorf("the default values for an audit of Deployments: want a spare patch deployments.apps, got %v:\n%s", err, out)
	}
	missing := func(out string, err error) bool {
		return err != nil && strings.Contains(out, "the identity lacks permissions: list nodes")
	}
	out, err = checkAs(repoFile(t, "selectors/spot-nodes.yaml"), sa, missing, append(flags, "--rbac", "--writable-kinds=Node")...)
	if !missing(out, err) {
		t.Errorf("the default values for a Node rule: want list nodes missing, got %v:\n%s", err, out)
	}
}

// The chart's default protected keys are metawatch's own defaults.
func TestChartProtectsWhatMetawatchProtects(t *testing.T) {
	controlplane.SkipIfShort(t) // helm is built by TestMain only then
	var values struct {
		Guardrails struct{ ProtectedKeys []string }
	}
	if err := yaml.Unmarshal([]byte(helm(t, "show", "values", chart)), &values); err != nil {
		t.Fatal(err)
	}
	if want := config.DefaultGuardrails().ProtectedKeys; !slices.Equal(values.Guardrails.ProtectedKeys, want) {
		t.Errorf("guardrails.protectedKeys = %v, want metawatch's --protected-keys default %v", values.Guardrails.ProtectedKeys, want)
	}
}

// installRBAC renders the chart's RBAC as release ns in namespace ns, applies
// it, and returns the Deployment's guardrail flags.
func installRBAC(t *testing.T, ns string, values ...string) []string {
	t.Helper()
	kubectl(t, "", "create", "namespace", ns)
	args := append([]string{"template", ns, chart, "-n", ns}, values...)
	show := args
	for _, tpl := range rbacTemplates {
		show = append(show, "--show-only", tpl)
	}
	kubectl(t, helm(t, show...), "apply", "-n", ns, "-f", "-")
	deployment := helm(t, append(args, "--show-only", "templates/deployment.yaml")...)
	var flags []string
	for _, line := range strings.Split(deployment, "\n") {
		arg := strings.TrimPrefix(strings.TrimSpace(line), "- ")
		for _, f := range []string{"--writable-kinds=", "--protected-keys=", "--allowed-reserved-keys=", "--allow-at-creation=", "--open-reports="} {
			if strings.HasPrefix(arg, f) {
				flags = append(flags, arg)
			}
		}
	}
	if len(flags) != 5 {
		t.Fatalf("the Deployment's guardrail and report flags: got %v", flags)
	}
	return flags
}

// checkAs runs metawatch check on example against the control plane, as the
// user as (the admin if empty); the authorizer sees new bindings within
// moments, so the review is asked again until its answer is the one wanted
// (testkit.Timeout at most), and the last answer returned.
func checkAs(example, as string, wanted func(out string, err error) bool, flags ...string) (string, error) {
	args := []string{"check", "-f", example, "--kubeconfig", cp.KubeconfigPath}
	if as != "" {
		args = append(args, "--as", as)
	}
	for deadline := time.Now().Add(testkit.Timeout); ; time.Sleep(300 * time.Millisecond) {
		out, err := exec.Command(metawatch, append(args, flags...)...).CombinedOutput()
		if wanted(string(out), err) || time.Now().After(deadline) {
			return string(out), err
		}
	}
}

// succeeds is a check's answer that is a pass.
func succeeds(_ string, err error) bool { return err == nil }
