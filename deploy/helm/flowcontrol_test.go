package helm_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// With flowControl.enabled, API Priority and Fairness serves the chart's
// ServiceAccount as the chart says: its writes at the chart's priority
// level, every request it makes on Leases in the release's namespace
// (renewals, the sharding ring's list, the member Lease deleted at
// shutdown) at the built-in leader-election level, and its other reads at
// neither. Before, the ring's list fell to the default level and the member
// Lease's delete queued behind a fan-out's writes.
func TestFlowControlServesWritesAndLeasesWhereTheChartSays(t *testing.T) {
	controlplane.SkipIfShort(t)
	const ns, release = "apf", "apf"
	kubectl(t, "", "create", "namespace", ns)
	manifests := helm(t, "template", release, chart, "-n", ns, "--set", "flowControl.enabled=true",
		"--show-only", "templates/flowcontrol.yaml")
	kubectl(t, manifests, "apply", "-f", "-")
	t.Cleanup(func() {
		_, _ = tryRun(t, manifests, cp.Binaries.Kubectl, "--kubeconfig", cp.KubeconfigPath, "delete", "-f", "-")
	})
	writes := kubectl(t, "", "get", "prioritylevelconfiguration", release+"-metawatch-writes", "-o", "jsonpath={.metadata.uid}")
	leases := kubectl(t, "", "get", "prioritylevelconfiguration", "leader-election", "-o", "jsonpath={.metadata.uid}")

	asChart, host := chartServiceAccountClient(t, ns, release+"-metawatch")
	cases := map[string]struct {
		method, path string
		want         string // the priority level's uid; "": neither of the two
	}{
		"a patch of a ConfigMap is a write":           {http.MethodPatch, "/api/v1/namespaces/" + ns + "/configmaps/any", writes},
		"a delete of a pod is a write":                {http.MethodDelete, "/api/v1/namespaces/" + ns + "/pods/any", writes},
		"a Lease renewal goes to leader election":     {http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases/any", leases},
		"the ring's list of Leases goes there too":    {http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases", leases},
		"the member Lease's delete goes there too":    {http.MethodDelete, "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases/any", leases},
		"a read of the selectors goes to neither one": {http.MethodGet, "/api/v1/namespaces/" + ns + "/configmaps/any", ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			// The API server's flow control picks new FlowSchemas up within seconds.
			var served string
			for deadline := time.Now().Add(testkit.Timeout); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				served = servedPriorityLevel(t, asChart, c.method, host+c.path)
				if (c.want != "" && served == c.want) || (c.want == "" && served != "" && served != writes && served != leases) {
					return
				}
			}
			t.Errorf("%s %s was served at the priority level with uid %q; want %q (writes %s, leader election %s; \"\": neither)",
				c.method, c.path, served, c.want, writes, leases)
		})
	}
}

// chartServiceAccountClient is an HTTP client that acts as the chart's
// ServiceAccount, and the API server's address.
func chartServiceAccountClient(t *testing.T, ns, serviceAccount string) (*http.Client, string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", impersonatingKubeconfig(t, ns, serviceAccount))
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client, strings.TrimSuffix(cfg.Host, "/")
}

// servedPriorityLevel sends a request with an empty object and returns the uid of the
// priority level that served it, whatever the answer (a 403 or 404 is
// classified all the same: flow control comes before authorization).
func servedPriorityLevel(t *testing.T, client *http.Client, method, url string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/merge-patch+json") // read by a PATCH only
	resp, err := client.Do(req)
	if err != nil {
		t.Logf("%s %s: %v", method, url, err)
		return ""
	}
	_ = resp.Body.Close()
	return resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)
}

// A FlowSchema precedence at or past the built-in service-accounts schema's
// (9000) would never be matched: the schema refuses it.
func TestFlowControlPrecedenceIsBelowTheServiceAccountsSchema(t *testing.T) {
	controlplane.SkipIfShort(t)
	cases := map[string]struct {
		precedence string
		refused    bool
	}{
		"the default is taken":              {"1000", false},
		"the last one matched before it":    {"8999", false},
		"the service-accounts schema's own": {"9000", true},
		"one past it":                       {"9500", true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := tryRun(t, "", helmBin, "template", "x", chart, "--set", "flowControl.enabled=true",
				"--set", "flowControl.matchingPrecedence="+c.precedence)
			if refused := err != nil && strings.Contains(out, "matchingPrecedence"); refused != c.refused {
				t.Errorf("matchingPrecedence=%s: refused %v, want %v: %v\n%s", c.precedence, refused, c.refused, err, out)
			}
		})
	}
}
