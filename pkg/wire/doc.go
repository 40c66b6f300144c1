// Package wire rewrites what the API server sends before client-go decodes
// it: metadata-only protobuf responses (LIST bodies and each watch frame) lose
// every managedFields entry but metawatch's own, in place.
//
// # Why before decoding
//
// The server always sends managedFields, they are most of the bytes of
// metadata, and decoding them is most of the allocation of an event; a cache
// transform runs after decoding, too late to save that.
//
// # What it promises
//
// Anything it cannot parse passes through byte for byte (the whole message is
// checked before it is rewritten), stripping twice changes nothing, and a
// dropped connection reaches client-go as the same io.EOF or
// io.ErrUnexpectedEOF it would see without this package: client-go compares
// them with ==, and any other error makes it list the whole kind again
// (issue 10, defects 4 and 11).
//
// StripManagedFields puts the transport into a rest.Config. The package's
// tests need no control plane, so its fuzz targets run fast.
package wire
