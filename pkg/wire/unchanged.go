package wire

import (
	"encoding/binary"
	"hash/maphash"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// More field numbers, for recognising an unchanged object.
const (
	unknownTypeMeta       = 1 // runtime.Unknown.typeMeta
	objectResourceVersion = 6 // ObjectMeta.resourceVersion
)

// seed keys every fingerprint of the process: nobody can craft metadata
// whose fingerprint collides with another's without knowing it.
var seed = maphash.MakeSeed()

// unchangedEvents recognises, on one watch stream, the MODIFIED events whose
// object (stripped, as the cache would get it) is byte for byte the one the
// stream delivered last for that uid but for its resourceVersion: a
// status-only update, once managedFields are stripped. Such an event is not
// delivered: client-go neither decodes the object nor stores, queues or hands
// it to a handler. A BOOKMARK with its resourceVersion stands for it, so that
// the reflector resumes from there: at once with no interval, else at most
// once per interval, and always before the stream's end (a closed or broken
// connection), which is when the reflector resumes. The next delivered event
// (a newer resourceVersion) makes a held-back bookmark unnecessary.
//
// It remembers only what this stream delivered, and the stream's frames
// reach the reflector in order: an event is left out only if the object the
// cache will hold once the stream's earlier events are applied is this one.
// It remembers the objects of ADDED events too (the initial events of a
// watch-list), so that an object's first update is left out as well: a map
// entry per object, about 30 B, for as long as the stream lasts. A new
// stream (a resumed watch, a relist) starts with nothing remembered, so events
// lost when a stream breaks can never make it leave one out.
type unchangedEvents struct {
	// mu guards last: ResourceVersions reads it from other goroutines.
	mu   sync.Mutex
	last map[uint64]delivered // the uid's fingerprint -> what the stream delivered of the object
	hash maphash.Hash
	// counted, if set, is called once for each event left out.
	counted func()
	// interval is the most a bookmark is held back while events flow; zero
	// sends one for every event left out.
	interval time.Duration
	now      func() time.Time
	// heldRV is the resourceVersion of the newest event left out and not yet
	// stood for by a bookmark (empty if none); typeMeta is the stream's
	// objects' kind, for the bookmark; sent is when the reflector last got a
	// resourceVersion (an event or a bookmark).
	heldRV, typeMeta []byte
	sent             time.Time
}

// delivered is what a stream delivered of one object: the fingerprint of
// everything but its resourceVersion; the low 32 bits of the delivered
// version's resourceVersion (a cached version whose low bits match is that
// one: another would be 2^32 revisions away); and how much newer the newest
// version the stream carried is (a version left out as unchanged; 0: none).
// 16 bytes, not 24, for an entry every cached object has.
type delivered struct {
	fingerprint uint64
	versionLow  uint32
	newer       uint32
}

// newDelivered is what the stream delivers of an object at version rv.
func newDelivered(fingerprint, rv uint64) delivered {
	return delivered{fingerprint: fingerprint, versionLow: uint32(rv)}
}

// leftOut notes that the stream carried version rv of the object, unchanged.
// A version too far ahead to be said in 32 bits is not kept.
func (d *delivered) leftOut(rv uint64) {
	if ahead := uint32(rv) - d.versionLow; rv != 0 && uint64(ahead) > uint64(d.newer) && ahead < 1<<31 {
		d.newer = ahead
	}
}

func newUnchangedEvents(interval time.Duration, counted func()) *unchangedEvents {
	u := &unchangedEvents{last: map[uint64]delivered{}, counted: counted, interval: interval, now: time.Now}
	u.hash.SetSeed(seed)
	u.sent = u.now()
	return u
}

// event is what one stripped frame of the stream says about an object.
type event struct {
	typ                string
	uid, rv            []byte
	unknown            []byte // the object's runtime.Unknown envelope, without its magic
	fingerprint        uint64 // of everything of the object but its resourceVersion
	ofObject, readable bool   // an ADDED, MODIFIED or DELETED; its object could be read
}

// next says what the stream delivers for frame, a stripped watch event:
// nothing for now (skip: an unchanged object's event held back), a bookmark
// standing for it and the events held back before it (built into buf), or
// else frame itself. It remembers what the stream delivers.
func (u *unchangedEvents) next(frame, buf []byte) (bookmark []byte, skip bool) {
	e := u.read(frame)
	if !u.unchanged(e) {
		u.delivered()
		return nil, false
	}
	if u.counted != nil {
		u.counted()
	}
	typeMeta, _ := lastBytesField(e.unknown, unknownTypeMeta)
	u.heldRV, u.typeMeta = append(u.heldRV[:0], e.rv...), append(u.typeMeta[:0], typeMeta...)
	if u.now().Sub(u.sent) >= u.interval {
		return u.flush(buf), false
	}
	return nil, true
}

// delivered notes that the stream delivers a frame of its own: its
// resourceVersion, if any, is newer than any held back.
func (u *unchangedEvents) delivered() {
	u.heldRV, u.sent = u.heldRV[:0], u.now()
}

// unchanged reports whether e is an unchanged object's MODIFIED event, and
// otherwise remembers (or forgets) what it delivers.
func (u *unchangedEvents) unchanged(e event) bool {
	switch {
	case !e.ofObject:
		return false
	case !e.readable:
		u.forget()
		return false
	}
	key := maphash.Bytes(seed, e.uid)
	rv := decimal(e.rv)
	u.mu.Lock()
	defer u.mu.Unlock()
	if e.typ == "DELETED" {
		delete(u.last, key)
		return false
	}
	if last, ok := u.last[key]; ok && last.fingerprint == e.fingerprint && e.typ == "MODIFIED" && len(e.rv) > 0 {
		last.leftOut(rv)
		u.last[key] = last
		return true
	}
	u.last[key] = newDelivered(e.fingerprint, rv)
	return false
}

// newest is the newest resourceVersion the stream carried of the object
// with uid whose version the cache holds is version, if the stream
// delivered that version and left newer ones out; else 0.
func (u *unchangedEvents) newest(uid string, version uint64) uint64 {
	key := maphash.String(seed, uid)
	u.mu.Lock()
	defer u.mu.Unlock()
	if last, ok := u.last[key]; ok && last.versionLow == uint32(version) && last.newer > 0 {
		return version + uint64(last.newer)
	}
	return 0
}

// decimal is the value of a decimal resourceVersion (etcd's revisions), or 0.
func decimal(b []byte) uint64 {
	if len(b) == 0 || len(b) > 19 {
		return 0
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + uint64(c-'0')
	}
	return n
}

// flush returns the bookmark (built into buf) of the events held back, or
// nil if there are none.
func (u *unchangedEvents) flush(buf []byte) []byte {
	if len(u.heldRV) == 0 {
		return nil
	}
	b := appendBookmark(buf, u.typeMeta, u.heldRV)
	u.delivered()
	return b
}

// forget forgets every object: the stream delivers one whose content cannot
// be known here (client-go will make of it what it can), so nothing it
// delivers may be compared with what was remembered before.
func (u *unchangedEvents) forget() {
	u.mu.Lock()
	clear(u.last)
	u.mu.Unlock()
}

// rejected notes that the stream delivers a frame the stripper rejected.
func (u *unchangedEvents) rejected() {
	u.forget()
	u.delivered()
}

// read parses a stripped watch event; every message on the way to the
// object's metadata must occur exactly once (protobuf merges repeated
// messages, which the fingerprint would not follow).
func (u *unchangedEvents) read(frame []byte) event {
	var e event
	typ, _ := lastBytesField(frame, watchEventType)
	e.typ = string(typ)
	switch e.typ {
	case "ADDED", "MODIFIED", "DELETED":
		e.ofObject = true
	default:
		return e
	}
	object, ok := onlyBytesField(frame, watchEventObject)
	if !ok {
		return e
	}
	raw, ok := onlyBytesField(object, rawExtensionRaw)
	if !ok || len(raw) < len(protobufMagic) || string(raw[:len(protobufMagic)]) != string(protobufMagic) {
		return e
	}
	e.unknown = raw[len(protobufMagic):]
	u.hash.Reset()
	e.readable = u.hashExcept(e.unknown, unknownRaw, func(inner []byte) bool {
		return u.hashExcept(inner, objectMeta, func(meta []byte) bool { return u.hashMeta(meta, &e) })
	})
	e.fingerprint = u.hash.Sum64()
	return e
}

// hashExcept hashes every field of the message in b but the one numbered
// nested, which must occur exactly once and is handed to inner instead.
func (u *unchangedEvents) hashExcept(b []byte, nested protowire.Number, inner func([]byte) bool) bool {
	seen := false
	ok := eachField(b, func(num protowire.Number, typ protowire.Type, field, value []byte) bool {
		if num != nested {
			_, _ = u.hash.Write(field)
			return true
		}
		if seen || typ != protowire.BytesType {
			return false
		}
		seen = true
		// Mark where the nested message starts and ends (a zero tag is never
		// a field's), so no other nesting of the same fields hashes alike.
		_ = u.hash.WriteByte(0)
		ok := inner(value)
		_ = u.hash.WriteByte(0)
		return ok
	})
	return ok && seen
}

// hashMeta hashes every field of an ObjectMeta but its resourceVersion, and
// reads its uid and resourceVersion into e.
func (u *unchangedEvents) hashMeta(meta []byte, e *event) bool {
	return eachField(meta, func(num protowire.Number, typ protowire.Type, field, value []byte) bool {
		switch {
		case num == objectResourceVersion && typ == protowire.BytesType:
			e.rv = value
			return true
		case num == objectMetaUID && typ == protowire.BytesType:
			e.uid = value
		}
		_, _ = u.hash.Write(field)
		return true
	}) && len(e.uid) > 0
}

// eachField calls f with every field of the message in b (the whole field,
// and its value if length-delimited) until f returns false; false if b is
// malformed or f returned false.
func eachField(b []byte, f func(num protowire.Number, typ protowire.Type, field, value []byte) bool) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return false
		}
		var value []byte
		if typ == protowire.BytesType {
			value, _ = protowire.ConsumeBytes(b[n : n+m])
		}
		if !f(num, typ, b[:n+m], value) {
			return false
		}
		b = b[n+m:]
	}
	return true
}

