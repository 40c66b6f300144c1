package metacache

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/access"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/sharding"
)

// Shards is a sharded replica's share of the namespaced objects: the buckets
// its cache holds, as they change, and whether the API server filters by
// shard (else the client drops the rest; see sharding.ListerWatcher).
type Shards struct {
	Cover      *sharding.Coverage
	ServerSide bool
}

// CacheOptions is one ByObject entry per watch, keyed by a metadata-only object
// of the watch's kind, with its server-side selectors and namespaces; loss (if
// not nil) learns of lists and watches the API server forbids; shards (if not
// nil) restricts the namespaced kinds to a share of their objects. Cluster-
// scoped kinds (Namespaces, Nodes) are few: every replica holds all of them.
func CacheOptions(watches []config.ResolvedWatch, loss *access.AccessLoss, shards *Shards) cache.Options {
	byObject := make(map[client.Object]cache.ByObject, len(watches))
	for _, w := range watches {
		byObject[NewObject(w.GVK)] = byObjectFor(w)
	}
	opts := cache.Options{
		ByObject:                    byObject,
		ReaderFailOnMissingInformer: true,
		DefaultTransform:            transformFor(nil), // every watch sets its own; this covers any other informer
	}
	if loss != nil || shards != nil {
		opts.NewInformer = newInformer(watches, loss, shards)
	}
	return opts
}

// newInformer is the stock informer, its list and watch restricted to the
// shard (namespaced kinds) and reported to loss, either of which may be nil.
func newInformer(watches []config.ResolvedWatch, loss *access.AccessLoss, shards *Shards) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
	namespaced := map[schema.GroupVersionKind]bool{}
	for _, w := range watches {
		namespaced[w.GVK] = w.Namespaced
	}
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		var sharded *sharding.ListWatch
		if shards != nil && namespaced[obj.GetObjectKind().GroupVersionKind()] {
			sharded = sharding.ListerWatcher(lw, shards.Cover, shards.ServerSide)
			lw = sharded
		}
		if loss != nil {
			lw = loss.ListerWatcher(lw, obj)
		}
		informer := toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
		if sharded != nil {
			sharded.Feeds(informer.GetStore())
		}
		return informer
	}
}

func byObjectFor(w config.ResolvedWatch) cache.ByObject {
	entry := cache.ByObject{Label: w.Label, Field: w.Field, Transform: transformFor(w.Annotations)}
	if len(w.Namespaces) > 0 {
		entry.Namespaces = make(map[string]cache.Config, len(w.Namespaces))
		for _, ns := range w.Namespaces {
			entry.Namespaces[ns] = cache.Config{}
		}
	}
	return entry
}
