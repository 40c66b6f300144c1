package sharding

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/metawatch/metawatch/pkg/telemetry"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// In process, a fake ListerWatcher feeding a real client-go informer
// (AtomicFIFO on, list and watch): the interleavings below need a list that
// fails on its second page, or a relist at the very resourceVersion the store
// is at, at a moment the test chooses, which the real API server does not
// give. Both left objects of buckets no longer covered in the store for good
// before their fixes (490 and 20,000 of them).

const bucketA, bucketC = Bucket(0), Bucket(1)

// fakeLW serves a fixed set of objects at resourceVersion "10".
type fakeLW struct {
	objs []*metav1.PartialObjectMetadata

	mu       sync.Mutex
	watchers []*watch.RaceFreeFakeWatcher
	// selectors are the shard selectors each of watchers was asked for.
	selectors []string
	failPages atomic.Int32 // continue pages to fail with a network error
	// beforeRelist is called (once) as the informer's next full list
	// starts, before the ListWatch reads the Coverage; onFullList (once)
	// inside that list, after it did.
	beforeRelist, onFullList func()
	exactLists               atomic.Int32
}

func newFake(inA, inC int) *fakeLW {
	f := &fakeLW{}
	a, c := 0, 0
	for i := 0; a < inA || c < inC; i++ {
		uid := types.UID(fmt.Sprintf("uid-%07d", i))
		switch b := BucketOf(uid); {
		case b == bucketA && a < inA:
			a++
		case b == bucketC && c < inC:
			c++
		default:
			continue
		}
		f.objs = append(f.objs, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: string(uid), UID: uid, ResourceVersion: strconv.Itoa(2 + i%7)}})
	}
	return f
}

func (f *fakeLW) List(o metav1.ListOptions) (runtime.Object, error) {
	start := 0
	switch {
	case o.Continue != "":
		if f.failPages.Load() > 0 {
			f.failPages.Add(-1)
			return nil, errors.New("read tcp: connection reset by peer")
		}
		start, _ = strconv.Atoi(o.Continue)
	case o.ResourceVersionMatch == metav1.ResourceVersionMatchExact:
		f.exactLists.Add(1)
	default:
		f.mu.Lock()
		hook := f.onFullList
		f.onFullList = nil
		f.mu.Unlock()
		if hook != nil {
			hook()
		}
	}
	end := len(f.objs)
	if o.Limit > 0 && start+int(o.Limit) < end {
		end = start + int(o.Limit)
	}
	list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
	if end < len(f.objs) {
		list.Continue = strconv.Itoa(end)
	}
	for _, o := range f.objs[start:end] {
		list.Items = append(list.Items, *o.DeepCopy())
	}
	return list, nil
}

func (f *fakeLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	w := watch.NewRaceFreeFake()
	f.mu.Lock()
	f.watchers, f.selectors = append(f.watchers, w), append(f.selectors, o.ShardSelector)
	f.mu.Unlock()
	return w, nil
}

func (f *fakeLW) lastWatcher() *watch.RaceFreeFakeWatcher {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.watchers[len(f.watchers)-1]
}

// watchesSoFar is how many watches the fake has served.
func (f *fakeLW) watchesSoFar() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.watchers)
}

// watchOf returns the newest watch served after the first n, if it is
// one of exactly buckets.
func (f *fakeLW) watchOf(n int, buckets []Bucket) (*watch.RaceFreeFakeWatcher, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	last := len(f.watchers) - 1
	if last < n || f.selectors[last] != Selector(buckets) {
		return nil, false
	}
	return f.watchers[last], true
}

// hookedListWatch calls the fake's beforeRelist as a full list starts,
// before the ListWatch reads the Coverage.
type hookedListWatch struct {
	*ListWatch
	f *fakeLW
}

func (h hookedListWatch) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	if o.Continue == "" {
		h.f.mu.Lock()
		hook := h.f.beforeRelist
		h.f.beforeRelist = nil
		h.f.mu.Unlock()
		if hook != nil {
			hook()
		}
	}
	return h.ListWatch.ListWithContext(ctx, o)
}

func (h hookedListWatch) List(o metav1.ListOptions) (runtime.Object, error) {
	return h.ListWithContext(context.Background(), o) //nolint:forbidigo // the ListerWatcher's method without a context, which the reflector does not call
}

func startFakeInformer(t *testing.T, f *fakeLW, cover *Coverage) toolscache.SharedIndexInformer {
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
	if !clientfeatures.FeatureGates().Enabled(clientfeatures.AtomicFIFO) {
		t.Skip("AtomicFIFO off")
	}
	lw := ListerWatcher(f, cover, true)
	inf := toolscache.NewSharedIndexInformer(hookedListWatch{ListWatch: lw, f: f}, &metav1.PartialObjectMetadata{}, 0, toolscache.Indexers{})
	lw.Feeds(inf.GetStore())
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	go inf.Run(ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("not synced")
	}
	return inf
}

