// Package churn is the bench's churn scenario: status-only updates (a
// kubelet's probe message, sent by kwok where the pods are on simulated
// nodes) and label changes (the rule's label removed from a pod) at fixed
// rates on the first namespace's pods, and what the variant did: events,
// reconciles, writes, CPU, and the latency from each label change to the
// rule's write seen on the harness's own watch, so that every variant is
// measured the same way. Sender sends the churn; the shards scenario's
// replicas get the same, through the harness.
//
// Run measures one variant at one size and returns its figures (Result),
// which the harness keeps in the variant's report.Result; Table is the
// report's section of them. The figures' JSON names are the results format
// of bench/results.
package churn
