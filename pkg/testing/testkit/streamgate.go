package testkit

import (
	"io"
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// StreamGate holds back the watch streams of one resource while paused, the
// way a slow or lagging watch does: a client whose cache it makes stale keeps
// acting on what it last saw. Data read from the connection during a pause is
// delivered when the gate resumes, in order.
type StreamGate struct {
	// Resource is the last path segment of the watched collection, e.g. "namespaces".
	Resource string

	stall latch
}

// Wrap returns cfg with the gate on its watch streams of Resource.
func (g *StreamGate) Wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && strings.HasSuffix(req.URL.Path, "/"+g.Resource) && req.URL.Query().Get("watch") == "true" {
				resp.Body = &gatedBody{ReadCloser: resp.Body, gate: g}
			}
			return resp, err
		})
	})
	return cfg
}

// Pause holds back every watch event of Resource from now on.
func (g *StreamGate) Pause() { g.stall.pause() }

// Resume delivers what was held back, and everything after it.
func (g *StreamGate) Resume() { g.stall.resume() }

func (g *StreamGate) wait() { g.stall.wait() }

type gatedBody struct {
	io.ReadCloser
	gate *StreamGate
}

// Read waits after reading, so that a read already waiting on the connection
// when the gate paused does not slip its data through.
func (b *gatedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.gate.wait()
	return n, err
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Faults makes the API server look unavailable (503) to one client, for
// requests whose path ends with Suffix, while on: a transient failure, as
// from an overloaded or restarting API server behind a load balancer.
type Faults struct {
	Suffix string

	mu  sync.Mutex
	on  bool
	hit int
}

// Wrap returns cfg with the faults on its requests.
func (f *Faults) Wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if f.fail(req) {
				return &http.Response{StatusCode: http.StatusServiceUnavailable, Request: req, Header: http.Header{"Content-Type": {"text/plain"}},
					Body: io.NopCloser(strings.NewReader("the API server is unavailable (injected by the test)"))}, nil
			}
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

func (f *Faults) fail(req *http.Request) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.on && strings.HasSuffix(req.URL.Path, f.Suffix) {
		f.hit++
		return true
	}
	return false
}

// Set turns the faults on or off.
func (f *Faults) Set(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.on = on
}

// Hits is how many requests failed so far.
func (f *Faults) Hits() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hit
}
