// Package engine turns a resolved configuration into a controller-runtime
// Manager whose cache holds only object metadata.
//
// Each watch becomes one cache.ByObject entry keyed by a
// metav1.PartialObjectMetadata that carries the watch's GVK (an object without
// it fails with "Object 'Kind' is missing", controller-runtime#1823), with the
// watch's label selector, field selector and namespaces, so the API server
// filters before anything crosses the wire. Metadata informers ask for
// protobuf (application/vnd.kubernetes.protobuf;as=PartialObjectMetadata) and
// stream their initial list (watch-list).
//
// ReaderFailOnMissingInformer is on: a typed Get or List of a watched kind
// would otherwise silently start a second, full informer
// (controller-runtime#1660) and cost the memory metawatch exists to save.
// managedFields are most of the bytes of metadata and only metawatch's own
// entry (which keys its rules own) is ever read, so the Manager's transport
// removes the others from protobuf responses before client-go decodes them
// (wire.StripManagedFields), and the cache transform (Transform) drops them from
// anything that still has them, drops annotations nothing reads, and interns
// repeated strings.
package engine
