package apiserver_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/metawatch/metawatch/pkg/apiserver"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

var pods = schema.GroupResource{Resource: "pods"}

// The API server's answers that mean "not now" (overloaded, timed out,
// unavailable) are unreachable, as a connection refused is; an answer
// about the request (not found, forbidden, invalid, a conflict) is not,
// and neither is no error. Wrapping an error keeps its verdict.
func TestUnreachableTellsTheServerFromItsAnswers(t *testing.T) {
	cases := map[string]struct {
		err  error
		want bool
	}{
		"no error is not unreachable":                         {err: nil, want: false},
		"a plain error is not unreachable":                    {err: errors.New("parsing the kubeconfig"), want: false},
		"a 503 Service Unavailable is unreachable":            {err: apierrors.NewServiceUnavailable("starting"), want: true},
		"a 429 Too Many Requests is unreachable":              {err: apierrors.NewTooManyRequests("overloaded", 1), want: true},
		"a 504 server timeout is unreachable":                 {err: apierrors.NewServerTimeout(pods, "list", 1), want: true},
		"a request timeout is unreachable":                    {err: apierrors.NewTimeoutError("slow", 1), want: true},
		"a refused connection is unreachable":                 {err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}, want: true},
		"a 404 Not Found is an answer":                        {err: apierrors.NewNotFound(pods, "p"), want: false},
		"a 403 Forbidden is an answer":                        {err: apierrors.NewForbidden(pods, "p", errors.New("RBAC")), want: false},
		"a 409 Conflict is an answer":                         {err: apierrors.NewConflict(pods, "p", errors.New("changed")), want: false},
		"a 401 Unauthorized is an answer":                     {err: apierrors.NewUnauthorized("bad token"), want: false},
		"a wrapped 503 stays unreachable":                     {err: fmt.Errorf("reading the ConfigMap: %w", apierrors.NewServiceUnavailable("x")), want: true},
		"a wrapped 403 stays an answer":                       {err: fmt.Errorf("reading the ConfigMap: %w", apierrors.NewForbidden(pods, "p", errors.New("RBAC"))), want: false},
		"a wrapped refused connection stays unreachable":      {err: fmt.Errorf("discovery: %w", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("refused")}), want: true},
		"a refused connection behind a URL stays unreachable": {err: urlError(&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("refused")}), want: true},
		"a certificate of another authority is not unreachable": {
			err: urlError(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), want: false},
		"a certificate for another name is not unreachable": {err: urlError(x509.HostnameError{Certificate: &x509.Certificate{}, Host: "elsewhere"}), want: false},
		"an expired certificate is not unreachable":         {err: urlError(x509.CertificateInvalidError{Reason: x509.Expired}), want: false},
		"a server not speaking TLS is not unreachable": {
			err: urlError(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake", Conn: &net.TCPConn{}}), want: false},
		"a bad record on a TLS stream stays unreachable": {
			err: urlError(tls.RecordHeaderError{Msg: "oversized record received with length 20000"}), want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := apiserver.Unreachable(tc.err); got != tc.want {
				t.Errorf("Unreachable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// What a real client gets from a real API server, or from no server at
// all, is judged as the constructed errors above: nothing listening and a
// connection closed before an answer are unreachable; the server's answers
// about the request are not, and neither is a TLS connection failed by the
// client's own settings.
func TestUnreachableJudgesWhatAClientReallyGets(t *testing.T) {
	controlplane.SkipIfShort(t)
	nobody := rest.CopyConfig(cp.Config)
	nobody.Impersonate = rest.ImpersonationConfig{UserName: "metawatch-test-nobody"}
	cases := map[string]struct {
		cfg       *rest.Config
		want      bool
		untrusted bool // the client's own TLS settings failed the connection
	}{
		"nothing listens at the address":          {cfg: at(cp.Config, testkit.FreeAddress(t)), want: true},
		"the connection closes before any answer": {cfg: at(cp.Config, closingListener(t)), want: true},
		"the API server answers not found":        {cfg: cp.Config, want: false},
		"the client trusts another authority":     {cfg: trusting(cp.Config, testkit.ForeignCA(t)), untrusted: true},
		"the client expects another server name":  {cfg: named(cp.Config, "not-the-api-server.example"), untrusted: true},
		"a plain HTTP server at the address":      {cfg: at(cp.Config, plainHTTPServer(t)), untrusted: true},
		"the API server answers forbidden":        {cfg: nobody, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cs, err := kubernetes.NewForConfig(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = cs.CoreV1().ConfigMaps("default").Get(t.Context(), "metawatch-test-absent", metav1.GetOptions{})
			if err == nil {
				t.Fatal("the read succeeded; the case wants an error")
			}
			if got := apiserver.Unreachable(err); got != tc.want {
				t.Errorf("Unreachable(%v) = %v, want %v", err, got, tc.want)
			}
			if got := apiserver.Untrusted(err); got != tc.untrusted {
				t.Errorf("Untrusted(%v) = %v, want %v", err, got, tc.untrusted)
			}
		})
	}
}

// RetryUnreachable returns f's first success, and its first error that is
// an answer, at once; it retries an unreachable server, saying so each
// time with what it was doing, and gives up with the last error when its
// context ends.
func TestRetryUnreachableRetriesOnlyAnUnreachableServer(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("starting")
	forbidden := apierrors.NewForbidden(pods, "p", errors.New("RBAC"))
	cases := map[string]struct {
		results   []error // f's result at each call; the last repeats
		cancelled bool    // the context ends before the call
		wantErr   error
		wantCalls int
		wantLogs  int
	}{
		"a success is returned after one call":                 {results: []error{nil}, wantCalls: 1},
		"an answer is returned at once, not retried":           {results: []error{forbidden}, wantErr: forbidden, wantCalls: 1},
		"an unreachable server is retried until it answers":    {results: []error{unavailable, nil}, wantCalls: 2, wantLogs: 1},
		"an unreachable server then an answer ends with it":    {results: []error{unavailable, forbidden}, wantErr: forbidden, wantCalls: 2, wantLogs: 1},
		"an ended context gives up with the unreachable error": {results: []error{unavailable}, cancelled: true, wantErr: unavailable, wantCalls: 1, wantLogs: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tc.cancelled {
				cancel()
			}
			log, logged := recordingLogger()
			calls := 0
			err := apiserver.RetryUnreachable(ctx, log, "loading the configuration", func() error {
				calls++
				return tc.results[min(calls, len(tc.results))-1]
			})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("RetryUnreachable returned %v, want %v", err, tc.wantErr)
			}
			if calls != tc.wantCalls {
				t.Errorf("f was called %d times, want %d", calls, tc.wantCalls)
			}
			lines := logged()
			if len(lines) != tc.wantLogs {
				t.Errorf("%d log lines, want %d: %q", len(lines), tc.wantLogs, lines)
			}
			for _, l := range lines {
				if !strings.Contains(l, "unreachable") || !strings.Contains(l, "loading the configuration") {
					t.Errorf("log line %q does not say the server is unreachable and what was being done", l)
				}
			}
		})
	}
}

// An API server that starts listening only after the first attempt is
// waited for: RetryUnreachable returns its answer, not the refused
// connection of the first try.
func TestRetryUnreachableWaitsForAnAPIServerThatComesUp(t *testing.T) {
	controlplane.SkipIfShort(t)
	addr := testkit.FreeAddress(t)
	cs, err := kubernetes.NewForConfig(at(cp.Config, addr))
	if err != nil {
		t.Fatal(err)
	}
	var attempts []error
	err = apiserver.RetryUnreachable(t.Context(), logr.Discard(), "reading a Namespace", func() error {
		_, err := cs.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{})
		attempts = append(attempts, err)
		if len(attempts) == 1 {
			testkit.Forward(t, addr, testkit.APIServerHost(t, cp.Config)) // the server comes up
		}
		return err
	})
	if err != nil || len(attempts) != 2 || !apiserver.Unreachable(attempts[0]) {
		t.Errorf("RetryUnreachable returned %v after attempts %v; want success on the second, after a first that found no server", err, attempts)
	}
}

// urlError is err as an HTTP client returns it.
func urlError(err error) error {
	return &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api", Err: err}
}

// trusting is cfg trusting only the certificate authority caPEM.
func trusting(cfg *rest.Config, caPEM []byte) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.CAFile, cfg.CAData = "", caPEM
	return cfg
}

// named is cfg expecting the API server's certificate to be for name.
func named(cfg *rest.Config, name string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.ServerName = name
	return cfg
}

// plainHTTPServer is the address of a server that answers HTTP without TLS.
func plainHTTPServer(t *testing.T) string {
	t.Helper()
	server := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(server.Close)
	return server.Listener.Addr().String()
}

// at is cfg pointed at addr (host:port) instead of the API server.
func at(cfg *rest.Config, addr string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Host = "https://" + addr
	return cfg
}

// closingListener is an address that accepts connections and closes them
// at once, as a server dying mid-request does.
func closingListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	return l.Addr().String()
}

// recordingLogger is a logger whose lines (message and values) logged() returns.
func recordingLogger() (log logr.Logger, logged func() []string) {
	var mu sync.Mutex
	var lines []string
	log = funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	return log, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
}
