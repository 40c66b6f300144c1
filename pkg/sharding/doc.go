// Package sharding splits the objects metawatch watches among its active
// replicas (--sharding): the buckets, their assignment, the ring of bucket and
// member Leases that says who may write, and the caches that follow a
// replica's share.
//
// It lets several replicas work at once, each caching and writing only its
// share, where leader election leaves all but one idle.
//
// # Buckets
//
// The uid space is cut into Buckets fixed buckets by the top bits of the
// 64-bit FNV-1a hash of an object's uid: the hash the API server's
// ShardedListAndWatch (KEP-5866) filters on, so the server and a replica
// agree on every object's bucket. Ownership moves a bucket at a time, never
// an object at a time: a replica writes an object only while it holds the
// Lease of the object's bucket. A uid never changes, so an object never moves
// between buckets.
//
// # Selectors
//
// A replica's buckets become one shardRange term per run of contiguous
// buckets, built and printed by apimachinery's sharding package (bounds of
// exactly 16 lower-case hex digits, the only form the server accepts).
//
// # Assignment
//
// Each bucket's desired owner comes from rendezvous hashing with bounded
// loads: every live replica gets 64/N buckets, rounded down or up, those it
// scores highest among the ones still free, going from the highest score of
// any (replica, bucket) pair down. Plain rendezvous hashing (the highest score
// wins) moves the fewest buckets but is even only on average, and 64 buckets
// are too few for the average (bench/results/shards.md says how uneven it was).
// Bounded, a join or leave still moves about 1/N of the buckets
// (rendezvous_test.go), and every replica computes the same answer from the
// same member list with no coordinator.
//
// # Ownership (ring.go, leases.go)
//
// A Ring renews one member Lease per replica and keeps one Lease per bucket
// naming its holder. Only member Leases are renewed every round (one write
// per replica per RetryPeriod, not one per bucket); a bucket Lease is written
// only when it changes hands. A replica takes a bucket when it is the
// desired owner and the bucket is free, or its holder's member Lease has not
// changed for LeaseDuration on the taker's clock. It hands a bucket on by
// refusing new writes to it, waiting for those in flight, then emptying its
// Lease. Ring.Begin is the gate every write passes. Why one Lease per bucket
// rather than fixed ordinals: during 2→3 an ordinal scheme has the old and
// the new replica both own a range for a moment; a Lease cannot be held twice.
//
// # Watching (listwatch.go)
//
// ListerWatcher restricts a kind's list and watch to a replica's buckets:
// server-side with a ShardSelector when ServerFilters says the API server
// honours it (a typed LIST's shardInfo: metadata-only lists never carry it),
// and client-side in every case, as a defence against a server with the gate
// off and 1.36's unfiltered watches straight from etcd (kubernetes#140510).
// With the gate off, the stripping transport (wire.KeepUIDs) drops the other
// buckets' objects before they are decoded: the bytes are still received,
// the decoding is not paid. metawatch_sharding_dropped_objects_total counts
// both drops, by stage.
//
// # Moving (coverage.go, moves.go)
//
// A replica's caches follow a Coverage, the buckets it is assigned. When a
// replica comes or goes, about 1/N of the buckets move, and each sharded
// informer moves in place, between two watch events: the objects of the
// buckets that went are taken out of its store, those of the buckets that
// came are listed alone (at the resourceVersion the watch had reached, so
// the store stays consistent), and the watch goes on from there over the new
// buckets. Nothing else is listed again: neither the buckets that stayed nor
// the cluster-scoped kinds, and no second cache is built beside the first.
// What cannot move in place relists that kind alone.
//
// # Where it plugs in
//
// cmd/metawatch/sharding.go starts the Ring for --sharding and asks once
// whether the API server filters by shard (ServerFilters). pkg/reload
// (sharding.go) runs generations on every replica, points their caches at the
// replica's desired buckets as they change, and publishes the sharding mode
// and the buckets owned and unwritable. pkg/metacache/options.go restricts
// each namespaced kind's informer with ListerWatcher. pkg/authority's
// Guard passes every write through the Ring, and checks its claim again as
// the request leaves. The chart's sharding.enabled runs it (deploy/helm);
// the bench's shards scenario measures N replicas' shares (bench/scenarios/shards).
package sharding
