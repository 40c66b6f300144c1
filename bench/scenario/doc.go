// Package scenario drives the cluster while a bench variant runs, and watches
// the result from outside the variant's process.
//
// An Observer (its own metadata watch on the namespace under test, or on
// every namespace) tells when every pod carries a value (Converge, Bare,
// FanOut, BareFanOut) and how long each label change took to be undone
// (Churn). Probes are two other clients of the same API server, a reader and
// a writer, whose latencies show what a fan-out costs everyone else.
// A Replica is the metawatch binary run as users run it, for the scenarios
// that measure the binary itself (failover, fanout). Measuring from outside
// the variant's process makes the figures the same for every variant,
// whatever it is built from.
package scenario
