package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/metawatch/metawatch/hack/onenode"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// chartNamespace is where the test installs the chart.
const chartNamespace = "metawatch-system"

// probeCounts is the kubelet's prober_probe_total of one container:
// probe type (Liveness, Readiness) and result (successful, failed) to count.
type probeCounts map[string]map[string]int

var probeLine = regexp.MustCompile(`^prober_probe_total\{(.*)\} (\d+)`)
var probeLabel = regexp.MustCompile(`(\w+)="([^"]*)"`)

// kubeletProbes reads the probe results the kubelet reports for the chart's
// pods (its /metrics/probes, through the API server's node proxy), by pod.
func kubeletProbes(t *testing.T, cs kubernetes.Interface) map[string]probeCounts {
	t.Helper()
	ctx := t.Context()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 1 {
		t.Fatalf("listing the node: %v (%d nodes)", err, len(nodes.Items))
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", nodes.Items[0].Name, "proxy/metrics/probes").DoRaw(ctx)
	if err != nil {
		t.Fatalf("reading the kubelet's probe metrics: %v", err)
	}
	byPod := map[string]probeCounts{}
	for _, line := range strings.Split(string(raw), "\n") {
		m := probeLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range probeLabel.FindAllStringSubmatch(m[1], -1) {
			labels[l[1]] = l[2]
		}
		if labels["namespace"] != chartNamespace {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		pod := byPod[labels["pod"]]
		if pod == nil {
			pod = probeCounts{}
			byPod[labels["pod"]] = pod
		}
		if pod[labels["probe_type"]] == nil {
			pod[labels["probe_type"]] = map[string]int{}
		}
		pod[labels["probe_type"]][labels["result"]] += n
	}
	return byPod
}

// assertProbes checks what the kubelet reports for every running chart pod:
// liveness and readiness probes succeed (waiting for the first liveness
// probe: the chart delays it by 15 s and runs it every 20 s) and liveness
// never failed.
func assertProbes(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	var probes map[string]probeCounts
	testkit.WaitFor(t, "the kubelet to report a successful liveness and readiness probe of every chart pod", 90*time.Second, func() bool {
		probes = kubeletProbes(t, cs)
		for _, p := range chartPods(t, cs) {
			if probes[p.Name]["Liveness"]["successful"] == 0 || probes[p.Name]["Readiness"]["successful"] == 0 {
				return false
			}
		}
		return true
	})
	for _, p := range chartPods(t, cs) {
		got := probes[p.Name]
		t.Logf("kubelet's probes of %s: liveness %v, readiness %v; Ready=%v, restarts %d",
			p.Name, got["Liveness"], got["Readiness"], onenode.PodReady(&p), p.Status.ContainerStatuses[0].RestartCount)
		if got["Liveness"]["failed"] > 0 {
			t.Errorf("the kubelet reports a failed liveness probe of %s: %v", p.Name, got)
		}
		if !onenode.PodReady(&p) {
			t.Errorf("pod %s is not Ready", p.Name)
		}
	}
}

// badSelectorsKeepPodsReady applies a selectors ConfigMap with a broken
// label selector with kubectl, as a user would, and checks the InvalidConfig
// Event appears on it while no chart pod stops being Ready or restarts,
// through two more readiness probes of every pod; then puts the good one back.
func badSelectorsKeepPodsReady(t *testing.T, c *onenode.Cluster, cs kubernetes.Interface) {
	t.Helper()
	good, err := os.ReadFile("../../selectors/default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(good), "labelSelector: app.kubernetes.io/managed-by", "labelSelector: 'app in (web'", 1)
	if bad == string(good) {
		t.Fatal("selectors/default.yaml no longer has the labelSelector (on Deployments) this test breaks")
	}
	badFile := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(badFile, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	before := chartPods(t, cs)
	probesBefore := kubeletProbes(t, cs)
	notReady := watchNotReady(t, cs)
	edited := time.Now()
	run(t, c.Kubectl, "--kubeconfig", c.KubeconfigPath, "apply", "-n", chartNamespace, "-f", badFile)
	var note string
	testkit.WaitFor(t, "the InvalidConfig Event on the selectors ConfigMap", time.Minute, func() bool {
		note = invalidConfigEvent(t, cs, edited)
		return note != ""
	})
	t.Logf("bad selectors edit: InvalidConfig Event %s later: %q", time.Since(edited).Round(100*time.Millisecond), note)
	testkit.WaitFor(t, "two more readiness probes of every pod", time.Minute, func() bool {
		now := kubeletProbes(t, cs)
		for _, p := range before {
			if now[p.Name]["Readiness"]["successful"] < probesBefore[p.Name]["Readiness"]["successful"]+2 {
				return false
			}
		}
		return true
	})
	if seen := notReady(); seen != "" {
		t.Errorf("a pod stopped being Ready after the bad selectors edit: %s", seen)
	}
	for i, p := range chartPods(t, cs) {
		if p.Name != before[i].Name || p.Status.ContainerStatuses[0].RestartCount != before[i].Status.ContainerStatuses[0].RestartCount {
			t.Errorf("the chart's pods changed after the bad selectors edit: %s restarts %d, was %s restarts %d", p.Name,
				p.Status.ContainerStatuses[0].RestartCount, before[i].Name, before[i].Status.ContainerStatuses[0].RestartCount)
		}
	}
	run(t, c.Kubectl, "--kubeconfig", c.KubeconfigPath, "apply", "-n", chartNamespace, "-f", "../../selectors/default.yaml")
}

// invalidConfigEvent is the note of an InvalidConfig Event on the selectors
// ConfigMap recorded after since, or "".
func invalidConfigEvent(t *testing.T, cs kubernetes.Interface, since time.Time) string {
	t.Helper()
	events, err := cs.EventsV1().Events(chartNamespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		at := e.EventTime.Time
		if e.Series != nil {
			at = e.Series.LastObservedTime.Time
		}
		if e.Reason == "InvalidConfig" && e.Regarding.Kind == "ConfigMap" && e.Regarding.Name == "metawatch-selectors" &&
			!at.Before(since.Truncate(time.Second)) {
			return e.Note
		}
	}
	return ""
}

// watchNotReady watches the chart's pods until the returned function is
// called, which names the first pod version seen not Ready ("" if none).
func watchNotReady(t *testing.T, cs kubernetes.Interface) (stop func() string) {
	t.Helper()
	w, err := cs.CoreV1().Pods(chartNamespace).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan string, 1)
	go func() {
		first := ""
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && first == "" && !onenode.PodReady(p) {
				first = fmt.Sprintf("%s (%s, resourceVersion %s)", p.Name, ev.Type, p.ResourceVersion)
			}
		}
		seen <- first
	}()
	return func() string { w.Stop(); return <-seen }
}

// scrapeMetrics scrapes /metrics through the chart's metrics Service from
// inside the cluster's network, as a scraper in the cluster would: with the
// token of a ServiceAccount bound to the chart's metrics-reader ClusterRole
// it gets metawatch's metrics; without a token it gets 401, and with a
// ServiceAccount the chart's RBAC does not allow, 403.
func scrapeMetrics(t *testing.T, c *onenode.Cluster, cs kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	svc, err := cs.CoreV1().Services(chartNamespace).Get(ctx, "metawatch-metrics", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("https://%s:%d/metrics", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port)
	allowed := serviceAccountToken(t, cs, "scraper", "metawatch-metrics-reader")
	denied := serviceAccountToken(t, cs, "stranger", "")
	for name, tc := range map[string]struct {
		token string
		code  int
	}{
		"a scraper bound to the chart's metrics-reader role": {allowed, http.StatusOK},
		"a ServiceAccount without that role":                 {denied, http.StatusForbidden},
		"no token at all":                                    {"", http.StatusUnauthorized},
	} {
		code, body := scrape(t, c, url, tc.token)
		if code != tc.code {
			t.Errorf("%s: GET %s answered %d, want %d: %.200s", name, url, code, tc.code, body)
		}
		if tc.code == http.StatusOK && !strings.Contains(body, "process_cpu_seconds_total") {
			t.Errorf("%s: the scrape has no process_cpu_seconds_total: %.500s", name, body)
		}
	}
	// The Service picks a replica per connection; only the leader caches and
	// writes, so its metrics appear within a few scrapes.
	testkit.WaitFor(t, "a scrape through the Service to reach the leader (metawatch_cached_objects)", time.Minute, func() bool {
		code, body := scrape(t, c, url, allowed)
		return code == http.StatusOK && strings.Contains(body, "metawatch_cached_objects{")
	})
	t.Logf("metrics scraped through Service %s (%s) with the chart's metrics-reader role", svc.Name, url)
}

func scrape(t *testing.T, c *onenode.Cluster, url, token string) (int, string) {
	t.Helper()
	// A fresh connection per scrape, so a fresh pick of the Service's replica.
	code, body, err := testkit.Get(t.Context(), c.HTTPClient(), url, token, true)
	if err != nil {
		t.Fatal(err)
	}
	return code, string(body)
}

// serviceAccountToken creates ServiceAccount name in the default namespace,
// bound to clusterRole unless empty, and returns a token of it.
func serviceAccountToken(t *testing.T, cs kubernetes.Interface, name, clusterRole string) string {
	t.Helper()
	token, err := onenode.ServiceAccountToken(t.Context(), cs, "default", name, clusterRole, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// chartPods are the chart's running pods, by name.
func chartPods(t *testing.T, cs kubernetes.Interface) []corev1.Pod {
	t.Helper()
	list, err := cs.CoreV1().Pods(chartNamespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && len(p.Status.ContainerStatuses) > 0 {
			pods = append(pods, p)
		}
	}
	return pods
}
