package metacache_test

import (
	"fmt"
	"net/http"
	"path"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/telemetry"
	"github.com/metawatch/metawatch/pkg/testing/cachekit"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

const filterConfig = `
watches:
- kind: Pod
  namespaces: [filter-a, filter-c]
  labelSelector: app=web
  fieldSelector: status.phase!=Succeeded
`

// Objects outside a watch's label selector, field selector or namespaces never
// reach the cache: the cache holds exactly the API server's objects that match,
// and every request the Manager sent carried the selectors for the server to apply.
func TestSelectorsFilterOnTheServer(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	for _, ns := range []string{"filter-a", "filter-b", "filter-c"} {
		testkit.Namespace(t, c, ns, nil)
	}
	web := map[string]string{"app": "web"}
	testkit.Pod(t, c, "filter-a", "web-1", web)                                         // cached
	testkit.Pod(t, c, "filter-c", "web-2", web)                                         // cached
	testkit.Pod(t, c, "filter-a", "db-1", map[string]string{"app": "db"})               // label selector
	testkit.Pod(t, c, "filter-b", "web-3", web)                                         // namespaces
	setPhase(t, c, testkit.Pod(t, c, "filter-a", "web-done", web), corev1.PodSucceeded) // field selector

	watches := testkit.Resolve(t, cp.Config, filterConfig)
	var rec testkit.Recorder
	mgr := cachekit.StartEngine(t, rec.Wrap(cp.Config), watches)
	testkit.Pod(t, c, "filter-b", "web-late", web) // outside, created after the sync
	testkit.Pod(t, c, "filter-c", "web-late", web) // inside, created after the sync
	want := sets.New("filter-a/web-1", "filter-c/web-2", "filter-c/web-late")

	testkit.WaitFor(t, "the cache to hold exactly the matching pods", testkit.Timeout, func() bool {
		return cachekit.CachedPods(t, mgr.GetCache()).Equal(want)
	})
	// The count follows the informer's event handlers, which run after its
	// store is updated: it catches up with the cache, it does not lead it.
	testkit.WaitFor(t, fmt.Sprintf("metawatch_cached_objects{kind=Pod} to be %d", want.Len()), testkit.Timeout, func() bool {
		return testutil.ToFloat64(telemetry.CachedObjects.WithLabelValues("Pod")) == float64(want.Len())
	})
	if got := matchingServerPods(t, c); !got.Equal(want) {
		t.Fatalf("the API server's matching pods are %v, want %v: the test's fixtures are wrong", sets.List(got), sets.List(want))
	}
	assertSelectorsSent(t, rec.All())
}

// assertSelectorsSent checks that every pod list or watch named a watched
// namespace and both selectors, and that both namespaces were asked for.
func assertSelectorsSent(t *testing.T, requests []testkit.Request) {
	t.Helper()
	paths := sets.New[string]()
	for _, r := range requests {
		if r.Method != http.MethodGet || path.Base(r.Path) != "pods" {
			continue
		}
		paths.Insert(r.Path)
		if r.Query.Get("labelSelector") != "app=web" || r.Query.Get("fieldSelector") != "status.phase!=Succeeded" {
			t.Errorf("%s?%s: want labelSelector app=web and fieldSelector status.phase!=Succeeded sent to the server", r.Path, r.Query.Encode())
		}
	}
	want := sets.New("/api/v1/namespaces/filter-a/pods", "/api/v1/namespaces/filter-c/pods")
	if !paths.Equal(want) {
		t.Errorf("pods were listed and watched at %v, want exactly %v", sets.List(paths), sets.List(want))
	}
}

func setPhase(t *testing.T, c client.Client, pod *corev1.Pod, phase corev1.PodPhase) {
	t.Helper()
	pod.Status.Phase = phase
	if err := c.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
}

// matchingServerPods applies the watch's selectors, client-side, to every pod the API server has.
func matchingServerPods(t *testing.T, c client.Client) sets.Set[string] {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(t.Context(), &pods); err != nil {
		t.Fatal(err)
	}
	label, field := labels.SelectorFromSet(labels.Set{"app": "web"}), fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded))
	namespaces := sets.New("filter-a", "filter-c")
	got := sets.New[string]()
	for _, p := range pods.Items {
		if namespaces.Has(p.Namespace) && label.Matches(labels.Set(p.Labels)) && field.Matches(fields.Set{"status.phase": string(p.Status.Phase)}) {
			got.Insert(fmt.Sprintf("%s/%s", p.Namespace, p.Name))
		}
	}
	return got
}
