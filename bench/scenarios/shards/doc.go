// Package shards is the bench's shards scenario: 1, 2 and 3 sharded
// metawatch replicas at once on the same pods, each a variant's process of
// its own (bench/child) with its share of the buckets, started one after
// the other so that each one's sync runs alone, then a status-only churn
// all of them see at once. Filtered by the API server (a shard selector),
// then on receipt, with the API server's ShardedListAndWatch gate off (the
// local control plane restarted so) or, where the harness cannot restart
// it, with no selector sent. The replicas must cache every pod once between
// them.
//
// Run measures it at one size and hands each run's figures (Result) to the
// harness as they come; Table is the report's section of them. The figures'
// JSON names are the results format of bench/results.
package shards
