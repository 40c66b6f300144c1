package metamanager_test

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/testing/cachekit"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
	"github.com/metawatch/metawatch/pkg/wire"
)

// The cache's lists and watches have connections of their own over HTTP/1.1,
// where a watch event costs no flow-control write and no hand-off between
// goroutines (#14); the writes stay on HTTP/2. --watch-http2 puts the cache
// back on the writes' HTTP/2 connection.
func TestTheCacheWatchesOverAConnectionOfItsOwn(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "protocols", nil)
	testkit.Pod(t, c, "protocols", "p-0", nil)
	watches := testkit.Resolve(t, cp.Config, "watches:\n- kind: Pod\n  namespaces: [protocols]\n")
	cases := map[string]struct {
		overHTTP2 bool
		wantCache string
	}{
		"by default the cache lists and watches over HTTP/1.1": {wantCache: "HTTP/1.1"},
		"--watch-http2 lists and watches over HTTP/2":          {overHTTP2: true, wantCache: "HTTP/2.0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var protocols protocolRecorder
			mgr := cachekit.StartEngineWith(t, protocols.wrap(cp.Config), watches, metamanager.Options{MetricsBindAddress: "0", Wire: wire.Options{WatchOverHTTP2: tc.overHTTP2}})
			pod := cachekit.PodMetadata()
			pod.Namespace, pod.Name = "protocols", "p-0"
			testkit.MergePatch(t, mgr.GetClient(), pod, "protocols-test", `{"metadata":{"labels":{"written-over":"any"}}}`)
			testkit.WaitFor(t, "the patched pod in the cache", testkit.Timeout, func() bool {
				got := cachekit.PodMetadata()
				return mgr.GetCache().Get(t.Context(), client.ObjectKeyFromObject(pod), got) == nil && got.Labels["written-over"] == "any"
			})
			for _, want := range []struct{ request, protocol string }{
				{"GET pods watch", tc.wantCache},
				{"PATCH pods", "HTTP/2.0"},
			} {
				got := protocols.of(want.request)
				if len(got) == 0 || slices.ContainsFunc(got, func(p string) bool { return p != want.protocol }) {
					t.Errorf("%s went over %v, want %s every time", want.request, got, want.protocol)
				}
			}
		})
	}
}

// protocolRecorder records the protocol of every pod request's response,
// by method and whether it watched.
type protocolRecorder struct {
	mu        sync.Mutex
	protocols map[string][]string
}

func (r *protocolRecorder) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && strings.Contains(req.URL.Path, "/pods") {
				request := req.Method + " pods"
				if q := req.URL.Query().Get("watch"); q == "true" || q == "1" {
					request += " watch"
				}
				r.mu.Lock()
				if r.protocols == nil {
					r.protocols = map[string][]string{}
				}
				r.protocols[request] = append(r.protocols[request], resp.Proto)
				r.mu.Unlock()
			}
			return resp, err
		})
	})
	return cfg
}

func (r *protocolRecorder) of(request string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.protocols[request]...)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
