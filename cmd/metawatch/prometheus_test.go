package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// A real Prometheus (Debian's) scrapes metawatch through its authenticated
// metrics endpoint, as the chart's ServiceMonitor does, during a short run
// that exercises the rules, a conflict, a requirement and a rejected edit;
// then every panel of the chart's dashboard has data.
func TestPrometheusScrapesMetawatchAndEveryPanelHasData(t *testing.T) {
	controlplane.SkipIfShort(t)
	p, err := controlplane.EnsurePrometheus(t.Context(), os.Stderr)
	if err != nil {
		t.Skipf("no Prometheus: %v", err)
	}
	const ns = "prom"
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, ns, map[string]string{"team": "red"})
	for i := range 3 {
		testkit.Pod(t, c, ns, fmt.Sprintf("web-%d", i), nil)
	}
	held := testkit.Pod(t, c, ns, "held", nil)
	testkit.MergePatch(t, c, held, "other-controller", `{"metadata":{"labels":{"team":"blue"}}}`)
	config := "watches:\n- kind: Pod\n  namespaces: [prom]\nrules:\n- {name: team, kinds: [Pod], copyFromNamespace: {labels: [team]}}\n" +
		"- {name: owner, kinds: [Pod], requireLabels: [owner]}\n" +
		"- {name: tier, kinds: [Pod], atCreation: true, setLabels: {tier: gold}}\n"
	applySelectors(t, c, ns, config)

	metricsAddress := testkit.FreeAddress(t)
	cmd, stderr := startWithEnv(t, []string{"POD_NAME=metawatch-0"}, "--kubeconfig", cp.KubeconfigPath, "--config-map", ns+"/selectors",
		"--sharding", "--leader-election-namespace", ns, "--allow-at-creation", "--health-probe-bind-address", "0", "--metrics-bind-address", metricsAddress)
	defer stopProcess(t, cmd, stderr)
	token := scraperToken(t, ns)
	prom := startPrometheus(t, p, metricsAddress, token)

	testkit.WaitFor(t, "the rules to set team", testkit.Timeout, func() bool {
		var pod corev1.Pod
		return c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web-0"}, &pod) == nil && pod.Labels["team"] == "red"
	})
	// A pod created through the admission policy; then an edit that is
	// rejected (the running configuration stays); then a dozen scrapes.
	testkit.Pod(t, c, ns, "created", nil)
	applySelectors(t, c, ns, "watches: [{kind: Pod, labelSelector: 'app in (web'}]\n")

	// Every panel's data, the rejected edit and the chart's alert pending
	// (it fires after its 5 minutes) come with Prometheus's scrapes and rule
	// evaluations, every second: waited for, however slow the machine.
	const rejected = `metawatch_config_last_reload_successful == 0`
	const alert = `ALERTS{alertname="MetawatchConfigurationRejected",alertstate="pending",namespace="prom"}`
	panels := dashboardPanels(t)
	var empty []string
	var rejectedSeries, alertSeries int
	for deadline := time.Now().Add(2 * testkit.Timeout); ; time.Sleep(time.Second) {
		empty = nil
		for _, panel := range panels {
			if !panelHasData(t, prom, panel.exprs) {
				empty = append(empty, panel.title)
			}
		}
		rejectedSeries, alertSeries = prom.query(t, rejected), prom.query(t, alert)
		if len(empty) == 0 && rejectedSeries == 1 && alertSeries == 1 || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("%d panels, without data: %v", len(panels), empty)
	if len(empty) > 0 {
		t.Errorf("panels without data: %s\nmetawatch's log:\n%s", strings.Join(empty, "; "), stderr.String())
	}
	if rejectedSeries != 1 {
		t.Errorf("the rejected edit: %s returned %d series, want 1", rejected, rejectedSeries)
	}
	if alertSeries != 1 {
		t.Errorf("the chart's MetawatchConfigurationRejected alert is not pending on the live metrics (%d series)", alertSeries)
	}
}

// panelHasData reports whether one of a panel's expressions returns a series.
func panelHasData(t *testing.T, prom prometheus, exprs []string) bool {
	for _, expr := range exprs {
		if prom.query(t, strings.ReplaceAll(expr, "$job", ".*")) > 0 {
			return true
		}
	}
	return false
}

// scraperToken is a token of a ServiceAccount that may get /metrics.
func scraperToken(t *testing.T, ns string) string {
	c := testkit.Client(t, cp.Config)
	reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-prometheus"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: reader.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "prometheus"}}}
	if err := c.Create(t.Context(), reader); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), binding); err != nil {
		t.Fatal(err)
	}
	return serviceAccountToken(t, ns, "prometheus")
}

type prometheus struct{ address string }

// startPrometheus runs Prometheus scraping target every second over HTTPS
// with token, as the job the chart's ServiceMonitor makes for a release
// "mw" in namespace prom.
func startPrometheus(t *testing.T, p controlplane.Prometheus, target, token string) prometheus {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	helm, err := controlplane.EnsureHelm(t.Context(), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yml"), testkit.ChartAlertRules(t, helm, "../../deploy/helm/metawatch", "mw", "prom"), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [rules.yml]
scrape_configs:
- job_name: mw-metawatch-metrics
  scheme: https
  authorization: {credentials_file: %s}
  tls_config: {insecure_skip_verify: true}
  static_configs:
  - targets: [%q]
    labels: {namespace: prom, pod: metawatch-0}
`, tokenFile, target)
	confFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	address := testkit.FreeAddress(t)
	cmd := exec.Command(p.Server, "--config.file="+confFile, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+address)
	log := &testkit.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus:\n%s", log.String())
		}
	})
	prom := prometheus{address: address}
	testkit.WaitFor(t, "Prometheus to scrape metawatch", testkit.Timeout, func() bool { return prom.query(t, `up{job="mw-metawatch-metrics"} == 1`) == 1 })
	return prom
}

// query is the number of series expr returns now.
func (p prometheus) query(t *testing.T, expr string) int {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.address+"/api/v1/query?query="+url.QueryEscape(expr), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0 // not up yet
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode == http.StatusServiceUnavailable {
		return 0 // starting up
	}
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	if answer.Status != "success" {
		t.Fatalf("%s: %s", expr, answer.Error)
	}
	return len(answer.Data.Result)
}

type panel struct {
	title string
	exprs []string
}

func dashboardPanels(t *testing.T) []panel {
	raw, err := os.ReadFile("../../deploy/helm/metawatch/dashboards/metawatch.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	var out []panel
	for _, p := range d.Panels {
		pn := panel{title: p.Title}
		for _, tg := range p.Targets {
			pn.exprs = append(pn.exprs, tg.Expr)
		}
		out = append(out, pn)
	}
	return out
}
