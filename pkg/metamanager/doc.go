// Package metamanager builds metawatch's controller-runtime Manager: a cache of
// metadata only, the metrics and health endpoints, and leader election.
//
// The cache (package metacache) fetches through the managedFields-stripping
// transport (package wire). The leader-election Lease is released only once
// writes have stopped, so a standby never writes while a write of the old
// leader may still land.
//
// # Connections
//
// The cache's lists and watches have connections of their own, over HTTP/1.1
// (watch_connections.go): on HTTP/2 each event cost the client a flow-control
// write and a hand-off between goroutines, a large share of what a status-only
// event cost in all (bench/results/status-events.md has the figures). The writes and
// discovery share one HTTP/2 connection, as controller-runtime sets them up.
//
// Lease renewal goes through its own rest.Config, with its own rate limiter:
// a replica whose client is busy listing must not lose its Lease for it.
package metamanager
