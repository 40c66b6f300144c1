// Package wire is the HTTP transport that rewrites what the API server sends
// before client-go decodes it.
//
// Metadata-only protobuf responses (LIST bodies and each watch frame) lose
// every managedFields entry but metawatch's own, in place, and watch events of
// unchanged objects become bookmarks. Sharded with the API server's gate off,
// it also drops other replicas' objects (uids.go), and each watch stream
// remembers the newest resourceVersion of each object for the writes'
// preconditions (versions.go).
//
// # Why before decoding
//
// The server always sends managedFields, they are most of the bytes of
// metadata, and decoding them is most of the allocation of an event; a cache
// transform runs after decoding, too late to save that.
//
// # What it promises
//
// Anything it cannot parse passes through byte for byte (the whole message is
// checked before it is rewritten), stripping twice changes nothing, and a
// dropped connection reaches client-go as the same io.EOF or
// io.ErrUnexpectedEOF it would see without this package: client-go compares
// them with ==, and any other error makes it list the whole kind again.
//
// # Unchanged objects are left out
//
// Most of a big cluster's watch events are status-only updates: once other
// managers' managedFields are stripped, the object differs from the one the
// stream delivered last only by its resourceVersion, and nothing metawatch
// reads has changed. Decoding, storing and handing each to the predicates
// costs as much as the stock metadata cache spends on an event, and so does
// a bookmark for each: every event delivered wakes the reflector and the
// informer's queue. So a watch stream remembers a fingerprint of each object
// it delivered (by uid) and leaves out the event of an unchanged one; a
// bookmark carries the newest resourceVersion left out to the reflector at
// most once per interval, and always before the stream ends, which is when
// the reflector resumes from it. The store keeps the object of its last
// change metawatch can see. Only what the same stream delivered is compared,
// and the stream's frames reach the reflector in order, so what is compared
// is what the cache will hold; a new stream (a resumed watch, a relist)
// remembers nothing.
//
// StripManagedFields puts the transport into a rest.Config. The package's
// tests need no control plane, so its fuzz targets run fast.
package wire
