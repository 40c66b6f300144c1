// Package probe measures a bench variant from inside its own process: bytes
// received per request kind and content type (at the transport, so they are
// the wire's), heap after GC, peak RSS and CPU seconds.
//
// Each variant runs in a fresh process so that nothing else is on its heap;
// the harness reads these figures from the child (see bench/child). An
// Exposition is a metawatch process's metrics read from outside it (the
// chart variant's, the fanout scenario's replicas'), and an APIServer the
// local kube-apiserver's process read from outside (the fanout and bill
// scenarios').
package probe
