package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The stripper's properties, whatever bytes arrive, for each shape it handles:
//   - input it rejects comes out byte-identical;
//   - input it accepts never grows, and stripping it again changes nothing;
//   - input that decodes decodes, after stripping, to the same object minus
//     other managers' managedFields entries.
func FuzzStripManagedFields(f *testing.F) {
	list := &metav1.PartialObjectMetadataList{Items: []metav1.PartialObjectMetadata{*podMetadata("web-1"), *podMetadata("web-2")}}
	list.SetGroupVersionKind(metaGV.WithKind("PartialObjectMetadataList"))
	event := &metav1.WatchEvent{Type: "MODIFIED", Object: runtime.RawExtension{Raw: encode(f, podMetadata("web-1"))}}
	f.Add(uint8(0), encode(f, podMetadata("web-1")))
	f.Add(uint8(1), encode(f, list))
	f.Add(uint8(2), encodeWatchEvent(f, event))
	f.Add(uint8(0), []byte("k8s\x00garbage"))
	f.Fuzz(func(t *testing.T, which uint8, in []byte) {
		s := shapes[int(which)%len(shapes)]
		b := append([]byte(nil), in...)
		n, ok := stripManagedFields(b, s.shape, keep)
		if !ok {
			if !bytes.Equal(b, in) {
				t.Fatalf("%s: rejected input was changed", s.name)
			}
			return
		}
		if n < 0 || n > len(in) {
			t.Fatalf("%s: stripped %d bytes into %d", s.name, len(in), n)
		}
		out := b[:n]
		again := append([]byte(nil), out...)
		if m, ok := stripManagedFields(again, s.shape, keep); !ok || !bytes.Equal(again[:m], out) {
			t.Fatalf("%s: stripping twice changed the output (ok=%v)", s.name, ok)
		}
		before, err := s.decode(t, in)
		if err != nil {
			return // not an object: only the byte properties hold
		}
		after, err := s.decode(t, out)
		if err != nil {
			t.Fatalf("%s: the input decodes, the stripped output does not: %v", s.name, err)
		}
		for i := range before {
			before[i].ManagedFields = ownEntries(before[i].ManagedFields)
		}
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("%s: after stripping\n got %+v\nwant %+v", s.name, after, before)
		}
	})
}

// ownEntries keeps the entries the stripper keeps: metawatch's, and those it cannot read.
func ownEntries(entries []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, e := range entries {
		if e.Manager == manager {
			out = append(out, e)
		}
	}
	return out
}

type shapeCase struct {
	name   string
	shape  *shape
	decode func(testing.TB, []byte) ([]metav1.PartialObjectMetadata, error)
}

var shapes = []shapeCase{
	{"an object", envelopeOf(objectShape), func(t testing.TB, b []byte) ([]metav1.PartialObjectMetadata, error) {
		obj := &metav1.PartialObjectMetadata{}
		_, _, err := protobufCodec(t).Decode(b, nil, obj)
		return []metav1.PartialObjectMetadata{*obj}, err
	}},
	{"a list", envelopeOf(listShape), func(t testing.TB, b []byte) ([]metav1.PartialObjectMetadata, error) {
		list := &metav1.PartialObjectMetadataList{}
		_, _, err := protobufCodec(t).Decode(b, nil, list)
		return list.Items, err
	}},
	{"a watch event", eventShape, func(t testing.TB, b []byte) ([]metav1.PartialObjectMetadata, error) {
		e := &metav1.WatchEvent{}
		if err := e.Unmarshal(b); err != nil {
			return nil, err
		}
		obj := &metav1.PartialObjectMetadata{}
		_, _, err := protobufCodec(t).Decode(e.Object.Raw, nil, obj)
		return []metav1.PartialObjectMetadata{*obj}, err
	}},
}

// The frame reader, over a stream cut into arbitrary reads: every frame comes
// out as stripping it alone gives, in order, frames of refused uids left out
// when it filters, and the stream's end (a clean io.EOF, or
// io.ErrUnexpectedEOF inside a frame) is passed on exactly.
func FuzzFrameStripper(f *testing.F) {
	frame := func(b []byte) []byte { return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...) }
	event := encodeWatchEvent(f, &metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: encode(f, podMetadata("web-1"))}})
	f.Add(append(frame(event), frame([]byte("garbage"))...), uint8(7), false)
	f.Add(append(frame(event), frame(event)[:9]...), uint8(3), true)
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8, filter bool) {
		e := edit{managers: [][]byte{keep}}
		if filter {
			e.uids = &UIDFilter{Keep: keepOdd}
		}
		want, wantErr := stripFramesOneByOne(stream, e)
		got, err := readToEnd(&frameStripper{edit: e, body: io.NopCloser(&choppy{data: stream, size: int(chunk%32) + 1})}, 13)
		// client-go compares a stream's end with ==, so the exact value is the property under test.
		switch {
		case wantErr == errFrameTooLarge && (err == io.EOF || err == io.ErrUnexpectedEOF): //nolint:errorlint // client-go compares with ==: the exact value is the property
			t.Fatalf("a frame over %d bytes ended the stream as %v, want an error of its own", maxFrame, err)
		case wantErr != errFrameTooLarge && err != wantErr: //nolint:errorlint // client-go compares with ==: the exact value is the property
			t.Fatalf("the stream ended with %#v, want exactly %v", err, wantErr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("frames differ from stripping each alone: %d bytes, want %d", len(got), len(want))
		}
	})
}

// stripFramesOneByOne is what the frame reader must produce, and the error it ends with.
func stripFramesOneByOne(stream []byte, e edit) ([]byte, error) {
	var out []byte
	for {
		if len(stream) == 0 {
			return out, io.EOF
		}
		if len(stream) < 4 {
			return out, io.ErrUnexpectedEOF
		}
		size := int(binary.BigEndian.Uint32(stream))
		if size > maxFrame {
			return out, errFrameTooLarge
		}
		if len(stream) < 4+size {
			return out, io.ErrUnexpectedEOF
		}
		b := append([]byte(nil), stream[4:4+size]...)
		stream = stream[4+size:]
		if e.uids != nil && !keepEvent(b, e.uids.Keep) {
			continue
		}
		if n, ok := strip(b, eventShape, e); ok {
			b = b[:n]
		}
		out = append(append(out, binary.BigEndian.AppendUint32(nil, uint32(len(b)))...), b...)
	}
}

var errFrameTooLarge = errors.New("frame too large")

// readToEnd reads r in reads of size bytes until it fails, and returns what
// it read and the very error it ended with (io.ReadAll swallows io.EOF).
func readToEnd(r io.Reader, size int) ([]byte, error) {
	var out []byte
	buf := make([]byte, size)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			return out, err
		}
	}
}

// choppy returns data in reads of at most size bytes, then io.EOF.
type choppy struct {
	data []byte
	size int
}

func (c *choppy) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.size)], c.data)
	c.data = c.data[n:]
	return n, nil
}
