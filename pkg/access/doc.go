// Package access asks the API server what metawatch may do: the preflight
// check of every watch, access reviews, and access lost while running.
//
// It is one place for `metawatch check`, the start-up and every reload, so
// that all three tell a forbidden kind from a broken configuration alike.
//
// # Before a watch starts
//
// Check (preflight.go) lists one object of every watch with the watch's own
// selectors. An informer retries a forbidden list or a rejected selector
// forever and its cache never syncs; Check instead names the watch, the field
// and the fix, and tells a forbidden watch (served around, reported) from a
// broken one (the configuration is rejected). CanI (review.go) asks a
// SelfSubjectAccessReview, for the checks `metawatch check` makes of writes.
//
// # While it runs
//
// An established watch outlives a revoked permission: the next list or watch
// gets 403. AccessLoss (loss.go) is the cache's informer factory that notices,
// so that writes from a cache that no longer follows the cluster are frozen.
package access
