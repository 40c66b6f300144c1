package helm_test

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

const releaseNS = "metawatch-system"

// helm install creates every object; metawatch, run out of cluster as the
// chart's ServiceAccount with the chart's flags, syncs and applies a rule (the
// RBAC is enough); a kind outside the RBAC is reported as forbidden by name (no
// more than that is granted); helm upgrade leaves the kubectl-applied selectors
// alone; helm uninstall leaves nothing cluster-scoped behind.
func TestInstallRunUpgradeUninstall(t *testing.T) {
	controlplane.SkipIfShort(t)
	kubectl(t, "", "create", "namespace", releaseNS)
	kubectl(t, "", "apply", "-n", releaseNS, "-f", repoFile(t, "selectors/default.yaml"))
	selectorsVersion := kubectl(t, "", "get", "configmap", "-n", releaseNS, "metawatch-selectors", "-o", "jsonpath={.metadata.resourceVersion}")

	helm(t, "install", "metawatch", chart, "-n", releaseNS, "--wait=false")
	kubectl(t, helm(t, "get", "manifest", "metawatch", "-n", releaseNS), "get", "-f", "-") // every object exists

	t.Run("the chart's RBAC is enough to sync and apply rules", func(t *testing.T) { runAsChart(t) })
	t.Run("a kind outside the chart's RBAC is forbidden by name", func(t *testing.T) { forbiddenKind(t) })

	helm(t, "upgrade", "metawatch", chart, "-n", releaseNS, "--set", "replicaCount=3,maxConcurrentReconciles=8")
	if got := kubectl(t, "", "get", "deployment", "-n", releaseNS, "metawatch", "-o", "jsonpath={.spec.replicas}"); got != "3" {
		t.Errorf("after the upgrade replicas = %s, want 3", got)
	}
	if got := kubectl(t, "", "get", "configmap", "-n", releaseNS, "metawatch-selectors", "-o", "jsonpath={.metadata.resourceVersion}"); got != selectorsVersion {
		t.Errorf("the upgrade touched the kubectl-applied selectors ConfigMap (resourceVersion %s -> %s)", selectorsVersion, got)
	}

	helm(t, "uninstall", "metawatch", "-n", releaseNS, "--wait")
	for _, kind := range []string{"clusterroles", "clusterrolebindings"} {
		if left := kubectl(t, "", "get", kind, "-l", "app.kubernetes.io/instance=metawatch", "-o", "name"); strings.TrimSpace(left) != "" {
			t.Errorf("helm uninstall left %s behind: %s", kind, left)
		}
	}
	kubectl(t, "", "get", "configmap", "-n", releaseNS, "metawatch-selectors") // still the user's
}

// runAsChart runs metawatch with the Deployment's flags as its ServiceAccount.
func runAsChart(t *testing.T) {
	kubectl(t, "", "create", "namespace", "chart-demo")
	kubectl(t, "", "label", "namespace", "chart-demo", "team=storefront")
	probe := testkit.FreeAddress(t)
	cmd := exec.Command(metawatch, append(chartArgs(t), "--kubeconfig", impersonatingKubeconfig(t, releaseNS, "metawatch"),
		"--health-probe-bind-address", probe, "--metrics-bind-address", "0")...)
	var stderr testkit.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stop(t, cmd, &stderr)
	testkit.WaitFor(t, "/readyz as the chart's ServiceAccount:\n"+stderr.String(), testkit.Timeout, func() bool {
		code, _ := testkit.HTTPGet("http://" + probe + "/readyz")
		return code == http.StatusOK
	})
	kubectl(t, demoPod, "apply", "-n", "chart-demo", "-f", "-")
	testkit.WaitFor(t, "the copy rule to label the demo pod, as the chart's ServiceAccount", testkit.Timeout, func() bool {
		return kubectl(t, "", "get", "pod", "-n", "chart-demo", "web", "-o", "jsonpath={.metadata.labels.team}") == "storefront"
	})
	if strings.Contains(stderr.String(), "is forbidden") {
		t.Errorf("metawatch hit a forbidden request as the chart's ServiceAccount:\n%s", stderr.String())
	}
	// The default 1Gi limit paces the GC at 90% of it.
	if !strings.Contains(stderr.String(), `"goMemoryLimitBytes":966367641`) {
		t.Errorf("the chart's memory limit did not set the GC's soft limit to 90%% of 1Gi:\n%s", stderr.String())
	}
}

// chartArgs are the metawatch flags the rendered Deployment runs with.
func chartArgs(t *testing.T) []string { return deploymentArgs(t, releaseNS, "metawatch") }

