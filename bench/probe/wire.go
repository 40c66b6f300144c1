package probe

import (
	"io"
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// Wire counts the response bytes and requests of every client made from the
// configs it wraps, keyed by Key.
type Wire struct {
	mu       sync.Mutex
	bytes    map[string]int64
	requests map[string]int64
}

// NewWire returns an empty Wire.
func NewWire() *Wire { return &Wire{bytes: map[string]int64{}, requests: map[string]int64{}} }

// Wrap returns a copy of cfg whose responses w counts. The counter is the
// innermost transport, before any cfg has or is given later (rest.Config.Wrap
// puts those outside), so what is counted is what came off the wire, e.g.
// before wire.StripManagedFields rewrites a body.
func (w *Wire) Wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	outer := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		var counted http.RoundTripper = roundTripFunc(func(req *http.Request) (*http.Response, error) { return w.roundTrip(rt, req) })
		if outer != nil {
			return outer(counted)
		}
		return counted
	}
	return cfg
}

func (w *Wire) roundTrip(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
	resp, err := rt.RoundTrip(req)
	if resp == nil {
		return resp, err
	}
	key := Key(req, resp)
	w.add(w.requests, key, 1)
	resp.Body = &countingBody{ReadCloser: resp.Body, count: func(n int) { w.add(w.bytes, key, int64(n)) }}
	return resp, err
}

func (w *Wire) add(m map[string]int64, key string, n int64) {
	w.mu.Lock()
	m[key] += n
	w.mu.Unlock()
}

// Bytes returns a copy of the bytes received per Key.
func (w *Wire) Bytes() map[string]int64 { return w.copyOf(w.bytes) }

// Requests returns a copy of the requests made per Key.
func (w *Wire) Requests() map[string]int64 { return w.copyOf(w.requests) }

func (w *Wire) copyOf(m map[string]int64) map[string]int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Key is "VERB resource media-type" of a request to a resource, e.g.
// "WATCH pods application/vnd.kubernetes.protobuf;as=PartialObjectMetadata",
// and "other <media-type>" for discovery and the like. The verb tells a list
// from a watch from a write; parameters other than as= are left out.
func Key(req *http.Request, resp *http.Response) string {
	return verb(req) + " " + mediaType(resp.Header.Get("Content-Type"))
}

// IsPodData reports whether key (a Key) is a list or watch of pods: the
// bytes of the pods themselves, not discovery or writes' answers.
func IsPodData(key string) bool {
	return strings.HasPrefix(key, "LIST pods ") || strings.HasPrefix(key, "WATCH pods ")
}

// PodBytes are the bytes of pod lists and watches among bytes by Key.
func PodBytes(byKey map[string]int64) int64 {
	var total int64
	for key, b := range byKey {
		if IsPodData(key) {
			total += b
		}
	}
	return total
}

func verb(req *http.Request) string {
	resource, named := ResourceOf(req.URL.Path)
	switch {
	case resource == "":
		return "other"
	case req.Method != http.MethodGet:
		return req.Method + " " + resource
	case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
		return "WATCH " + resource
	case named:
		return "GET " + resource
	}
	return "LIST " + resource
}

// ResourceOf returns the resource of an API path (/api/v1/namespaces/x/pods/y
// is pods, named) or "" for paths that are not a resource's (discovery).
func ResourceOf(path string) (resource string, named bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "", false
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	if len(parts) == 0 {
		return "", false
	}
	return parts[0], len(parts) > 1
}

func mediaType(contentType string) string {
	fields := strings.Split(contentType, ";")
	out := strings.TrimSpace(fields[0])
	for _, f := range fields[1:] {
		if f = strings.TrimSpace(f); strings.HasPrefix(f, "as=") {
			out += ";" + f
		}
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

type countingBody struct {
	io.ReadCloser
	count func(int)
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.count(n)
	return n, err
}
