package sharding

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/metawatch/metawatch/pkg/telemetry"
	"github.com/metawatch/metawatch/pkg/wire"
)

// ListWatch is a kind's list and watch restricted to the buckets of a
// Coverage, for a metadata-only informer: server-side with a ShardSelector on
// every list and watch (watch-lists included), or, without serverSide, by the
// stripping transport (wire.KeepUIDs), which drops the others' objects before
// they are decoded. In any case it drops what comes back outside the buckets
// after decoding too, because an API server with the ShardedListAndWatch gate
// off ignores the selector, and 1.36 does not filter a watch served straight
// from etcd (kubernetes#140510). Bookmarks and errors always pass: they belong
// to no object, and a reflector needs them. No buckets is nothing at all, not
// the empty selector (which is everything).
//
// When the Coverage changes, its watch moves the informer's store to the new
// buckets in place (moves.go): for that it must know the store it feeds (Feeds).
type ListWatch struct {
	in         toolscache.ListerWatcherWithContext
	cover      *Coverage
	serverSide bool

	mu    sync.Mutex
	store toolscache.Store
	// holds are the buckets whose objects the store holds once it has
	// processed everything sent so far; partial, those a move began to fill
	// and did not finish (some of their objects may be in the store: the next
	// move fills or empties them); listing, those of the paginated list under
	// way.
	holds, partial, listing bucketSet
	// markers counts the store markers sent (coverWatch.storeAt).
	markers int
}

// ListerWatcher restricts lw to the buckets cover covers, as they change.
func ListerWatcher(lw toolscache.ListerWatcher, cover *Coverage, serverSide bool) *ListWatch {
	return &ListWatch{in: toolscache.ToListerWatcherWithContext(lw), cover: cover, serverSide: serverSide}
}

// Feeds tells l the store of the informer it feeds: a move takes the objects
// of the buckets that went from it. Without it, such a move relists.
func (l *ListWatch) Feeds(store toolscache.Store) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.store = store
}

// List is ListWithContext without a context, for toolscache.ListerWatcher.
func (l *ListWatch) List(o metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), o)
}

// Watch is WatchWithContext without a context, for toolscache.ListerWatcher.
func (l *ListWatch) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), o)
}

// ListWithContext lists the covered buckets' objects (a relist, or the
// fallback where the API server has no watch-list); the pages of one list
// keep the buckets of its first page.
func (l *ListWatch) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	l.mu.Lock()
	if o.Continue == "" {
		l.listing, _ = l.cover.now()
	}
	set := l.listing
	l.mu.Unlock()
	list, err := l.list(ctx, o, set)
	if err != nil {
		return nil, err
	}
	if m, err := meta.ListAccessor(list); err == nil && m.GetContinue() == "" {
		l.setHolds(set) // the reflector replaces its store with this
	}
	return list, nil
}

// list lists the objects of set.
func (l *ListWatch) list(ctx context.Context, o metav1.ListOptions, set bucketSet) (runtime.Object, error) {
	ctx = l.restrict(ctx, &o, set)
	list, err := l.in.ListWithContext(ctx, o)
	if err != nil {
		return nil, err
	}
	return list, filterList(list, &set)
}

// watch watches the objects of set, unfiltered after decoding (coverWatch does that).
func (l *ListWatch) watch(ctx context.Context, o metav1.ListOptions, set bucketSet) (watch.Interface, error) {
	ctx = l.restrict(ctx, &o, set)
	return l.in.WatchWithContext(ctx, o)
}

// restrict asks the server for set's objects, or the wire to drop the others.
func (l *ListWatch) restrict(ctx context.Context, o *metav1.ListOptions, set bucketSet) context.Context {
	if l.serverSide {
		o.ShardSelector = Selector(set.list())
		if o.ShardSelector == "" {
			// Nothing is ours. The server refuses an empty range, so ask for
			// the smallest one, hash 0 exactly (no uid in practice); the
			// client filter drops even that.
			o.ShardSelector = "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000001')"
		}
		return ctx
	}
	return wire.KeepUIDs(ctx, wire.UIDFilter{Keep: set.has, Dropped: droppedOnTheWire.Inc})
}

func (l *ListWatch) holding() (holds, partial bucketSet) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holds, l.partial
}

// setHolds records that the store holds exactly set's objects once it has
// processed what was sent.
func (l *ListWatch) setHolds(set bucketSet) { l.setHolding(set, bucketSet{}) }

func (l *ListWatch) setHolding(holds, partial bucketSet) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holds, l.partial = holds, partial
}

// nextMarker is a resourceVersion that reads as rv to the API server (a
// decimal with leading zeros) and differs from the markers sent before it.
func (l *ListWatch) nextMarker(rv string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.markers++
	return strings.Repeat("0", 1+l.markers%64) + rv
}

func (l *ListWatch) fed() toolscache.Store {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.store
}

var (
	droppedOnTheWire = telemetry.ShardDropped.WithLabelValues(telemetry.StageWire)
	droppedDecoded   = telemetry.ShardDropped.WithLabelValues(telemetry.StageDecoded)
)

// inBuckets reports whether obj's uid falls in a kept bucket, and counts it if not.
func inBuckets(obj runtime.Object, keep *bucketSet) bool {
	m, err := meta.Accessor(obj)
	if err == nil && keep[BucketOf(m.GetUID())] {
		return true
	}
	droppedDecoded.Inc()
	return false
}

// filterList removes the items of list outside the kept buckets.
func filterList(list runtime.Object, keep *bucketSet) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return fmt.Errorf("sharding: reading a list's items: %w", err)
	}
	kept := items[:0]
	for _, item := range items {
		if inBuckets(item, keep) {
			kept = append(kept, item)
		}
	}
	if len(kept) == len(items) {
		return nil
	}
	return meta.SetList(list, kept)
}

// ServerFilters reports whether the API server filters by shard: a typed
// LIST (limit 1) with a selector comes back with its shardInfo only then.
// Metadata-only lists never carry it, whatever the gate, so the metadata
// client cannot tell. It lists the Leases of namespace, which the ring must
// be allowed to list anyway (the chart's Role grants nothing cluster-wide
// for it); an empty list says it as well.
func ServerFilters(ctx context.Context, cs kubernetes.Interface, namespace string) (bool, error) {
	list, err := cs.CoordinationV1().Leases(namespace).List(ctx, metav1.ListOptions{Limit: 1, ShardSelector: Selector([]Bucket{0})})
	if err != nil {
		return false, fmt.Errorf("sharding: probing the API server for ShardedListAndWatch (a list of the Leases in %s): %w", namespace, err)
	}
	return list.ShardInfo != nil, nil
}
