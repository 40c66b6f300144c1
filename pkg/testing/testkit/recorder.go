package testkit

import (
	"io"
	"net/http"
	"net/url"
	"sync"

	"k8s.io/client-go/rest"
)

// Request is what a Recorder saw of one HTTP exchange with the API server.
type Request struct {
	Method, Path string
	Query        url.Values
	Accept       string
	ContentType  string // of the response
	Body         []byte // the first bodyPrefix bytes of the response, as the client read them
}

const bodyPrefix = 4096

// Recorder captures every request a rest.Config's clients make, at the transport.
type Recorder struct {
	mu       sync.Mutex
	requests []*Request
}

// Wrap is a copy of cfg whose requests r records.
func (r *Recorder) Wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			rec := &Request{Method: req.Method, Path: req.URL.Path, Query: req.URL.Query(), Accept: req.Header.Get("Accept")}
			if resp != nil {
				rec.ContentType = resp.Header.Get("Content-Type")
				resp.Body = &teeBody{ReadCloser: resp.Body, rec: rec, mu: &r.mu}
			}
			r.mu.Lock()
			r.requests = append(r.requests, rec)
			r.mu.Unlock()
			return resp, err
		})
	})
	return cfg
}

// All returns a copy of every request recorded so far.
func (r *Recorder) All() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Request, len(r.requests))
	for i, rec := range r.requests {
		out[i] = *rec
		out[i].Body = append([]byte(nil), rec.Body...)
	}
	return out
}

// teeBody keeps the first bodyPrefix bytes the client reads.
type teeBody struct {
	io.ReadCloser
	rec *Request
	mu  *sync.Mutex
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.mu.Lock()
	if room := bodyPrefix - len(b.rec.Body); room > 0 {
		b.rec.Body = append(b.rec.Body, p[:min(n, room)]...)
	}
	b.mu.Unlock()
	return n, err
}
