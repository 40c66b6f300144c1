package sharding_test

import (
	"fmt"
	"net/http"
	"path"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/sharding"
	"github.com/metawatch/metawatch/pkg/telemetry"
	"github.com/metawatch/metawatch/pkg/testing/cachekit"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// Two managers with complementary shares of the buckets: each caches the pods
// of its own buckets and no other, between them every pod once, pods created
// after the sync included; both cache every Namespace (cluster-scoped kinds
// are not sharded). Server-side, every pod list and watch asked the server
// for the share; client-side (the API server's gate off), none did, and the
// other share's pods were dropped before decoding, none after.
func TestShardedCachesSplitThePods(t *testing.T) {
	controlplane.SkipIfShort(t)
	cp := sharding.ControlPlane()
	for name, serverSide := range map[string]bool{"server-side": true, "client-side": false} {
		t.Run(name, func(t *testing.T) {
			if serverSide {
				controlplane.RequireShardedListAndWatch(t)
			}
			ns := "shards-" + name
			c := testkit.Client(t, cp.Config)
			watches := namespaceOfPods(t, c, ns, 40)
			wire, decoded := droppedSoFar()
			shares := [][]sharding.Bucket{sharding.Range(0, 24), sharding.Range(24, sharding.Buckets)}
			var recs [2]testkit.Recorder
			var caches [2]client.Reader
			for i, share := range shares {
				mgr := cachekit.StartEngineWith(t, recs[i].Wrap(cp.Config), watches, metamanager.Options{MetricsBindAddress: "0",
					ShardFilter: &metacache.ShardFilter{Cover: sharding.NewCoverage(share), ServerSide: serverSide}})
				caches[i] = mgr.GetCache()
			}
			for i := range 10 {
				testkit.Pod(t, c, ns, fmt.Sprintf("late-%02d", i), nil)
			}
			pods := assertCachesSplit(t, c, ns, shares, caches)
			for i, share := range shares {
				want := sharding.Selector(share)
				if !serverSide {
					want = ""
				}
				assertShardSelectorSent(t, recs[i].All(), want)
			}
			wireNow, decodedNow := droppedSoFar()
			switch {
			case decodedNow != decoded:
				t.Errorf("%v objects were dropped after decoding, want none: the server or the wire should have", decodedNow-decoded)
			case serverSide && wireNow != wire:
				t.Errorf("%v objects were dropped on the wire, want none: the server filters", wireNow-wire)
			case !serverSide && wireNow-wire < float64(pods):
				t.Errorf("%v objects were dropped on the wire, want at least the %d pods (each manager's list and watch drop the other's)", wireNow-wire, pods)
			}
		})
	}
}

// namespaceOfPods creates Namespace ns with pods pods and returns the
// watches of its pods and of every Namespace.
func namespaceOfPods(t *testing.T, c client.Client, ns string, pods int) []config.ResolvedWatch {
	t.Helper()
	cp := sharding.ControlPlane()
	testkit.Namespace(t, c, ns, nil)
	for i := range pods {
		testkit.Pod(t, c, ns, fmt.Sprintf("pod-%02d", i), nil)
	}
	return testkit.Resolve(t, cp.Config, "watches:\n- kind: Pod\n  namespaces: ["+ns+"]\n- kind: Namespace\n")
}

// droppedSoFar are the objects of other buckets dropped before and after decoding.
func droppedSoFar() (wire, decoded float64) {
	return testutil.ToFloat64(telemetry.ShardDropped.WithLabelValues(telemetry.StageWire)),
		testutil.ToFloat64(telemetry.ShardDropped.WithLabelValues(telemetry.StageDecoded))
}

// assertCachesSplit waits until each cache holds exactly the pods of ns in its
// share and every Namespace, checks no pod is in two, and returns how many pods there are.
func assertCachesSplit(t *testing.T, c client.Client, ns string, shares [][]sharding.Bucket, caches [2]client.Reader) int {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i, share := range shares {
		want := sets.New[string]()
		for _, p := range pods.Items {
			if inShare(p.UID, share) {
				want.Insert(p.Namespace + "/" + p.Name)
			}
		}
		testkit.WaitFor(t, fmt.Sprintf("cache %d to hold exactly the %d pods of its buckets", i, want.Len()), testkit.Timeout, func() bool {
			return cachekit.CachedPods(t, caches[i]).Equal(want)
		})
		var all corev1.NamespaceList
		if err := c.List(t.Context(), &all); err != nil {
			t.Fatal(err)
		}
		cached := metacache.NewList(corev1.SchemeGroupVersion.WithKind("Namespace"))
		testkit.WaitFor(t, fmt.Sprintf("cache %d to hold all %d Namespaces", i, len(all.Items)), testkit.Timeout, func() bool {
			return caches[i].List(t.Context(), cached) == nil && len(cached.Items) == len(all.Items)
		})
	}
	if a, b := cachekit.CachedPods(t, caches[0]), cachekit.CachedPods(t, caches[1]); a.Intersection(b).Len() > 0 || a.Union(b).Len() != len(pods.Items) {
		t.Errorf("the caches share %d pods and hold %d between them, want none shared and all %d", a.Intersection(b).Len(), a.Union(b).Len(), len(pods.Items))
	}
	return len(pods.Items)
}

func assertShardSelectorSent(t *testing.T, requests []testkit.Request, want string) {
	t.Helper()
	for _, r := range requests {
		if r.Method != http.MethodGet {
			continue
		}
		switch path.Base(r.Path) {
		case "pods":
			if got := r.Query.Get("shardSelector"); got != want {
				t.Errorf("%s?%s: shardSelector %q, want %q", r.Path, r.Query.Encode(), got, want)
			}
		case "namespaces":
			if got := r.Query.Get("shardSelector"); got != "" {
				t.Errorf("%s: shardSelector %q, want none: Namespaces are not sharded", r.Path, got)
			}
		}
	}
}

func inShare(uid types.UID, share []sharding.Bucket) bool {
	b := sharding.BucketOf(uid)
	return b >= share[0] && b <= share[len(share)-1]
}
