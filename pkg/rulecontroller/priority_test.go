package rulecontroller_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/settings"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// A Namespace relabelled over many pods does not delay a new pod's labels
// behind the fan-out: the new pod is written while most of the others still
// carry the old value. Writes are slowed (one reconcile at a time, each
// write held back a little) so that the fan-out lasts long enough to be
// overtaken. Before, the queue served the fan-out first, in order: the new
// pod was written last.
func TestANewObjectIsNotDelayedBehindAFanout(t *testing.T) {
	controlplane.SkipIfShort(t)
	const ns, pods = "fanout-first", 300
	c := testkit.Populated(t, cp, ns, map[string]string{"team": "a"}, pods)
	var slow atomic.Bool
	slowWrites := func(cfg *rest.Config) *rest.Config {
		cfg = rest.CopyConfig(cfg)
		wrap := cfg.WrapTransport
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			if wrap != nil {
				rt = wrap(rt)
			}
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				if slow.Load() && req.Method == http.MethodPatch {
					time.Sleep(30 * time.Millisecond)
				}
				return rt.RoundTrip(req)
			})
		}
		return cfg
	}
	config := "watches:\n- kind: Pod\n  namespaces: [" + ns + "]\n- kind: Namespace\n" +
		"rules:\n- {name: team, kinds: [Pod], copyFromNamespace: {labels: [team]}}\n"
	startInstanceWith(t, config, tuned(func(s *settings.Settings) { s.MaxConcurrentReconciles = 1 }), metamanager.Options{}, slowWrites)
	waitAllPods(t, c, "team=a on every pod", []string{ns}, func(_ string, l map[string]string) bool { return l["team"] == "a" })

	slow.Store(true)
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if err := c.Patch(t.Context(), namespace, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"team":"b"}}}`))); err != nil {
		t.Fatal(err)
	}
	fresh := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fresh"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}
	if err := c.Create(t.Context(), fresh); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the new pod labelled team=b", testkit.Timeout, func() bool { return getPod(t, c, ns, "fresh").Labels["team"] == "b" })
	old := 0
	for _, p := range podsIn(t, c, ns) {
		if p.Labels["team"] == "a" {
			old++
		}
	}
	if old < pods/2 {
		t.Errorf("when the new pod got its label, %d of %d pods still had the old value, want at least half: the fan-out went first", old, pods)
	}
}