func countAC(inf toolscache.SharedIndexInformer) (a, c int) {
	for _, o := range inf.GetStore().List() {
		switch BucketOf(o.(*metav1.PartialObjectMetadata).UID) {
		case bucketA:
			a++
		case bucketC:
			c++
		}
	}
	return
}

// settleTimeout bounds the wait for a store to settle on its buckets: a
// move may wait up to storeCatchUp for the informer before it relists.
const settleTimeout = storeCatchUp + testkit.Timeout

// waitSettled waits until the informer's store has applied everything it
// will get for the buckets covered now, buckets: the fake served a watch of
// exactly them after its first n (the move, or the relist that stands for
// one, is over: such a watch starts only once the store's objects are those
// buckets' once it has processed what it was sent), and an object of A
// modified through that watch has reached the store, after everything
// sent before it. No time is assumed: on a slow machine this waits longer.
func waitSettled(t *testing.T, f *fakeLW, inf toolscache.SharedIndexInformer, n int, buckets []Bucket) {
	t.Helper()
	var sentinel *metav1.PartialObjectMetadata
	for _, o := range f.objs {
		if BucketOf(o.UID) == bucketA {
			sentinel = o.DeepCopy()
			break
		}
	}
	mark := strconv.Itoa(n)
	sentinel.Labels = map[string]string{"settled": mark}
	sentinel.ResourceVersion = "11"
	var sentTo *watch.RaceFreeFakeWatcher
	testkit.WaitFor(t, fmt.Sprintf("the store to settle on buckets %v", buckets), settleTimeout, func() bool {
		w, ok := f.watchOf(n, buckets)
		if !ok {
			return false
		}
		if w != sentTo {
			w.Modify(sentinel.DeepCopy())
			sentTo = w
		}
		item, exists, err := inf.GetStore().Get(sentinel)
		return err == nil && exists && item.(*metav1.PartialObjectMetadata).Labels["settled"] == mark
	})
}

// A bucket that came is filled in pages; the second page's list fails on the
// network; before the move is retried, the bucket goes again. The first
// page's objects must leave the store with it.
func TestABucketLeftHalfFilledIsEmptiedWhenItGoes(t *testing.T) {
	f := newFake(10, 700) // bucket C needs two pages of 500
	cover := NewCoverage([]Bucket{bucketA})
	inf := startFakeInformer(t, f, cover)
	if a, c := countAC(inf); a != 10 || c != 0 {
		t.Fatalf("synced with %d of A, %d of C", a, c)
	}

	f.failPages.Store(1)
	cover.Set([]Bucket{bucketA, bucketC})
	testkit.WaitFor(t, "the first page of C", testkit.Timeout, func() bool { _, c := countAC(inf); return c >= 450 })
	watches := f.watchesSoFar()
	cover.Set([]Bucket{bucketA}) // C goes while the move waits to be retried (moveRetry = 1s)

	waitSettled(t, f, inf, watches, []Bucket{bucketA})
	t.Logf("exact lists %d, failed moves %v", f.exactLists.Load(), testutil.ToFloat64(telemetry.ShardCacheMoves.WithLabelValues(telemetry.MoveFailed)))
	if a, c := countAC(inf); c != 0 {
		t.Errorf("store holds %d objects of bucket C, which is not covered (ghosts); %d of A", c, a)
	}
}

// The kind is relisted (here: the watch ends with 410) while the cover
// changes to {A, C}; during the list it changes back to {A}; the list's
// resourceVersion equals the store's (a quiet kind). The move from {A, C} to
// {A} must read the store only after the informer has applied the relist's
// Replace (before, it found no object of C, and C's objects then arrived
// with the Replace).
func TestAMoveRightAfterARelistSeesTheRelist(t *testing.T) {
	for attempt := range 2 {
		f := newFake(10, 20000)
		cover := NewCoverage([]Bucket{bucketA})
		inf := startFakeInformer(t, f, cover)

		f.mu.Lock()
		f.beforeRelist = func() { cover.Set([]Bucket{bucketA, bucketC}) } // the relist lists {A, C}
		f.onFullList = func() { cover.Set([]Bucket{bucketA}) }            // after ListWithContext took {A, C}
		f.mu.Unlock()
		watches := f.watchesSoFar()
		gone := apierrors.NewResourceExpired("too old resource version").ErrStatus
		f.lastWatcher().Error(&gone) // the reflector relists (after its backoff)

		waitSettled(t, f, inf, watches, []Bucket{bucketA})
		a, c := countAC(inf)
		t.Logf("moves in place so far %v, objects moved out so far %v, relists %v", testutil.ToFloat64(telemetry.ShardCacheMoves.WithLabelValues(telemetry.MoveInPlace)),
			testutil.ToFloat64(telemetry.ShardMovedObjects.WithLabelValues(telemetry.MoveOut)), testutil.ToFloat64(telemetry.ShardCacheMoves.WithLabelValues(telemetry.MoveRelisted)))
		t.Logf("attempt %d: store holds %d of A, %d of C (cover is {A})", attempt, a, c)
		if c != 0 {
			t.Errorf("store holds %d objects of bucket C, which is not covered (ghosts)", c)
			return
		}
	}
}
