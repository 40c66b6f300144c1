package testkit

import (
	"bytes"
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Exchange is one request that went through a Proxy.
type Exchange struct {
	Method, Path string
	Query        string // the URL's raw query
	UserAgent    string
	Body         []byte    // the request body
	Received     time.Time // when the client sent it
	Sent         time.Time // when the proxy sent it on to the API server (zero: held)
	Answered     time.Time // when the API server answered it (zero: not yet)
	Status       int       // the API server's answer (zero: none)
}

// Proxy is an HTTPS reverse proxy in front of the API server that records
// when each request reaches the API server, and can hold requests in transit
// the way a loaded load balancer does: a held request is sent on even if the
// client gave up on it meanwhile, so the server may apply a write its client
// believes cancelled. Clients reach it without credentials (kubeconfig from
// Kubeconfig); it talks to the API server as cfg.
type Proxy struct {
	// Kubeconfig is a kubeconfig file for the proxy.
	Kubeconfig string
	mu         sync.Mutex
	hold       func(*http.Request) time.Duration
	refuse     func(*http.Request) bool
	exchanges  []*Exchange
	stall      latch
}

// SetHold makes the proxy hold each request as long as hold says before it
// sends it on (nil: not at all). A held request is sent on even if its client
// gave up on it meanwhile.
func (p *Proxy) SetHold(hold func(*http.Request) time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold = hold
}

// SetRefuse makes the proxy answer 500 to the requests refuse says (nil:
// none), without sending them on: a failing webhook, etcd out of space.
func (p *Proxy) SetRefuse(refuse func(*http.Request) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = refuse
}

func (p *Proxy) refused(req *http.Request) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refuse != nil && p.refuse(req)
}

// holding is how long to hold req, and whether the proxy is paused.
func (p *Proxy) holding(req *http.Request) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var d time.Duration
	if p.hold != nil {
		d = p.hold(req)
	}
	return d, p.stall.isPaused()
}

// Pause holds every request that reaches the proxy from now on, and every
// request it has not sent on yet, until Resume: a network that stalls. Held
// requests are sent on at Resume, even those their client gave up on.
func (p *Proxy) Pause() { p.stall.pause() }

// Resume sends the held requests on, and lets new ones through.
func (p *Proxy) Resume() { p.stall.resume() }

// waitWhilePaused returns once the proxy is not paused.
func (p *Proxy) waitWhilePaused() { p.stall.wait() }

// NewProxy starts a proxy to the API server cfg points at, until the test ends.
func NewProxy(t testing.TB, cfg *rest.Config) *Proxy {
	t.Helper()
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     p.transport(transport),
		FlushInterval: -1, // watches stream
	}
	srv := httptest.NewUnstartedServer(rp)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	p.Kubeconfig = writeProxyKubeconfig(t, srv)
	return p
}

func (p *Proxy) transport(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		var body []byte
		if req.Body != nil {
			body, _ = io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		ex := &Exchange{Method: req.Method, Path: req.URL.Path, Query: req.URL.RawQuery, UserAgent: req.UserAgent(), Body: body, Received: time.Now()}
		p.mu.Lock()
		p.exchanges = append(p.exchanges, ex)
		p.mu.Unlock()
		if p.refused(req) {
			return &http.Response{StatusCode: http.StatusInternalServerError, Request: req, Header: http.Header{"Content-Type": {"text/plain"}},
				Body: io.NopCloser(strings.NewReader("refused (injected by the test)"))}, nil
		}
		if hold, paused := p.holding(req); hold > 0 || paused {
			// Held in transit: the client's cancel no longer reaches the request.
			req = req.WithContext(context.WithoutCancel(req.Context()))
			time.Sleep(hold)
		}
		p.waitWhilePaused()
		p.mu.Lock()
		ex.Sent = time.Now()
		p.mu.Unlock()
		resp, err := next.RoundTrip(req)
		p.mu.Lock()
		ex.Answered = time.Now()
		if resp != nil {
			ex.Status = resp.StatusCode
		}
		p.mu.Unlock()
		return resp, err
	})
}

// Exchanges returns a copy of what went through so far.
func (p *Proxy) Exchanges() []Exchange {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Exchange, len(p.exchanges))
	for i, ex := range p.exchanges {
		out[i] = *ex
	}
	return out
}

func writeProxyKubeconfig(t testing.TB, srv *httptest.Server) string {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: ca}
	kc.AuthInfos["anonymous"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "anonymous"}
	kc.CurrentContext = "proxy"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
