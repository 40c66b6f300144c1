// Package manager builds metawatch's controller-runtime Manager: a cache of
// metadata only (package metacache) fetched through the managedFields-stripping
// transport (package wire), the metrics and health endpoints, and leader
// election on a Lease that is released only once writes have stopped.
//
// # Connections
//
// The cache's lists and watches have connections of their own, over HTTP/1.1
// (watch_connections.go, #14): on HTTP/2 each event cost the client a
// flow-control write and a hand-off between goroutines, 36 to 56% of what a
// status-only event cost in all. The writes and discovery share one HTTP/2
// connection, as controller-runtime sets them up.
//
// Lease renewal goes through its own rest.Config, with its own rate limiter:
// a replica whose client is busy listing must not lose its Lease for it.
package manager
