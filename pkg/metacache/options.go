package metacache

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/access"
	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/informer"
	"github.com/metawatch/metawatch/pkg/memlimit"
	"github.com/metawatch/metawatch/pkg/sharding"
	"github.com/metawatch/metawatch/pkg/telemetry"
)

// ShardFilter restricts a sharded replica's cache to its share of the
// namespaced objects: the buckets its cache holds, as they change, and
// whether the API server filters by shard (else the client drops the rest;
// see sharding.ListerWatcher).
type ShardFilter struct {
	Cover      *sharding.Coverage
	ServerSide bool
}

// Options are what the cache keeps besides the watches' own settings.
type Options struct {
	// Identity is metawatch's write identity: its field manager's entry is
	// the one managedFields entry the cache keeps (see
	// Shrink.ManagedFields), and the adopted name's too, for as long as it
	// owns keys metawatch takes over (controller's adoption). Required.
	Identity *authority.Identity
	// AccessLoss, if not nil, learns of lists and watches the API server forbids.
	AccessLoss *access.AccessLoss
	// ShardFilter, if not nil, restricts the namespaced kinds to a share of
	// their objects. Cluster-scoped kinds (Namespaces, Nodes) are few: every
	// replica holds all of them.
	ShardFilter *ShardFilter
	// StockInformers builds client-go's informers instead of the streaming
	// ones (package informer), which store each listed object as it comes
	// (--stream-lists=false: for measuring both).
	StockInformers bool
	// Relists, if not nil, learns the streaming informers built, by kind,
	// to say which kinds relist.
	Relists *Relists
}

// CacheOptions is one ByObject entry per watch, keyed by a metadata-only object
// of the watch's kind, with its server-side selectors and namespaces.
func CacheOptions(watches []config.ResolvedWatch, o Options) cache.Options {
	byObject := make(map[client.Object]cache.ByObject, len(watches))
	for _, w := range watches {
		byObject[NewObject(w.GVK)] = byObjectFor(w, o.Identity)
	}
	opts := cache.Options{
		ByObject:                    byObject,
		ReaderFailOnMissingInformer: true,
		// Every watch sets its own; this covers any other informer.
		DefaultTransform: shrinkFor(o.Identity, nil).Transform(),
	}
	opts.NewInformer = newInformer(watches, o)
	return opts
}

// newInformer is the informer o chooses, its list and watch restricted to
// the share (namespaced kinds, if o.ShardFilter) and reported to the access
// loss (if o.AccessLoss).
func newInformer(watches []config.ResolvedWatch, o Options) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
	loss, shards := o.AccessLoss, o.ShardFilter
	// Owners are cached whole on every replica: a pod's owner may be in any shard.
	namespaced := map[schema.GroupVersionKind]bool{}
	for _, w := range watches {
		namespaced[w.GVK] = w.Namespaced && !w.Owner
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
		inf := o.build(lw, obj, resync, indexers)
		if sharded != nil {
			sharded.Feeds(inf.GetStore())
		}
		return inf
	}
}

// build is the informer itself: client-go's, or the streaming one, which
// counts its handlers' backlog, tells Relists of its relists and paces the
// process's GC tighter while it lists (memlimit.ProcessLists).
func (o Options) build(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if o.StockInformers {
		return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	}
	kind := obj.GetObjectKind().GroupVersionKind().GroupKind()
	inf := informer.New(lw, obj, resync, indexers, informer.Options{Backlog: telemetry.InformerHandlerBacklog.WithLabelValues(kind.String()), Lists: memlimit.ProcessLists})
	o.Relists.add(kind, inf)
	return inf
}

func byObjectFor(w config.ResolvedWatch, id *authority.Identity) cache.ByObject {
	entry := cache.ByObject{Label: w.Label, Field: w.Field, Transform: watchTransform(w, id)}
	if len(w.Namespaces) > 0 {
		entry.Namespaces = make(map[string]cache.Config, len(w.Namespaces))
		for _, ns := range w.Namespaces {
			entry.Namespaces[ns] = cache.Config{}
		}
	}
	return entry
}
