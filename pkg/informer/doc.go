// Package informer is a SharedIndexInformer that streams lists into its store:
// every object of the initial list and of every relist goes from the decoder,
// through the cache's transform, straight into the indexer, one at a time, and
// the objects the list did not bring are swept out when it ends.
//
// # Why
//
// client-go's informer (v0.37) buffers a whole list before its store sees any
// of it: in watch-list mode the reflector adds every streamed object to a
// temporary store, hands Replace a slice of all of them, the FIFO copies it
// into one ReplacedAll delta, the informer builds a set of every key and a new
// indexer map, and each handler buffers its notifications in a ring that grows
// without bound and never shrinks (kubernetes#121474). At a million pods that
// is about 0.4 GB on top of the cache, at the first sync and again at every
// relist (an API server restart, a 410 after etcd compaction), and it is the
// peak, not the steady state, that sizes metawatch's memory limit.
//
// # The list/watch loop
//
// Run lists with a watch-list (sendInitialEvents, resourceVersionMatch
// NotOlderThan, bookmarks; resourceVersion "" on a fresh start): each ADDED
// event is transformed, marked with the list attempt's epoch and stored as it
// arrives. At the bookmark annotated k8s.io/initial-events-end, every stored
// object that is not marked with that epoch is deleted, and the handlers get
// a delete of a DeletedFinalStateUnknown, as client-go's informer gives for
// objects missing after a relist. The stream then goes on as the watch.
//
// Where the API server has no watch-list (the request fails, or the stream
// carries a change before that bookmark), the list is a paged LIST (500
// objects a page, continue tokens, resourceVersion ""), stored page by page
// the same way and swept after its last page, then a watch from its
// resourceVersion. A watch that ends or fails resumes from the last
// resourceVersion seen, bookmarks included. An expired resourceVersion (410,
// "too old", "too large") relists, with a new epoch; other errors are
// reported to the watch error handler and retried after client-go's
// reflector's backoff (800ms doubling to 30s, jittered).
//
// # What a relist costs
//
// The mark is an epoch, a uint32 counting list attempts. An object that
// offers a place for it (Marked: pkg/metacache's packed objects, in 4 bytes
// their 128-byte size class already had) keeps it itself; for others the
// list keeps a map from key to epoch for the objects it brought, and drops it
// when it ends. The sweep walks the stored keys a namespace at a time. So a
// relist costs what the first sync costs: the decoded object of the event or
// page in hand, the new stored copy of each object (the old one becomes
// garbage once its handlers have been told), the handlers' bounded queues,
// and the key map only for objects that are not Marked. There is no temporary
// store, no slice of every object, no second map.
//
// A list attempt cut short (the stream fails before its end) has stored what
// it brought; the next attempt of the same list stores over it, and tells the
// handlers nothing of an object an earlier attempt of that list already
// brought at the same resourceVersion, so they hear of each object once per
// list, as from client-go's informer.
//
// # Handlers
//
// Each registration has a queue of QueueLength notifications (1024 by
// default) drained by its own goroutine. When a queue is full the loop waits:
// a slow handler holds back the watch stream, it never grows a buffer. The
// notifications queued for all handlers are the Backlog gauge
// (metawatch_informer_handler_backlog). A handler added after the informer
// started gets an add for every stored object first (isInInitialList true),
// and its registration syncs once it has been handed the initial list.
//
// # Relists and their listeners
//
// Relisting reports a list under way after the first sync: its store then
// mixes objects the list has brought with objects it has yet to bring or to
// sweep. OnRelisted tells listeners when such a list ends, so that what must
// not be decided from a half-built view (metawatch's removals and releases)
// can wait for it.
package informer
