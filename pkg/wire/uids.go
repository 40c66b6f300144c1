package wire

import (
	"bytes"
	"context"

	"google.golang.org/protobuf/encoding/protowire"
)

// More field numbers, for finding an object's uid.
const (
	watchEventType = 1 // WatchEvent.type
	objectMetaUID  = 5 // ObjectMeta.uid
)

type keepUIDsKey struct{}

// UIDFilter says which objects a response keeps, by uid.
type UIDFilter struct {
	// Keep reports whether the object with uid is kept.
	Keep func(uid []byte) bool
	// Dropped, if set, is called once for each object dropped.
	Dropped func()
}

// KeepUIDs returns ctx such that the metadata-only protobuf responses of the
// requests made with it keep only the objects whose uid f keeps: the
// other list items and the other watch events (bookmarks and errors always
// pass) are dropped before client-go decodes them, so a replica that must
// filter on receipt (sharding with the API server's ShardedListAndWatch gate
// off) pays the bytes of every object but decodes only its own. An object
// whose uid cannot be read is kept, for the decoder to judge; the caller
// checks again after decoding.
func KeepUIDs(ctx context.Context, f UIDFilter) context.Context {
	return context.WithValue(ctx, keepUIDsKey{}, &f)
}

func keepUIDsOf(ctx context.Context) *UIDFilter {
	f, _ := ctx.Value(keepUIDsKey{}).(*UIDFilter)
	return f
}

// dropped counts one object dropped.
func (f *UIDFilter) dropped() {
	if f.Dropped != nil {
		f.Dropped()
	}
}

// keepEvent reports whether the watch event in frame passes keep: a bookmark,
// an error, or an object keep accepts or whose uid cannot be read.
func keepEvent(frame []byte, keep func(uid []byte) bool) bool {
	switch typ, _ := lastBytesField(frame, watchEventType); string(typ) {
	case "ADDED", "MODIFIED", "DELETED":
	default:
		return true
	}
	object, _ := lastBytesField(frame, watchEventObject)
	raw, _ := lastBytesField(object, rawExtensionRaw)
	if !bytes.HasPrefix(raw, protobufMagic) {
		return true
	}
	inner, _ := lastBytesField(raw[len(protobufMagic):], unknownRaw)
	return keepObject(inner, keep)
}

// keepObject reports whether the PartialObjectMetadata in b passes keep (or has no readable uid).
func keepObject(b []byte, keep func(uid []byte) bool) bool {
	meta, ok := lastBytesField(b, objectMeta)
	if !ok {
		return true
	}
	uid, ok := lastBytesField(meta, objectMetaUID)
	return !ok || keep(uid)
}

// lastBytesField is the value of the last length-delimited field num of the
// message in b (the one a decoder keeps); ok is false if there is none or b
// is malformed.
func lastBytesField(b []byte, num protowire.Number) (value []byte, ok bool) {
	wellFormed := eachField(b, func(n protowire.Number, typ protowire.Type, _, v []byte) bool {
		if n == num && typ == protowire.BytesType {
			value, ok = v, true
		}
		return true
	})
	if !wellFormed {
		return nil, false
	}
	return value, ok
}
