package wire_test

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/testing/cachekit"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
	"github.com/metawatch/metawatch/pkg/wire"
)

// A status-only update reaches metawatch's informer as a bookmark (the
// transport recognised the object as unchanged), never as an object to
// decode and store. Checked against a stock metadata-only cache on the same
// connection, with a bookmark for each event left out and with bookmarks held
// back (the default): labels changed and changed back between status updates
// arrive, the cache holds what the server holds, and after a dropped
// connection the watch resumes from the newest resourceVersion (the
// bookmark held back is delivered before the stream's end), without listing
// again; with a bookmark per event, the informer's resourceVersion follows
// every update.
func TestUnchangedEventsKeepTheInformerExact(t *testing.T) {
	controlplane.SkipIfShort(t)
	cases := map[string]struct {
		ns       string
		interval time.Duration
	}{
		"a bookmark for each event left out": {ns: "unchanged-each"},
		"bookmarks held back up to a second": {ns: "unchanged-held", interval: wire.DefaultBookmarkInterval},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { checkUnchangedEvents(t, tc.ns, tc.interval) })
	}
}

func checkUnchangedEvents(t *testing.T, ns string, interval time.Duration) {
	const pods = 4
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, ns, nil)
	for i := range pods {
		testkit.Pod(t, c, ns, fmt.Sprintf("p-%d", i), map[string]string{"app": "web", "suite": ns})
	}
	fwd := testkit.Forward(t, testkit.FreeAddress(t), testkit.APIServerHost(t, cp.Config))
	viaForwarder := rest.CopyConfig(cp.Config)
	viaForwarder.Host = "https://" + fwd.Addr
	// A selector rather than a namespace: one informer, whose resourceVersion can be read.
	watches := testkit.Resolve(t, cp.Config, "watches:\n- kind: Pod\n  labelSelector: suite="+ns+"\n")
	var ours relistCounter
	metawatch := cachekit.StartEngineWith(t, withoutResumedWatchBookmarks(ours.wrap(viaForwarder)), watches,
		metamanager.Options{MetricsBindAddress: "0", Wire: wire.Options{BookmarkInterval: interval}}).GetCache()
	reference := startStockMetadataCache(t, viaForwarder, ns)
	unchanged := func() float64 {
		return testkit.Metric(t, "metawatch_watch_events_unchanged_total", map[string]string{"resource": "pods"})
	}
	pod := func(i int) *corev1.Pod {
		p := &corev1.Pod{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("p-%d", i)}, p); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// Three status updates, a label change, two more, the label back, two more.
	before := unchanged()
	for i := range pods {
		p := pod(i)
		statusUpdates(t, c, p, 3)
		patchPodLabel(t, c, p, "db")
		statusUpdates(t, c, p, 2)
		patchPodLabel(t, c, p, "web")
		statusUpdates(t, c, p, 2)
	}
	assertSameAsServer(t, c, ns, pods, metawatch, reference)
	// A label change is delivered; the status updates after it are
	// unchanged, and so are the first three when the pod came in the watch's
	// initial events (else the first of them is delivered).
	testkit.WaitFor(t, "6 unchanged events per pod", testkit.Timeout, func() bool { return unchanged()-before >= 6*pods })

	// Two more, left out (with an interval, the first's bookmark is sent,
	// since a second has passed, and the second's held back); once the
	// transport has seen them, cut the connection. client-go takes a watch
	// that ends within a second of its start with no event for a broken
	// one; a watch cut by a load balancer has lived longer.
	time.Sleep(1500 * time.Millisecond)
	seen := unchanged()
	leftOut := statusUpdates(t, c, pod(0), 2)
	testkit.WaitFor(t, "the last two status updates left out", testkit.Timeout, func() bool { return unchanged() >= seen+2 })
	if interval == 0 {
		waitForResourceVersion(t, metawatch, leftOut)
	}
	ours.reset()
	fwd.Restart(t)
	var last string
	for i := range pods {
		p := pod(i)
		last = statusUpdates(t, c, p, 2)
		if i == 0 {
			patchPodLabel(t, c, p, "db")
			last = statusUpdates(t, c, p, 2)
		}
	}
	if interval == 0 {
		// The resumed watch gets no bookmark from the server: only the
		// transport's can carry the informer to the last status update's version.
		waitForResourceVersion(t, metawatch, last)
	}
	assertSameAsServer(t, c, ns, pods, metawatch, reference)
	if ours.count() != 0 {
		t.Errorf("metawatch listed pods %d times after a dropped connection, want 0: the watch resumes", ours.count())
	}
	if resumed := ours.resumedFrom(); len(resumed) == 0 || mustAtoi(t, resumed[0]) < mustAtoi(t, leftOut) {
		t.Errorf("after the drop the pod watch resumed from %v, want the resourceVersion of the status update left out before it, %s, or newer", resumed, leftOut)
	}
}

