package main_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/metawatch/metawatch/pkg/controlplane"
	"github.com/metawatch/metawatch/pkg/testkit"
)

// The metrics endpoint is secure by default: HTTPS, and only a caller the API
// server authenticates (a bearer token) and authorizes (get /metrics) reads
// it, as the chart's ServiceMonitor does with its token and the
// metrics-reader ClusterRole.
func TestMetricsEndpointIsAuthenticatedAndAuthorized(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "scrape", nil)
	address := testkit.FreeAddress(t)
	cmd, stderr := start(t, "--kubeconfig", cp.KubeconfigPath, "--config-file", writeConfig(t, "watches: [{kind: Namespace}]\n"),
		"--metrics-bind-address", address, "--health-probe-bind-address", "0")
	defer stopProcess(t, cmd, stderr)

	reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "scrape-metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "scrape-prometheus"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: reader.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "scrape", Name: "prometheus"}}}
	if err := c.Create(context.Background(), reader); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), binding); err != nil {
		t.Fatal(err)
	}
	url := "https://" + address + "/metrics"
	cases := map[string]struct {
		token string
		want  int
	}{
		"no token":                          {token: "", want: http.StatusUnauthorized},
		"a token without get on /metrics":   {token: serviceAccountToken(t, "scrape", "stranger"), want: http.StatusForbidden},
		"a token bound to the metrics role": {token: serviceAccountToken(t, "scrape", "prometheus"), want: http.StatusOK},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var code int
			var body string
			testkit.WaitFor(t, url+" to answer "+http.StatusText(tc.want), func() bool {
				code, body = scrape(url, tc.token)
				return code == tc.want
			})
			if tc.want == http.StatusOK && !strings.Contains(body, "metawatch_config_generation") {
				t.Errorf("the metrics lack metawatch_config_generation:\n%.500s", body)
			}
		})
	}
}

func serviceAccountToken(t *testing.T, ns, name string) string {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(context.Background(), sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// scrape GETs url over HTTPS (the endpoint's certificate is self-signed) with a bearer token.
func scrape(url, token string) (int, string) {
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // the endpoint is self-signed
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