// deploymentArgs are the metawatch flags of a release's Deployment, but its
// metrics and probe addresses (the test's processes share one host), with
// $(CONTAINER_MEMORY_LIMIT) expanded as the kubelet does (the downward API
// gives the container's memory limit in bytes).
func deploymentArgs(t *testing.T, ns, deployment string) []string {
	t.Helper()
	var rendered []string // a JSON array: an argument may hold commas (--protected-keys=a,b)
	if err := json.Unmarshal([]byte(kubectl(t, "", "get", "deployment", "-n", ns, deployment, "-o", "jsonpath={.spec.template.spec.containers[0].args}")), &rendered); err != nil {
		t.Fatal(err)
	}
	limit := resource.MustParse(kubectl(t, "", "get", "deployment", "-n", ns, deployment, "-o", "jsonpath={.spec.template.spec.containers[0].resources.limits.memory}"))
	var args []string
	for _, a := range rendered {
		a = strings.ReplaceAll(a, "$(CONTAINER_MEMORY_LIMIT)", strconv.FormatInt(limit.Value(), 10))
		if !strings.HasPrefix(a, "--metrics-bind-address") && !strings.HasPrefix(a, "--health-probe-bind-address") {
			args = append(args, a)
		}
	}
	return args
}

// forbiddenKind: metawatch as the chart's ServiceAccount with a config that
// also watches Secrets serves Pods, and says Secrets are forbidden in /readyz;
// metawatch check says so before anything runs.
func forbiddenKind(t *testing.T) {
	config := filepath.Join(t.TempDir(), "secrets.yaml")
	if err := os.WriteFile(config, []byte("watches:\n- kind: Pod\n- kind: Secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := impersonatingKubeconfig(t, releaseNS, "metawatch")
	out, err := tryRun(t, "", metawatch, "check", "-f", config, "--kubeconfig", cp.KubeconfigPath, "--as", "system:serviceaccount:"+releaseNS+":metawatch")
	if err == nil || !strings.Contains(out, "list secrets (watches[1])") || !regexp.MustCompile(`Secret\s+secrets\s+all\s+NO\s+NO`).MatchString(out) {
		t.Errorf("metawatch check as the chart's ServiceAccount: exit %v, want 1 with a table denying list and watch on secrets:\n%s", err, out)
	}
	probe := testkit.FreeAddress(t)
	cmd := exec.Command(metawatch, "--kubeconfig", kubeconfig, "--config-file", config, "--health-probe-bind-address", probe, "--metrics-bind-address", "0")
	var stderr testkit.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stop(t, cmd, &stderr)
	var body string
	testkit.WaitFor(t, "/readyz to name the forbidden kind", testkit.Timeout, func() bool {
		_, body = testkit.HTTPGet("http://" + probe + "/readyz/configuration") // the aggregate /readyz withholds reasons
		return strings.Contains(body, "watches[1] (Secret): forbidden to list secrets cluster-wide")
	})
}

const demoPod = `
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec: {containers: [{name: web, image: registry.example/web:1}]}
`

func stop(t *testing.T, cmd *exec.Cmd, stderr *testkit.SyncBuffer) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("metawatch exited with %v after SIGTERM:\n%s", err, stderr.String())
	}
}

// selectors.create makes an initial ConfigMap at install; after that it is the
// user's: an upgrade does not touch it and uninstall leaves it.
func TestSelectorsCreateIsInstallOnly(t *testing.T) {
	controlplane.SkipIfShort(t)
	kubectl(t, "", "create", "namespace", "mw2")
	helm(t, "install", "mw2", chart, "-n", "mw2", "--set", "selectors.create=true,selectors.name=mw2-selectors,rbac.create=false,serviceAccount.create=false,serviceAccount.name=default")
	kubectl(t, "", "annotate", "configmap", "-n", "mw2", "mw2-selectors", "edited-by=kubectl")
	edited := kubectl(t, "", "get", "configmap", "-n", "mw2", "mw2-selectors", "-o", "jsonpath={.metadata.resourceVersion}")
	helm(t, "upgrade", "mw2", chart, "-n", "mw2", "--reuse-values", "--set", "selectors.config=watches: [{kind: Node}]")
	if got := kubectl(t, "", "get", "configmap", "-n", "mw2", "mw2-selectors", "-o", "jsonpath={.metadata.resourceVersion}"); got != edited {
		t.Errorf("helm upgrade changed the selectors ConfigMap (resourceVersion %s -> %s)", edited, got)
	}
	helm(t, "uninstall", "mw2", "-n", "mw2", "--wait")
	if got := kubectl(t, "", "get", "configmap", "-n", "mw2", "mw2-selectors", "-o", "jsonpath={.metadata.annotations.edited-by}"); got != "kubectl" {
		t.Errorf("after uninstall the selectors ConfigMap is gone or changed: %q", got)
	}
}
