package wire

import (
	"bytes"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// The Kubernetes protobuf envelope: a magic prefix, then runtime.Unknown
// {typeMeta = 1, raw = 2, contentEncoding = 3, contentType = 4}.
var protobufMagic = []byte("k8s\x00")

// Field numbers the stripper walks through.
const (
	unknownRaw          = 2  // runtime.Unknown.raw
	listItems           = 2  // PartialObjectMetadataList.items
	objectMeta          = 1  // PartialObjectMetadata.metadata
	objectLabels        = 11 // ObjectMeta.labels (map entries)
	objectAnnotations   = 12 // ObjectMeta.annotations (map entries)
	objectManagedFields = 17 // ObjectMeta.managedFields
	entryManager        = 1  // ManagedFieldsEntry.manager
	watchEventObject    = 2  // WatchEvent.object (a RawExtension)
	rawExtensionRaw     = 1  // RawExtension.raw
)

// shape says which fields of a message hold messages to rewrite, and whether
// managedFields entries are dropped from it.
type shape struct {
	nested        map[protowire.Number]*shape
	envelope      bool // the message is "k8s\x00" + runtime.Unknown
	managedFields bool // the message is an ObjectMeta
	items         bool // the message is a list: its items may be dropped (edit.uids)
}

// edit is what a rewrite drops: every managedFields entry but those of
// managers and, if uids is set, the list items whose uid it refuses.
type edit struct {
	managers [][]byte
	uids     *UIDFilter
}

var (
	metaShape   = &shape{managedFields: true}
	objectShape = &shape{nested: map[protowire.Number]*shape{objectMeta: metaShape}}
	listShape   = &shape{items: true, nested: map[protowire.Number]*shape{listItems: objectShape}}
	// A watch event's object is itself an envelope of a PartialObjectMetadata.
	eventShape = &shape{nested: map[protowire.Number]*shape{watchEventObject: {nested: map[protowire.Number]*shape{
		rawExtensionRaw: {envelope: true, nested: map[protowire.Number]*shape{unknownRaw: objectShape}},
	}}}}
)

// envelopeOf is the envelope shape whose raw holds inner.
func envelopeOf(inner *shape) *shape {
	return &shape{envelope: true, nested: map[protowire.Number]*shape{unknownRaw: inner}}
}

// stripManagedFields rewrites protobuf-encoded metadata in place, before it is
// decoded, dropping every managedFields entry but keepManager's: the server
// always sends them, they are most of the bytes of metadata, and decoding
// them is most of the allocation and CPU of an event; a transform runs too
// late to save that. It returns the new length; ok is false when b is not what
// s describes, and then b is unchanged, byte for byte: the whole message is
// walked once without writing before it is rewritten, because an in-place
// rewrite cannot be undone once a later part turns out to be malformed.
func stripManagedFields(b []byte, s *shape, keepManager []byte) (n int, ok bool) {
	return strip(b, s, edit{managers: [][]byte{keepManager}})
}

// strip is stripManagedFields with list items dropped too (KeepUIDs).
func strip(b []byte, s *shape, e edit) (n int, ok bool) {
	if _, ok := rewrite(b, s, e, false); !ok {
		return 0, false
	}
	return rewrite(b, s, e, true)
}

// rewrite is one pass over the message in b: with write it compacts b in
// place; without, it only checks that b is what s describes (and computes the
// length a write would leave).
func rewrite(b []byte, s *shape, e edit, write bool) (int, bool) {
	if s.envelope {
		if !bytes.HasPrefix(b, protobufMagic) {
			return 0, false
		}
		n, ok := compact(b[len(protobufMagic):], s, e, write)
		return len(protobufMagic) + n, ok
	}
	return compact(b, s, e, write)
}

// compact moves every kept field of the message in b left (only if write):
// writes never overtake reads, because fields only shrink or go, so the
// writing pass reads exactly the bytes the checking pass read.
func compact(b []byte, s *shape, e edit, write bool) (int, bool) {
	w := 0
	keep := func(from, to int) {
		if write {
			copy(b[w:], b[from:to])
		}
		w += to - from
	}
	for r := 0; r < len(b); {
		num, typ, n := protowire.ConsumeTag(b[r:])
		if n < 0 {
			return 0, false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[r+n:])
		if m < 0 {
			return 0, false
		}
		end := r + n + m
		if typ != protowire.BytesType {
			keep(r, end)
			r = end
			continue
		}
		value, lenSize := protowire.ConsumeBytes(b[r+n : end])
		lenSize -= len(value)
		switch inner := s.nested[num]; {
		case s.managedFields && (num == objectLabels || num == objectAnnotations) && !wellFormed(value):
			// The generated decoder reads a map entry's key and value up to the
			// end of the whole ObjectMeta, not of the entry: a value that runs past
			// its entry would decode bytes this pass may remove. Such a message
			// (no API server sends one) is passed through untouched.
			return 0, false
		case s.managedFields && num == objectManagedFields && !keptEntry(value, e.managers):
		case s.items && num == listItems && e.uids != nil && !keepObject(value, e.uids.Keep):
			if write {
				e.uids.dropped()
			}
		case inner != nil:
			valueStart := r + n + lenSize
			newLen, ok := rewrite(b[valueStart:end], inner, e, write)
			if !ok {
				return 0, false
			}
			keep(r, r+n)
			if write {
				protowire.AppendVarint(b[w:w], uint64(newLen))
			}
			w += protowire.SizeVarint(uint64(newLen))
			keep(valueStart, valueStart+newLen)
		default:
			keep(r, end)
		}
		r = end
	}
	return w, true
}

// keptEntry reports whether a ManagedFieldsEntry is one of managers' (an
// entry it cannot read is kept: the decoder will judge it).
func keptEntry(entry []byte, managers [][]byte) bool {
	for len(entry) > 0 {
		num, typ, n := protowire.ConsumeTag(entry)
		if n < 0 {
			return true
		}
		entry = entry[n:]
		if num == entryManager && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(entry)
			return m < 0 || slices.ContainsFunc(managers, func(keep []byte) bool { return bytes.Equal(v, keep) })
		}
		m := protowire.ConsumeFieldValue(num, typ, entry)
		if m < 0 {
			return true
		}
		entry = entry[m:]
	}
	return false
}

// wellFormed reports whether every field of the message in b ends inside b.
func wellFormed(b []byte) bool {
	return eachField(b, func(protowire.Number, protowire.Type, []byte, []byte) bool { return true })
}
