package sharding

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

	mu         sync.Mutex
	watchers   []*watch.RaceFreeFakeWatcher
	failPages  atomic.Int32 // continue pages to fail with a network error
	onFullList func()       // called (once) inside the next full list
	exactLists atomic.Int32
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

func (f *fakeLW) Watch(metav1.ListOptions) (watch.Interface, error) {
	w := watch.NewRaceFreeFake()
	f.mu.Lock()
	f.watchers = append(f.watchers, w)
	f.mu.Unlock()
	return w, nil
}

func (f *fakeLW) lastWatcher() *watch.RaceFreeFakeWatcher {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.watchers[len(f.watchers)-1]
}

func startFakeInformer(t *testing.T, f *fakeLW, cover *Coverage) toolscache.SharedIndexInformer {
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
	if !clientfeatures.FeatureGates().Enabled(clientfeatures.AtomicFIFO) {
		t.Skip("AtomicFIFO off")
	}
	lw := ListerWatcher(f, cover, true)
	inf := toolscache.NewSharedIndexInformer(lw, &metav1.PartialObjectMetadata{}, 0, toolscache.Indexers{})
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

func waitUpTo(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
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
	if !waitUpTo(5*time.Second, func() bool { _, c := countAC(inf); return c >= 450 }) {
		t.Fatal("first page of C never arrived")
	}
	cover.Set([]Bucket{bucketA}) // C goes while the move waits to be retried

	time.Sleep(3 * time.Second) // the retry (moveRetry = 1s) and anything after it
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
		f.onFullList = func() { cover.Set([]Bucket{bucketA}) } // after ListWithContext took {A, C}
		f.mu.Unlock()
		w := f.lastWatcher()
		gone := apierrors.NewResourceExpired("too old resource version").ErrStatus
		w.Error(&gone) // the reflector relists (after its backoff)
		if !waitUpTo(5*time.Second, w.IsStopped) {
			t.Fatal("the 410 was not consumed")
		}
		cover.Set([]Bucket{bucketA, bucketC}) // before the relist starts

		time.Sleep(4 * time.Second)
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
