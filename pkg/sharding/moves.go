package sharding

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	toolscache "k8s.io/client-go/tools/cache"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/metawatch/metawatch/pkg/telemetry"
)

const (
	// movePageSize is how many objects of the buckets that came are listed,
	// and held, at a time.
	movePageSize = 500
	// storeCatchUp bounds the wait for the informer to process what it was
	// sent before a move, after which the kind is relisted instead.
	storeCatchUp = time.Minute
	// moveRetry is the pause before a move that failed on the network is
	// tried again (the reflector watches again, from the same resourceVersion).
	moveRetry = time.Second
)

// WatchWithContext watches the covered buckets' objects. A watch that starts
// afresh (a watch-list, or no resourceVersion) covers the buckets covered
// now. One that resumes from a resourceVersion moves the store first if it
// holds other buckets: the Coverage changed between two watches.
func (l *ListWatch) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	set, changed := l.cover.now()
	w := &coverWatch{l: l, timeout: o.TimeoutSeconds, out: make(chan watch.Event)}
	watchList := o.SendInitialEvents != nil && *o.SendInitialEvents
	afresh := watchList || o.ResourceVersion == "" || o.ResourceVersion == "0"
	var up watch.Interface
	if holds, partial := l.holding(); afresh || (holds == set && partial.empty()) {
		var err error
		if up, err = l.watch(ctx, o, set); err != nil {
			return nil, err // the reflector backs off
		}
	}
	w.ctx, w.cancel = context.WithCancel(ctx)
	w.listing, w.unknown = watchList, afresh && !watchList
	go w.run(up, set, changed, o.ResourceVersion)
	return w, nil
}

// coverWatch is the watch a sharded informer's reflector reads. It passes
// the events of the covered buckets, bookmarks and errors. When the Coverage
// changes, it moves the informer's store to the new buckets between two
// events, at the resourceVersion rv of the last one it passed:
//
//  1. it stops the watch from the API server;
//  2. for the buckets that went: once the informer has processed everything
//     it was given (storeAt), a Deleted event for each of their objects in
//     its store;
//  3. for the buckets that came: their objects, listed at exactly rv a page
//     at a time, as Added events;
//  4. after each of these steps, a Bookmark at rv, so that the reflector's
//     resourceVersion is never left behind rv (the objects' own are older);
//  5. a watch from rv of the new buckets.
//
// The store then holds what a list of the new buckets at rv would give, and
// follows them from there. The buckets that stayed are not listed again, nor
// is any other kind. A change while the watch still sends its initial events
// waits for their end. A move cut short (the network, a 429) leaves the
// buckets it began to fill partial: the next move, when the reflector
// watches again from rv, fills them again or empties them. Whatever cannot
// move this way (rv compacted away, an informer whose store cannot say what
// it has processed) ends the watch as expired, and the reflector relists the
// kind: the old way, never a wrong store.
type coverWatch struct {
	l *ListWatch
	// listing: a watch-list still sending its initial events, after which
	// the store holds their buckets. unknown: a watch from no
	// resourceVersion, whose initial events have no end to wait for (the
	// reflector does not start one against a real API server): a change
	// relists.
	listing, unknown bool
	timeout          *int64
	out              chan watch.Event
	ctx              context.Context
	cancel           context.CancelFunc
}

func (w *coverWatch) ResultChan() <-chan watch.Event { return w.out }

// Stop ends the watch at once, even when nobody reads any more (unlike
// watch.Filter, which then leaks its goroutine: kubernetes#113254).
func (w *coverWatch) Stop() { w.cancel() }

// run forwards up's events of set until the watch ends, moving when the
// Coverage changes (at once when up is nil).
func (w *coverWatch) run(up watch.Interface, set bucketSet, changed <-chan struct{}, rv string) {
	defer close(w.out)
	moveAfterList := false
	defer func() {
		if up != nil {
			up.Stop()
		}
	}()
	for {
		if up == nil {
			var err error
			if up, set, changed, err = w.move(rv); err != nil {
				w.fail(err)
				return
			}
		}
		select {
		case <-w.ctx.Done():
			return
		case <-changed:
			if w.unknown {
				w.fail(&relistNeeded{"this replica's buckets changed during a watch that started from no resourceVersion"})
				return
			}
			if w.listing {
				// Move once the initial events are in: a relist now could
				// be cut short again by the next change, and never end.
				changed, moveAfterList = nil, true
				continue
			}
			up.Stop()
			up = nil
		case ev, ok := <-up.ResultChan():
			if !ok {
				return // the server ended it; the reflector watches again from rv
			}
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				if !inBuckets(ev.Object, &set) {
					continue
				}
			}
			if !w.send(ev) || ev.Type == watch.Error {
				return
			}
			switch {
			case !w.listing:
				rv = resourceVersion(ev.Object)
			case ev.Type == watch.Bookmark && isInitialEventsEnd(ev.Object):
				w.listing, rv = false, resourceVersion(ev.Object)
				w.l.setHolds(set) // the reflector replaces its store with what came before
				if moveAfterList {
					up.Stop()
					up = nil
				}
			}
		}
	}
}

