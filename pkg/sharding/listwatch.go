package sharding

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/metawatch/metawatch/pkg/metrics"
	"github.com/metawatch/metawatch/pkg/wire"
)

// ListerWatcher restricts lw to the objects of buckets. With serverSide it
// asks the API server for them (a ShardSelector on every list and watch,
// watch-lists included); without, the stripping transport (wire.KeepUIDs)
// drops the others before they are decoded. In any case it drops what comes
// back outside them after decoding too,
// because an API server with the ShardedListAndWatch gate off ignores the
// selector, and 1.36 does not filter a watch served straight from etcd
// (kubernetes#140510). Bookmarks and errors always pass: they belong to no
// object, and a reflector needs them. No buckets is nothing at all, not the
// empty selector (which is everything).
func ListerWatcher(lw toolscache.ListerWatcher, buckets []Bucket, serverSide bool) toolscache.ListerWatcher {
	in := toolscache.ToListerWatcherWithContext(lw)
	var keep [Buckets]bool
	for _, b := range buckets {
		if b >= 0 && b < Buckets {
			keep[b] = true
		}
	}
	selector := Selector(buckets)
	if selector == "" {
		// Nothing is ours. The server refuses an empty range, so ask for the
		// smallest one, hash 0 exactly (no uid in practice); the client
		// filter drops even that.
		selector = "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000001')"
	}
	withSelector := func(ctx context.Context, o metav1.ListOptions) (context.Context, metav1.ListOptions) {
		if serverSide {
			o.ShardSelector = selector
			return ctx, o
		}
		// The server sends everything: drop the others' objects before decoding.
		return wire.KeepUIDs(ctx, wire.UIDFilter{Keep: func(uid []byte) bool { return keep[bucketOfBytes(uid)] }, Dropped: droppedOnTheWire.Inc}), o
	}
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			list, err := in.ListWithContext(withSelector(ctx, o))
			if err != nil {
				return nil, err
			}
			return list, filterList(list, &keep)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := in.WatchWithContext(withSelector(ctx, o))
			if err != nil {
				return nil, err
			}
			return newFilteredWatch(w, &keep), nil
		},
	}
}

var (
	droppedOnTheWire = metrics.ShardDropped.WithLabelValues(metrics.StageWire)
	droppedDecoded   = metrics.ShardDropped.WithLabelValues(metrics.StageDecoded)
)

// inBuckets reports whether obj's uid falls in a kept bucket, and counts it if not.
func inBuckets(obj runtime.Object, keep *[Buckets]bool) bool {
	m, err := meta.Accessor(obj)
	if err == nil && keep[BucketOf(m.GetUID())] {
		return true
	}
	droppedDecoded.Inc()
	return false
}

// filterList removes the items of list outside the kept buckets.
func filterList(list runtime.Object, keep *[Buckets]bool) error {
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

// filteredWatch passes the events of kept buckets, bookmarks and errors. Its
// Stop ends the forwarding at once, even when nobody reads any more (unlike
// watch.Filter, which then leaks its goroutine: kubernetes#113254).
type filteredWatch struct {
	in     watch.Interface
	out    chan watch.Event
	stop   chan struct{}
	closed sync.Once
}

func newFilteredWatch(in watch.Interface, keep *[Buckets]bool) *filteredWatch {
	w := &filteredWatch{in: in, out: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(w.out)
		for event := range in.ResultChan() {
			switch event.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				if !inBuckets(event.Object, keep) {
					continue
				}
			}
			select {
			case w.out <- event:
			case <-w.stop:
				return
			}
		}
	}()
	return w
}

func (w *filteredWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *filteredWatch) Stop() {
	w.closed.Do(func() { close(w.stop) })
	w.in.Stop()
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
