package wire_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/testing/cachekit"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// A dropped connection (a load balancer reset, a lost HTTP/2 connection)
// makes client-go resume the watch from its last resourceVersion; only a
// watch error makes it list the kind again. metawatch's managedFields-stripping
// transport must not turn the one into the other: behind the same forwarder,
// killed and restarted three times, metawatch makes no more LIST or
// initial-events requests than a stock controller-runtime metadata-only cache.
func TestConnectionDropResumesTheWatchWithoutARelist(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "drop", nil)
	for i := range 20 {
		testkit.Pod(t, c, "drop", fmt.Sprintf("p-%d", i), nil)
	}
	fwd := testkit.Forward(t, testkit.FreeAddress(t), testkit.APIServerHost(t, cp.Config))
	viaForwarder := rest.CopyConfig(cp.Config)
	viaForwarder.Host = "https://" + fwd.Addr

	watches := testkit.Resolve(t, cp.Config, "watches:\n- kind: Pod\n  namespaces: [drop]\n")
	var ours, stock relistCounter
	metawatch := cachekit.StartEngine(t, ours.wrap(viaForwarder), watches).GetCache()
	reference := startStockMetadataCache(t, stock.wrap(viaForwarder), "drop")
	ours.reset()
	stock.reset()

	const drops = 3
	for i := range drops {
		// client-go takes a watch that ends within a second of its start with
		// no event for a broken one, and lists again; a watch cut by a load
		// balancer has lived longer than that.
		time.Sleep(1500 * time.Millisecond)
		fwd.Restart(t)
		name := fmt.Sprintf("after-drop-%d", i)
		testkit.Pod(t, c, "drop", name, nil)
		for what, cache := range map[string]cache.Cache{"metawatch": metawatch, "the stock cache": reference} {
			testkit.WaitFor(t, name+" in "+what, testkit.Timeout, func() bool {
				return cache.Get(t.Context(), client.ObjectKey{Namespace: "drop", Name: name}, cachekit.PodMetadata()) == nil
			})
		}
	}
	t.Logf("relists after %d connection drops: metawatch %d, stock controller-runtime metadata cache %d", drops, ours.count(), stock.count())
	if ours.count() > stock.count() {
		t.Errorf("metawatch listed pods %d times after %d connection drops, the stock metadata cache %d times: a drop must resume the watch, not relist",
			ours.count(), drops, stock.count())
	}
}

// startStockMetadataCache is what a stock controller-runtime user gets for
// builder.OnlyMetadata on Pods: a metadata-only informer, no transport of ours.
func startStockMetadataCache(t *testing.T, cfg *rest.Config, ns string) cache.Cache {
	t.Helper()
	return cachekit.StartPodCache(t, cfg, cache.Options{ByObject: map[client.Object]cache.ByObject{
		cachekit.PodMetadata(): {Namespaces: map[string]cache.Config{ns: {}}},
	}})
}

// relistCounter counts the requests that list pods in full: a LIST, or a
// watch that asks for the initial events (client-go's watch-list), and
// records the resourceVersion every other pod watch resumes from.
type relistCounter struct {
	n       atomic.Int64
	mu      sync.Mutex
	resumes []string
}

func (r *relistCounter) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			switch {
			case isPodRelist(req.Method, req.URL):
				r.n.Add(1)
			case req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/pods"):
				r.mu.Lock()
				r.resumes = append(r.resumes, req.URL.Query().Get("resourceVersion"))
				r.mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

func isPodRelist(method string, u *url.URL) bool {
	if method != http.MethodGet || len(u.Path) < 5 || u.Path[len(u.Path)-5:] != "/pods" {
		return false
	}
	q := u.Query()
	return q.Get("watch") != "true" && q.Get("watch") != "1" || q.Get("sendInitialEvents") == "true"
}

func (r *relistCounter) reset() {
	r.n.Store(0)
	r.mu.Lock()
	r.resumes = nil
	r.mu.Unlock()
}

func (r *relistCounter) count() int64 { return r.n.Load() }

// resumedFrom are the resourceVersions of the pod watches resumed since the last reset.
func (r *relistCounter) resumedFrom() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.resumes)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
