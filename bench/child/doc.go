// Package child is a bench variant in a process of its own, the child, and
// the harness's handle on it: each variant runs in a fresh process so that
// nothing else is on its heap.
//
// The harness starts its own binary again with --child VARIANT (Start); the
// child (Serve) starts the variant, measures its sync and prints one JSON
// line (Synced) once its caches are synced and its initial reconciles done,
// then answers every line it reads on stdin with what it counted so far
// (Snapshot), and exits at end of input. A line may first ask for a CPU
// profile, the cached pods' uids, or the relist scenario's watch of the
// peak. The scenarios take their figures from the snapshots of a Measured
// variant: a child, or the chart's pods (the harness's deployed variant).
package child