// withoutResumedWatchBookmarks asks the API server for no bookmarks on a
// resumed watch (one that does not stream the initial events, which must end
// with one), so that every bookmark the informer gets is the transport's.
func withoutResumedWatchBookmarks(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if q := req.URL.Query(); q.Get("watch") == "true" && q.Get("sendInitialEvents") != "true" && q.Has("allowWatchBookmarks") {
				req = req.Clone(req.Context())
				q.Del("allowWatchBookmarks")
				req.URL.RawQuery = q.Encode()
			}
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

// statusUpdates changes p's status n times (a condition's message, as a
// kubelet does) and returns the last resourceVersion.
func statusUpdates(t *testing.T, c client.Client, p *corev1.Pod, n int) string {
	t.Helper()
	for i := range n {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Message: fmt.Sprintf("probe %d at %s", i, time.Now())}}
		if err := c.Status().Update(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	return p.ResourceVersion
}

func patchPodLabel(t *testing.T, c client.Client, p *corev1.Pod, app string) {
	t.Helper()
	testkit.MergePatch(t, c, p, "kubectl-label", fmt.Sprintf(`{"metadata":{"labels":{"app":%q}}}`, app))
}

// resourceVersionOf is the resourceVersion the pod informer of c last synced to.
func resourceVersionOf(t *testing.T, c cache.Cache) string {
	t.Helper()
	informer, err := c.GetInformer(t.Context(), cachekit.PodMetadata())
	if err != nil {
		t.Fatal(err)
	}
	synced, ok := informer.(interface{ LastSyncResourceVersion() string })
	if !ok {
		t.Fatalf("the pod informer is a %T, which does not say its resourceVersion", informer)
	}
	return synced.LastSyncResourceVersion()
}

// waitForResourceVersion waits until c's pod informer has synced to rv: the
// bookmarks that stand for unchanged objects' events carry it there.
func waitForResourceVersion(t *testing.T, c cache.Cache, rv string) {
	t.Helper()
	want := mustAtoi(t, rv)
	testkit.WaitFor(t, "the informer at resourceVersion "+rv, testkit.Timeout, func() bool { return mustAtoi(t, resourceVersionOf(t, c)) >= want })
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", s, err)
	}
	return n
}

// assertSameAsServer checks that the pods' labels, annotations and deletion
// timestamps in each cache are the server's.
func assertSameAsServer(t *testing.T, c client.Client, ns string, pods int, caches ...cache.Cache) {
	t.Helper()
	for i := range pods {
		key := client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("p-%d", i)}
		want := &corev1.Pod{}
		if err := c.Get(t.Context(), key, want); err != nil {
			t.Fatal(err)
		}
		for j, cc := range caches {
			testkit.WaitFor(t, fmt.Sprintf("%s in cache %d as on the server", key, j), testkit.Timeout, func() bool {
				got := cachekit.PodMetadata()
				return cc.Get(t.Context(), key, got) == nil && fmt.Sprint(got.Labels) == fmt.Sprint(want.Labels) &&
					fmt.Sprint(got.Annotations) == fmt.Sprint(want.Annotations) && got.DeletionTimestamp.Equal(want.DeletionTimestamp)
			})
		}
	}
}