// move moves the store to the buckets covered now, at rv (see coverWatch),
// and returns the watch of them from rv.
func (w *coverWatch) move(rv string) (watch.Interface, bucketSet, <-chan struct{}, error) {
	to, changed := w.l.cover.now()
	holds, partial := w.l.holding()
	// A bucket a failed move began to fill is emptied if it went, filled
	// again (from its start) if it stays.
	gone, came := union(holds, partial).minus(to), to.minus(holds)
	var out, in int
	if !gone.empty() {
		var err error
		if out, err = w.empty(gone, rv); err != nil {
			return nil, to, changed, err
		}
		holds, partial = holds.minus(gone), partial.minus(gone)
		w.l.setHolding(holds, partial)
	}
	if !came.empty() {
		w.l.setHolding(holds, union(partial, came))
		var err error
		if in, err = w.fill(came, rv); err != nil {
			return nil, to, changed, err
		}
	}
	w.l.setHolds(to)
	up, err := w.l.watch(w.ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: w.timeout}, to)
	if err != nil {
		return nil, to, changed, err
	}
	if !gone.empty() || !came.empty() {
		telemetry.ShardCacheMoves.WithLabelValues(telemetry.MoveInPlace).Inc()
		telemetry.ShardMovedObjects.WithLabelValues(telemetry.MoveOut).Add(float64(out))
		telemetry.ShardMovedObjects.WithLabelValues(telemetry.MoveIn).Add(float64(in))
		ctrllog.FromContext(w.ctx).WithName("sharding").V(1).Info("cache moved to this replica's buckets without a relist",
			"resourceVersion", rv, "bucketsGone", len(gone.list()), "bucketsCame", len(came.list()), "objectsOut", out, "objectsIn", in)
	}
	return up, to, changed, nil
}

// empty sends a Deleted event for each object of the gone buckets in the
// store, once the store has processed everything it was given: before that,
// an object given but not yet stored would be missed, and stay for good.
func (w *coverWatch) empty(gone bucketSet, rv string) (int, error) {
	store, err := w.storeAt(rv)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, item := range store.List() {
		obj, ok := item.(runtime.Object)
		if !ok || !gone[BucketOf(mustAccessor(obj).GetUID())] {
			continue
		}
		// A copy: the informer's transform may run on what it is sent, and
		// the stored object is shared with the cache's readers.
		if !w.send(watch.Event{Type: watch.Deleted, Object: obj.DeepCopyObject()}) {
			return n, w.ctx.Err()
		}
		n++
	}
	return n, w.sendBookmark(rv)
}

// fill sends the objects of the buckets that came, listed at exactly rv, as
// Added events, a page at a time.
func (w *coverWatch) fill(came bucketSet, rv string) (int, error) {
	o := metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: movePageSize}
	n := 0
	for {
		list, err := w.l.list(w.ctx, o, came)
		if err != nil {
			return n, err
		}
		items, err := meta.ExtractListWithAlloc(list) // each item on its own, not holding the page
		if err != nil {
			return n, &relistNeeded{err.Error()}
		}
		for _, item := range items {
			if !w.send(watch.Event{Type: watch.Added, Object: item}) {
				return n, w.ctx.Err()
			}
			n++
		}
		if err := w.sendBookmark(rv); err != nil {
			return n, err
		}
		m, err := meta.ListAccessor(list)
		if err != nil {
			return n, &relistNeeded{err.Error()}
		}
		if m.GetContinue() == "" {
			return n, nil
		}
		o = metav1.ListOptions{Limit: movePageSize, Continue: m.GetContinue()} // the token holds rv
	}
}

