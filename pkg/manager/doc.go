// Package manager builds metawatch's controller-runtime Manager: a cache of
// metadata only (package metacache) fetched through the managedFields-stripping
// transport (package wire), the metrics and health endpoints, and leader
// election on a Lease that is released only once writes have stopped.
//
// Lease renewal goes through its own rest.Config, with its own rate limiter:
// a replica whose client is busy listing must not lose its Lease for it.
package manager
