package testkit

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// APIServerHost is the host:port of the API server cfg points at, to forward to.
func APIServerHost(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// Forwarder is a TCP forwarder on a loopback address, in front of the API
// server, that a test can cut like a load balancer reset or a lost HTTP/2
// connection: TLS passes through it untouched, so clients keep their
// certificates and speak HTTP/2 end to end.
type Forwarder struct {
	// Addr is host:port clients dial instead of the API server.
	Addr string
	to   string

	mu       sync.Mutex
	listener net.Listener
	conns    map[net.Conn]struct{}
}

// Forward listens on from (a free loopback address, see FreeAddress) and
// forwards every connection to to, until the test ends.
func Forward(t testing.TB, from, to string) *Forwarder {
	t.Helper()
	f := &Forwarder{Addr: from, to: to, conns: map[net.Conn]struct{}{}}
	if err := f.listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.close)
	return f
}

// Restart kills the forwarder (its listener and every connection through it)
// and starts it again on the same address, as a restarted load balancer does.
func (f *Forwarder) Restart(t testing.TB) {
	t.Helper()
	f.close()
	deadline := time.Now().Add(Timeout)
	for {
		err := f.listen()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("listening on %s again: %v", f.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (f *Forwarder) listen() error {
	l, err := net.Listen("tcp", f.Addr)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.listener = l
	f.mu.Unlock()
	go f.accept(l)
	return nil
}

func (f *Forwarder) accept(l net.Listener) {
	for {
		in, err := l.Accept()
		if err != nil {
			return
		}
		go f.pipe(in)
	}
}

func (f *Forwarder) pipe(in net.Conn) {
	out, err := net.Dial("tcp", f.to)
	if err != nil {
		in.Close()
		return
	}
	if !f.track(in, out) {
		in.Close()
		out.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = io.Copy(out, in); out.Close() })
	_, _ = io.Copy(in, out)
	in.Close()
	wg.Wait()
	f.untrack(in, out)
}

// track registers a connection pair, unless the forwarder is closed.
func (f *Forwarder) track(conns ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listener == nil {
		return false
	}
	for _, c := range conns {
		f.conns[c] = struct{}{}
	}
	return true
}

func (f *Forwarder) untrack(conns ...net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range conns {
		delete(f.conns, c)
	}
}

// close stops listening and cuts every connection.
func (f *Forwarder) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listener != nil {
		f.listener.Close()
		f.listener = nil
	}
	for c := range f.conns {
		c.Close()
		delete(f.conns, c)
	}
}