// storeAt waits until the informer's store has processed everything the
// reflector gave it so far, this watch's events and, before them, whatever a
// relist queued (a Replace). Seeing rv in the store is not proof: a relist
// can queue its Replace at the very rv the store has already. So it sends a
// Bookmark at a marker, rv written with leading zeros (the same number to
// the API server, should the reflector watch from it), that no earlier event
// carried, and waits for the store to say it, then a Bookmark at rv.
func (w *coverWatch) storeAt(rv string) (toolscache.Store, error) {
	store := w.l.fed()
	versioned, ok := store.(interface{ LastStoreSyncResourceVersion() string })
	if !ok || !tracksProcessed(store) {
		return nil, &relistNeeded{"the informer's store cannot say what it has processed (client-go's AtomicFIFO feature is off)"}
	}
	marker := w.l.nextMarker(rv)
	if err := w.sendBookmark(marker); err != nil {
		return nil, err
	}
	err := wait.PollUntilContextTimeout(w.ctx, 10*time.Millisecond, storeCatchUp, true, func(context.Context) (bool, error) {
		return versioned.LastStoreSyncResourceVersion() == marker, nil
	})
	if err != nil && w.ctx.Err() == nil {
		// The reflector relists from its last resourceVersion: rv, not the
		// marker (the API server reads leading zeros today; it need not).
		if err := w.sendBookmark(rv); err != nil {
			return nil, err
		}
		return nil, &relistNeeded{fmt.Sprintf("the informer had not processed what it was sent (up to resourceVersion %s) after %s", rv, storeCatchUp)}
	}
	if err != nil {
		return nil, err
	}
	return store, w.sendBookmark(rv)
}

// tracksProcessed reports whether store's LastStoreSyncResourceVersion
// follows what its informer processed, bookmarks included: the streaming
// informer's store (package informer) says so itself, whatever the feature
// gates; client-go's does only with its AtomicFIFO feature on.
func tracksProcessed(store toolscache.Store) bool {
	if s, ok := store.(interface{ TracksLastResourceVersion() bool }); ok {
		return s.TracksLastResourceVersion()
	}
	return clientfeatures.FeatureGates().Enabled(clientfeatures.AtomicFIFO)
}

// fail ends a move that could not finish. What the store was sent so far is
// consistent at rv (each step ends with a Bookmark at rv), so the move can go
// on from there.
func (w *coverWatch) fail(err error) {
	if w.ctx.Err() != nil {
		return
	}
	log := ctrllog.FromContext(w.ctx).WithName("sharding")
	var relist *relistNeeded
	var status apierrors.APIStatus
	switch {
	case errors.As(err, &relist):
		log.Info("warning: relisting a kind to follow this replica's buckets", "reason", relist.reason)
		telemetry.ShardCacheMoves.WithLabelValues(telemetry.MoveRelisted).Inc()
		expired := apierrors.NewResourceExpired(relist.reason).ErrStatus
		w.send(watch.Event{Type: watch.Error, Object: &expired})
	case errors.As(err, &status):
		// The reflector knows what to do: relist on 410 (rv compacted away),
		// back off on 429, relist after others, forbidden ones included.
		log.Info("warning: moving the cache to this replica's buckets failed", "err", err)
		telemetry.ShardCacheMoves.WithLabelValues(telemetry.MoveFailed).Inc()
		st := status.Status()
		w.send(watch.Event{Type: watch.Error, Object: &st})
	default:
		// The network: end the watch after a pause; the reflector watches
		// again from rv, and the move goes on.
		log.Info("warning: moving the cache to this replica's buckets failed; trying again", "err", err, "in", moveRetry)
		telemetry.ShardCacheMoves.WithLabelValues(telemetry.MoveFailed).Inc()
		select {
		case <-time.After(moveRetry):
		case <-w.ctx.Done():
		}
	}
}

func union(a, b bucketSet) bucketSet {
	for i := range a {
		a[i] = a[i] || b[i]
	}
	return a
}

// relistNeeded: a move cannot be made in place, the kind is relisted.
type relistNeeded struct{ reason string }

func (e *relistNeeded) Error() string { return e.reason }

// send passes ev to the reflector, unless the watch was stopped.
func (w *coverWatch) send(ev watch.Event) bool {
	select {
	case w.out <- ev:
		return true
	case <-w.ctx.Done():
		return false
	}
}

func (w *coverWatch) sendBookmark(rv string) error {
	if !w.send(watch.Event{Type: watch.Bookmark, Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}}) {
		return w.ctx.Err()
	}
	return nil
}

func resourceVersion(obj runtime.Object) string {
	return mustAccessor(obj).GetResourceVersion()
}

func isInitialEventsEnd(obj runtime.Object) bool {
	return mustAccessor(obj).GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}

// mustAccessor is obj's metadata; an object without any (none reaches an
// informer) reads as empty.
func mustAccessor(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		return &metav1.ObjectMeta{}
	}
	return m
}
