// Package variant is the ways of running one rule over a large cluster's pods
// that the bench harness measures side by side.
//
// They are metawatch, what most teams write (a controller-runtime controller
// on typed Pods), stock controller-runtime metadata-only
// (builder.OnlyMetadata, no transforms), and a hand-written client-go
// metadatainformer controller. Cache-only variants add metawatch's memory
// steps (metacache.Shrink) one at a time on top of stock metadata-only, to
// show what each step saves.
//
// The rule is the same everywhere: a pod's cost-center label equals its
// namespace's. Every variant caches the same objects (Spec.Selector, server
// side, on pods and namespaces) and writes the same way: a metadata-only
// server-side apply as metawatch's field manager, so that variants run one
// after another on the same pods never conflict with each other.
package variant
