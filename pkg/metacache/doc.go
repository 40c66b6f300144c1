// Package metacache configures metawatch's cache: metadata-only objects of
// the watched kinds, each shrunk to what a rule or a write reads.
//
// It is the one place that says what the cache holds and how it asks the API
// server for it, because that is where metawatch's memory goes.
//
// # The cache's options
//
// CacheOptions gives each watch one cache.ByObject entry keyed by a
// metav1.PartialObjectMetadata that carries the watch's GVK (NewObject; an
// object without it fails with "Object 'Kind' is missing",
// controller-runtime#1823), with the watch's label selector, field selector
// and namespaces, so the API server filters before anything crosses the wire.
// ReaderFailOnMissingInformer is on: a typed Get or List of a watched kind
// would otherwise silently start a second, full informer
// (controller-runtime#1660) and cost the memory metawatch exists to save.
//
// Sharded, each namespaced kind's list and watch are restricted to the
// replica's buckets (options.go, through sharding.ListerWatcher and
// cache.Options' NewInformer: controller-runtime has no ByObject field for a
// shard selector). Cluster-scoped kinds, Namespaces and Nodes, are few and
// stay whole on every replica, so the Namespace fan-out still reads its cache.
//
// Every informer is built here (cache.Options' NewInformer): the streaming
// one of package informer by default, which stores each object of a list or
// relist as it arrives and sweeps what the list did not bring at its end,
// with bounded handler queues (Options.StockInformers: client-go's). Relists
// knows them by kind, to say which kinds relist.
//
// # What an object keeps
//
// The transform (shrinkFor, Shrink) keeps only metawatch's own managedFields
// entry (package wire already removed the others from protobuf before
// decoding; this covers anything that still has them), drops annotations
// nothing reads, and interns repeated strings and shares equal label maps
// through bounded tables (shared.go).
//
// The objects of the namespaced kinds rules write, nearly all of a cluster's,
// are then stored packed (compact.go): the same metadata in 128 bytes, given
// back whole by every cache read (DeepCopyObject), and read by event handlers
// through View. A read of a packed kind cannot skip its copy: controller-runtime
// hands such a read the stored object itself. Namespaces and the kinds of
// owner chains stay as they are: few, and read without copies on every event.
//
// # Readiness and counts
//
// SyncedCheck is the readiness check of a generation's informers;
// ObjectCounts publishes metawatch_cached_objects for the live one.
package metacache
