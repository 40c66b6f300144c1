package rulecontroller_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// Nothing is removed from a view that has not synced: started behind a
// proxy that holds every request for Namespaces, metawatch has its pods
// cached long before the Namespace they copy from; it writes nothing to
// them meanwhile (a copy with no Namespace would release the key), and once
// the Namespace arrives they are as the rule wants: no write at all
// (node-feature-discovery removed every node label from such a view).
func TestNoRemovalBeforeTheNamespacesAreListed(t *testing.T) {
	controlplane.SkipIfShort(t)
	ns := "unsynced-namespaces"
	c := testkit.Populated(t, cp, ns, map[string]string{"team": "red"}, 5)
	rule := "watches:\n- kind: Pod\n  namespaces: [" + ns + "]\nrules:\n- {name: team, kinds: [Pod], copyFromNamespace: {labels: [team]}}\n"
	first := startInstance(t, rule, tuning{})
	waitAllPods(t, c, "the team label copied", []string{ns}, func(_ string, l map[string]string) bool { return l["team"] == "red" })
	first.stop()

	// Every request for Namespaces waits until the pods are listed and
	// cached, as behind a slow proxy (or, should the test fail first, until
	// it ends).
	held, release := make(chan struct{}), make(chan struct{})
	var once, released sync.Once
	holdNamespaces := func(req *http.Request) {
		rest := strings.TrimPrefix(req.URL.Path, "/api/v1/namespaces")
		if req.Method != http.MethodGet || rest == req.URL.Path || strings.Contains(rest, "/") {
			return
		}
		once.Do(func() { close(held) })
		select {
		case <-release:
		case <-req.Context().Done():
		}
	}
	behind := func(counted *rest.Config) *rest.Config {
		cfg := rest.CopyConfig(counted)
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				holdNamespaces(req)
				return rt.RoundTrip(req)
			})
		})
		return cfg
	}
	second := startInstanceVia(t, rule, tuning{}, behind)
	t.Cleanup(func() { released.Do(func() { close(release) }) }) // before the instance stops
	<-held
	// The pods in the cache, not yet in the controller: it starts once all
	// its sources have synced, the Namespaces' included.
	testkit.WaitFor(t, "the pods in the cache while the Namespaces are held", testkit.Timeout, func() bool {
		list := metacache.NewList(corev1.SchemeGroupVersion.WithKind("Pod"))
		return second.cache.List(t.Context(), list, client.InNamespace(ns)) == nil && len(list.Items) == 5
	})
	released.Do(func() { close(release) })
	waitCached(t, second, []string{ns}, 5)
	testkit.WaitFor(t, "the Namespace in the cache", testkit.Timeout, func() bool {
		return second.cache.Get(t.Context(), client.ObjectKey{Name: ns}, metacache.NewObject(corev1.SchemeGroupVersion.WithKind("Namespace"))) == nil
	})
	waitAllPods(t, c, "the team label kept", []string{ns}, func(_ string, l map[string]string) bool { return l["team"] == "red" })
	if n := second.writes.Load(); n != 0 {
		t.Errorf("metawatch wrote %d times before or after its Namespaces were listed, want 0", n)
	}
}
