package main_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
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
	if err := c.Create(t.Context(), reader); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), binding); err != nil {
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
			testkit.WaitFor(t, url+" to answer "+http.StatusText(tc.want), testkit.Timeout, func() bool {
				code, body = scrape(t.Context(), url, tc.token)
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
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(t.Context(), sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// scrape GETs url over HTTPS (the endpoint's certificate is self-signed) with a bearer token.
func scrape(ctx context.Context, url, token string) (int, string) {
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // the endpoint is self-signed
	code, body, err := testkit.Get(ctx, client, url, token, false)
	if err != nil {
		return 0, err.Error()
	}
	return code, string(body)
}

// servingName is the DNS name the test's certificates are issued for, the
// chart's metrics Service as its ServiceMonitor verifies it.
const servingName = "metawatch-metrics.metawatch-system.svc"

// With --metrics-cert-dir the metrics endpoint serves the certificate found
// there: a client that trusts only its CA and checks the Service's name
// completes the handshake and is shown that very certificate, and a client
// that trusts no CA is refused. When the Secret behind the directory is
// rotated (the kubelet swaps the volume's ..data link), the new certificate
// is served without a restart.
func TestMetricsServeTheCertificateOfTheCertDir(t *testing.T) {
	controlplane.SkipIfShort(t)
	dir := t.TempDir()
	first := newServingCert(t)
	mountSecret(t, dir, first)
	address := testkit.FreeAddress(t)
	cmd, stderr := start(t, "--kubeconfig", cp.KubeconfigPath, "--config-file", writeConfig(t, "watches: [{kind: Namespace}]\n"),
		"--metrics-bind-address", address, "--metrics-cert-dir", dir, "--health-probe-bind-address", "0")
	defer stopProcess(t, cmd, stderr)

	waitLeaf(t, address, first, stderr)
	_, err := handshake(address, x509.NewCertPool())
	if !errors.As(err, &x509.UnknownAuthorityError{}) {
		t.Errorf("a client trusting no CA: %v, want the handshake refused for an unknown authority", err)
	}

	second := newServingCert(t)
	mountSecret(t, dir, second)
	waitLeaf(t, address, second, stderr)
}

// --metrics-cert-dir that would not be served as given is refused at start,
// before the kubeconfig is read, naming the flag and what it wants.
func TestMetricsCertDirRefused(t *testing.T) {
	controlplane.SkipIfShort(t)
	empty := t.TempDir()
	cases := map[string]struct {
		args []string
		want []string
	}{
		"with --metrics-secure=false": {args: []string{"--metrics-cert-dir", empty, "--metrics-secure=false"},
			want: []string{"--metrics-cert-dir=" + empty + " needs --metrics-secure", "drop --metrics-secure=false"}},
		"without tls.crt and tls.key": {args: []string{"--metrics-cert-dir", empty},
			want: []string{"--metrics-cert-dir=" + empty + ": want tls.crt and tls.key there", filepath.Join(empty, "tls.crt")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := runToExit(t, append([]string{"--kubeconfig", "/nonexistent/kubeconfig", "--config-file", writeConfig(t, "watches: [{kind: Pod}]\n")}, tc.args...)...)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(out, w) {
					t.Errorf("metawatch %v: %v, want a non-zero exit saying %q; output:\n%s", tc.args, err, w, out)
				}
			}
		})
	}
}

// servingCert is a kubernetes.io/tls Secret's data for servingName and
// 127.0.0.1, from a CA of its own, and the certificate's DER.
type servingCert struct {
	crt, key, ca []byte // PEM, as the Secret's tls.crt, tls.key and ca.crt
	leaf         []byte // DER of the serving certificate
	roots        *x509.CertPool
}

func newServingCert(t *testing.T) servingCert {
	t.Helper()
	chain, key, err := certutil.GenerateSelfSignedCertKey(servingName, []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	leaf, rest := pem.Decode(chain) // the serving certificate, then its CA
	c := servingCert{crt: pem.EncodeToMemory(leaf), key: key, ca: rest, leaf: leaf.Bytes, roots: x509.NewCertPool()}
	if !c.roots.AppendCertsFromPEM(c.ca) {
		t.Fatalf("no CA after the serving certificate:\n%s", chain)
	}
	return c
}

// mountSecret publishes c in dir as the kubelet does a Secret volume: the
// keys are written to a new hidden directory, which the ..data link, which
// tls.crt, tls.key and ca.crt point through, is swapped to at once.
func mountSecret(t *testing.T, dir string, c servingCert) {
	t.Helper()
	version, err := os.MkdirTemp(dir, "..version-")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": c.crt, "tls.key": c.key, "ca.crt": c.ca} {
		if err := os.WriteFile(filepath.Join(version, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrExist) {
			t.Fatal(err)
		}
	}
	swap := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(version), swap); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(swap, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

// waitLeaf waits until the endpoint at address presents c's certificate to a
// client trusting c's CA only.
func waitLeaf(t *testing.T, address string, c servingCert, log *testkit.SyncBuffer) {
	t.Helper()
	var err error
	defer func() { // WaitFor's Fatalf runs it too
		if t.Failed() {
			t.Logf("the last handshake: %v; metawatch said:\n%s", err, log)
		}
	}()
	testkit.WaitFor(t, "https://"+address+" to present the certificate of --metrics-cert-dir", testkit.Timeout, func() bool {
		var got []byte
		got, err = handshake(address, c.roots)
		return err == nil && bytes.Equal(got, c.leaf)
	})
}

// handshake connects to address over TLS, trusting roots only and checking
// the certificate names servingName, and returns the certificate presented.
func handshake(address string, roots *x509.CertPool) ([]byte, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", address,
		&tls.Config{RootCAs: roots, ServerName: servingName, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Raw, nil
}
