package sharding

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/ptr"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// What a sharded watch sends its reflector as its buckets change, against
// the real API server: a bucket that comes is listed alone, at the watch's
// resourceVersion, and its objects arrive as Added events followed by a
// Bookmark at that resourceVersion; a bucket that goes, when the watch does
// not know the store to empty, ends the watch as expired (the reflector then
// relists); a watch resumed after the buckets changed between two watches
// moves first.
func TestAWatchFollowsItsCoverage(t *testing.T) {
	controlplane.SkipIfShort(t)
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sharding-moves-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 80 {
		if _, err := cs.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := cs.CoreV1().ConfigMaps(ns.Name).List(ctx, metav1.ListOptions{}) // with the namespace's own root CA
	if err != nil {
		t.Fatal(err)
	}
	in := func(buckets []Bucket) map[types.UID]bool {
		out := map[types.UID]bool{}
		for _, cm := range all.Items {
			if setOf(buckets)[BucketOf(cm.UID)] {
				out[cm.UID] = true
			}
		}
		return out
	}
	// As metawatch runs: server-side where the server filters by shard
	// (1.36 on, the gate on), client-side before.
	serverSide, err := ServerFilters(ctx, cs, ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	c := &counting{client: metadata.NewForConfigOrDie(cp.Config), namespace: ns.Name}
	cover := NewCoverage(Range(0, 16))
	lw := ListerWatcher(c.lw(), cover, serverSide)
	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	added, rv := readMove(t, w, true)
	assertSameUIDs(t, "the initial events", added, in(Range(0, 16)))

	received := c.received
	cover.Set(Range(0, 32))
	added, moveRV := readMove(t, w, false)
	assertSameUIDs(t, "a move to buckets 0-31 from 0-15", added, in(Range(16, 32)))
	if moveRV != rv {
		t.Errorf("the move's Bookmark is at resourceVersion %s, want the watch's %s", moveRV, rv)
	}
	// Without the server's filter the move's list receives every object of
	// the namespace, and keeps those of the buckets that came.
	if want := map[bool]int{true: len(added), false: len(all.Items)}[serverSide]; c.received-received != want {
		t.Errorf("the move received %d objects from the server, want %d (server-side %v; %d of the buckets that came)",
			c.received-received, want, serverSide, len(added))
	}

	cover.Set(Range(0, 8))
	if e := next(t, w); e.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(e.Object)) {
		t.Fatalf("a move that empties buckets without a store sent %s %v, want an expired error (a relist)", e.Type, e.Object)
	}
	w.Stop()

	cover.Set(Range(0, 40)) // between two watches; the store still holds 0-31
	w, err = lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	added, moveRV = readMove(t, w, false)
	assertSameUIDs(t, "a watch resumed after a change to buckets 0-39", added, in(Range(32, 40)))
	if moveRV != rv {
		t.Errorf("the resumed watch's move is at resourceVersion %s, want the one it resumed from, %s", moveRV, rv)
	}
}

// readMove reads Added events until a Bookmark (the initial events' end if
// initial) and returns the uids added and the Bookmark's resourceVersion.
func readMove(t *testing.T, w watch.Interface, initial bool) (map[types.UID]bool, string) {
	t.Helper()
	added := map[types.UID]bool{}
	for {
		e := next(t, w)
		obj := e.Object.(*metav1.PartialObjectMetadata)
		switch {
		case e.Type == watch.Added:
			added[obj.UID] = true
		case e.Type == watch.Bookmark && (!initial || obj.Annotations[metav1.InitialEventsAnnotationKey] == "true"):
			return added, obj.ResourceVersion
		case e.Type != watch.Bookmark:
			t.Fatalf("%s event during a move, want only Added and Bookmarks", e.Type)
		}
	}
}

func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case e, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("the watch ended")
		}
		if e.Type == watch.Error {
			if st, ok := e.Object.(*metav1.Status); ok && st.Code != http.StatusGone {
				t.Fatalf("error event: %v", st)
			}
		}
		return e
	case <-time.After(testkit.Timeout):
		t.Fatalf("no event for %s", testkit.Timeout)
	}
	return watch.Event{}
}

func assertSameUIDs(t *testing.T, what string, got, want map[types.UID]bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d objects added, want the %d of the buckets", what, len(got), len(want))
	}
	for uid := range want {
		if !got[uid] {
			t.Fatalf("%s: %s (bucket %d) was not added", what, uid, BucketOf(uid))
		}
	}
}
