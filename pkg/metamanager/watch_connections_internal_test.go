//go:build linux

package metamanager

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/metawatch/metawatch/pkg/wire"
)

// A watch over HTTP/1.1 has no pings: TCP keepalive is what finds its
// connection dead, so the socket must carry deadConnection's settings, not
// client-go's dialer's (five minutes).
func TestACacheConnectionIsProbedForDeath(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	conn, err := dialCacheConnection(t.Context(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		level, option, value int
	}{
		"keepalive on":                  {syscall.SOL_SOCKET, syscall.SO_KEEPALIVE, 1},
		"first probe after (s)":         {syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE, int(deadConnection.Idle.Seconds())},
		"between probes (s)":            {syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL, int(deadConnection.Interval.Seconds())},
		"unanswered probes before dead": {syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT, deadConnection.Count},
	}
	for name, w := range want {
		var got int
		var getErr error
		if err := raw.Control(func(fd uintptr) { got, getErr = syscall.GetsockoptInt(int(fd), w.level, w.option) }); err != nil || getErr != nil {
			t.Fatalf("%s: %v %v", name, err, getErr)
		}
		if got != w.value {
			t.Errorf("%s: %d, want %d", name, got, w.value)
		}
	}
	if limit := deadConnection.Idle + deadConnection.Interval*time.Duration(deadConnection.Count); limit.Seconds() > 45 {
		t.Errorf("a dead connection is found after %v, later than HTTP/2's pings would (45 s)", limit)
	}
}

// The cache's client asks for HTTP/1.1 of a server that speaks HTTP/2 too,
// and dials with dialCacheConnection; --watch-http2 keeps HTTP/2.
func TestTheCacheClientSpeaksHTTP1OverItsOwnDialer(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	cases := map[string]struct {
		overHTTP2    bool
		wantProtocol string
		wantDials    int
	}{
		"by default: HTTP/1.1, dialed with the keepalive": {wantProtocol: "HTTP/1.1", wantDials: 1},
		"--watch-http2: HTTP/2, client-go's own dialer":   {overHTTP2: true, wantProtocol: "HTTP/2.0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dials := 0
			dial := dialCacheConnection
			defer func() { dialCacheConnection = dial }()
			dialCacheConnection = func(ctx context.Context, network, address string) (net.Conn, error) {
				dials++
				return dial(ctx, network, address)
			}
			proto := getThroughCacheClient(t, srv.URL, wire.Options{WatchOverHTTP2: tc.overHTTP2})
			if proto != tc.wantProtocol || dials != tc.wantDials {
				t.Errorf("%s after %d dials of the cache's dialer, want %s after %d", proto, dials, tc.wantProtocol, tc.wantDials)
			}
		})
	}
}

// The cache's lists and watches ask for gzip unless --list-watch-compression
// is off, over either protocol.
func TestTheCacheClientAsksForGzipUnlessUncompressed(t *testing.T) {
	var got string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r.Header.Get("Accept-Encoding") }))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	cases := map[string]struct {
		o    wire.Options
		want string
	}{
		"by default: gzip":                      {want: "gzip"},
		"uncompressed: none":                    {o: wire.Options{Uncompressed: true}},
		"uncompressed over HTTP/2: none either": {o: wire.Options{Uncompressed: true, WatchOverHTTP2: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			getThroughCacheClient(t, srv.URL, tc.o)
			if got != tc.want {
				t.Errorf("Accept-Encoding %q, want %q", got, tc.want)
			}
		})
	}
}

// getThroughCacheClient GETs url through the cache's HTTP client for o, and
// returns the protocol of the response.
func getThroughCacheClient(t *testing.T, url string, o wire.Options) string {
	t.Helper()
	c, err := cacheHTTPClient(&rest.Config{Host: url, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, o)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.Proto
}
