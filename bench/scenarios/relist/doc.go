// Package relist is the bench's relist scenario: after a variant's sync and
// steady window, the local kube-apiserver is stopped, etcd's revision is
// moved on past anything the variant's watch has seen, and the API server
// is started again. Its watch cache then begins after the variant's last
// resourceVersion, so the variant's resumed watch is answered 410 Gone and
// it lists every pod again: what an informer meets in production after an
// API server restart or an etcd compaction. The child's peak resident set
// is reset just before, and its live heap followed, until it has every pod
// again.
//
// Run measures it on one variant's process (bench/child) and returns its
// figures (Result), which the harness keeps in the variant's report.Result;
// Table is the report's section of them. The figures' JSON names are the
// results format of bench/results.
package relist
