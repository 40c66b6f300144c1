// Package ownership reads which label and annotation keys a field manager
// owns on an object, from its server-side apply entry in managedFields.
//
// What metawatch owns is what it may release: a key its entry lists and no
// rule wants any more is deleted by the next apply that leaves it out. So
// every part of metawatch that decides or previews a write (the cache's
// transform, which keeps those keys in view; the guardrails; the removal
// brake; adoption; the reporter) reads ownership here, the same way.
//
// Parsing an entry is memoized by its bytes: objects metawatch manages alike
// carry the same entry, and a decision reads it several times.
package ownership
