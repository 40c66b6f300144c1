package sharding

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// counting is a metadata ListerWatcher of ConfigMaps in one namespace that
// counts the items it received from the server, before any filtering.
type counting struct {
	client    metadata.Interface
	namespace string
	received  int
}

func (c *counting) lw() toolscache.ListerWatcher {
	res := c.client.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(c.namespace)
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			list, err := res.List(ctx, o)
			if err == nil {
				c.received += len(list.Items)
			}
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return res.Watch(ctx, o) },
	}
}

func uidsOf(t *testing.T, list runtime.Object) []types.UID {
	t.Helper()
	var uids []types.UID
	for _, item := range list.(*metav1.PartialObjectMetadataList).Items {
		uids = append(uids, item.UID)
	}
	return uids
}

// Against the real API server (ShardedListAndWatch on): the server sends only
// the objects of the asked buckets, the client filter alone gives the same
// objects, complementary shares are disjoint and cover everything, and no
// buckets is nothing.
func TestListerWatcherListsOnlyItsBuckets(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireShardedListAndWatch(t)
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	serverSide, err := ServerFilters(ctx, cs, "no-leases-here")
	if err != nil || !serverSide {
		t.Fatalf("ServerFilters = %v, %v; the local control plane runs with the gate on", serverSide, err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sharding-"}}
	if ns, err = cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var all []types.UID
	for i := range 200 {
		cm, err := cs.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, cm.UID)
	}
	mc := metadata.NewForConfigOrDie(cp.Config)
	first, second := Range(0, 21), Range(21, Buckets)
	tests := map[string]struct {
		buckets    []Bucket
		serverSide bool
	}{
		"server side, a third":           {first, true},
		"server side, the rest":          {second, true},
		"client side only, a third":      {first, false},
		"server side, no buckets at all": {nil, true},
		"client side only, no buckets":   {nil, false},
	}
	got := map[string][]types.UID{}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := &counting{client: mc, namespace: ns.Name}
			list, err := toolscache.ToListerWatcherWithContext(ListerWatcher(c.lw(), NewCoverage(tc.buckets), tc.serverSide)).ListWithContext(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			uids := uidsOf(t, list)
			want := slices.DeleteFunc(slices.Clone(all), func(u types.UID) bool { return !slices.Contains(tc.buckets, BucketOf(u)) })
			if !sameSet(uids, want) {
				t.Fatalf("listed %d objects, want the %d of buckets %v", len(uids), len(want), tc.buckets)
			}
			if wantReceived := map[bool]int{true: len(want), false: len(all)}[tc.serverSide]; c.received != wantReceived {
				t.Errorf("received %d objects from the server, want %d", c.received, wantReceived)
			}
			got[name] = uids
		})
	}
	union := append(slices.Clone(got["server side, a third"]), got["server side, the rest"]...)
	if !sameSet(union, all) || len(union) != len(all) {
		t.Errorf("the two shares hold %d objects between them, want all %d once each", len(union), len(all))
	}
}

// A watch passes the events of its buckets and bookmarks, and nothing else.
func TestListerWatcherWatchesOnlyItsBuckets(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireShardedListAndWatch(t)
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sharding-watch-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &counting{client: metadata.NewForConfigOrDie(cp.Config), namespace: ns.Name}
	mine := Range(0, 32)
	w, err := toolscache.ToListerWatcherWithContext(ListerWatcher(c.lw(), NewCoverage(mine), true)).WatchWithContext(ctx, metav1.ListOptions{AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	want := map[types.UID]bool{}
	for i := range 60 {
		cm, err := cs.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(mine, BucketOf(cm.UID)) {
			want[cm.UID] = true
		}
	}
	seen := map[types.UID]bool{}
	for deadline := time.After(20 * time.Second); len(seen) < len(want); {
		select {
		case e := <-w.ResultChan():
			if e.Type == watch.Bookmark {
				continue
			}
			uid := e.Object.(*metav1.PartialObjectMetadata).UID
			if !want[uid] {
				t.Fatalf("%s event for %s, of bucket %d: not one of %v", e.Type, uid, BucketOf(uid), mine)
			}
			seen[uid] = true
		case <-deadline:
			t.Fatalf("saw %d of the %d objects of the watched buckets", len(seen), len(want))
		}
	}
}

func sameSet(a, b []types.UID) bool {
	return len(a) == len(b) && sets.New(a...).Equal(sets.New(b...))
}

// With the gate off, the server ignores the selector (even when asked) and
// says so by leaving shardInfo out: ServerFilters tells, and the client
// filter still keeps the share exact.
func TestGateOffIsDetectedAndFilteredByTheClient(t *testing.T) {
	controlplane.SkipIfShort(t)
	off, err := controlplane.Start(t.Context(), controlplane.Options{ExtraAPIServerArgs: controlplane.WithoutShardedListAndWatch()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = off.Stop() }()
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(off.Config)
	if serverSide, err := ServerFilters(ctx, cs, "default"); err != nil || serverSide {
		t.Fatalf("ServerFilters = %v, %v with the gate off, want false", serverSide, err)
	}
	var all []types.UID
	for i := range 50 {
		cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, cm.UID)
	}
	c := &counting{client: metadata.NewForConfigOrDie(off.Config), namespace: "default"}
	mine := Range(0, 16)
	list, err := toolscache.ToListerWatcherWithContext(ListerWatcher(c.lw(), NewCoverage(mine), true)).ListWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := slices.DeleteFunc(slices.Clone(all), func(u types.UID) bool { return !slices.Contains(mine, BucketOf(u)) })
	if uids := uidsOf(t, list); !sameSet(uids, want) || c.received != len(all) {
		t.Errorf("kept %d of %d received, want the %d of buckets %v out of all %d", len(uids), c.received, len(want), mine, len(all))
	}
}