// onlyBytesField is the value of the length-delimited field num of the
// message in b; ok is false unless it occurs exactly once and b is well formed.
func onlyBytesField(b []byte, num protowire.Number) (value []byte, ok bool) {
	count := 0
	wellFormed := eachField(b, func(n protowire.Number, typ protowire.Type, _, v []byte) bool {
		if n == num {
			value, count = v, count+1
			return typ == protowire.BytesType
		}
		return true
	})
	return value, wellFormed && count == 1
}

// appendBookmark appends to buf[:0] the frame of a BOOKMARK event whose
// object is of kind typeMeta with only resourceVersion rv, as the API server
// sends one: WatchEvent{type, object: RawExtension{raw: magic +
// Unknown{typeMeta, raw: PartialObjectMetadata{metadata: ObjectMeta{rv}}}}}.
func appendBookmark(buf, typeMeta, rv []byte) []byte {
	meta := sizeBytes(objectResourceVersion, len(rv))
	object := sizeBytes(objectMeta, meta)
	unknown := sizeBytes(unknownTypeMeta, len(typeMeta)) + sizeBytes(unknownRaw, object)
	raw := len(protobufMagic) + unknown
	size := sizeBytes(watchEventType, len("BOOKMARK")) + sizeBytes(watchEventObject, sizeBytes(rawExtensionRaw, raw))

	b := binary.BigEndian.AppendUint32(buf[:0], uint32(size))
	b = appendBytes(b, watchEventType, []byte("BOOKMARK"))
	b = appendLength(b, watchEventObject, sizeBytes(rawExtensionRaw, raw))
	b = appendLength(b, rawExtensionRaw, raw)
	b = append(b, protobufMagic...)
	b = appendBytes(b, unknownTypeMeta, typeMeta)
	b = appendLength(b, unknownRaw, object)
	b = appendLength(b, objectMeta, meta)
	return appendBytes(b, objectResourceVersion, rv)
}

// sizeBytes is the size of a length-delimited field num with n bytes of value.
func sizeBytes(num protowire.Number, n int) int {
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}

// appendLength appends the tag and length of a length-delimited field whose n bytes follow.
func appendLength(b []byte, num protowire.Number, n int) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.BytesType), uint64(n))
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
}
