package wire

import (
	"bytes"
	"encoding/binary"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

var metaGV = schema.GroupVersion{Group: "meta.k8s.io", Version: "v1"}

// manager is the field manager whose entries the stripper keeps in these tests.
const manager = "metawatch"

var keep = []byte(manager)

// protobufCodec is the meta.k8s.io protobuf codec, built once: building a
// scheme per decode would make the fuzz targets crawl.
func protobufCodec(t testing.TB) *protobuf.Serializer {
	t.Helper()
	codec, err := sharedCodec()
	if err != nil {
		t.Fatal(err)
	}
	return codec
}

var sharedCodec = sync.OnceValues(func() (*protobuf.Serializer, error) {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, metaGV)
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		return nil, err
	}
	return protobuf.NewSerializer(scheme, scheme), nil
})

func podMetadata(name string) *metav1.PartialObjectMetadata {
	entry := func(manager string, op metav1.ManagedFieldsOperationType) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "v1", FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{}}}`)}
	}
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "shop", UID: "u-" + "1", ResourceVersion: "42", Labels: map[string]string{"app": "web"},
		Annotations:   map[string]string{"note": "x"},
		ManagedFields: []metav1.ManagedFieldsEntry{entry("kubectl", metav1.ManagedFieldsOperationUpdate), entry(manager, metav1.ManagedFieldsOperationApply), entry("kubelet", metav1.ManagedFieldsOperationUpdate)},
	}}
	obj.SetGroupVersionKind(metaGV.WithKind("PartialObjectMetadata"))
	return obj
}

func encode(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := protobufCodec(t).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestStripManagedFieldsKeepsOnlyOurs(t *testing.T) {
	want := podMetadata("web-1")
	want.ManagedFields = want.ManagedFields[1:2]

	t.Run("an object", func(t *testing.T) {
		assertSameMeta(t, stripObject(t, keep), want)
	})
	t.Run("a list", func(t *testing.T) {
		list := &metav1.PartialObjectMetadataList{Items: []metav1.PartialObjectMetadata{*podMetadata("web-1"), *podMetadata("web-1")}}
		list.SetGroupVersionKind(metaGV.WithKind("PartialObjectMetadataList"))
		b := encode(t, list)
		n, ok := stripManagedFields(b, envelopeOf(listShape), keep)
		got := &metav1.PartialObjectMetadataList{}
		if _, _, err := protobufCodec(t).Decode(b[:n], nil, got); !ok || err != nil || len(got.Items) != 2 {
			t.Fatalf("strip ok=%v, decode %v, %d items", ok, err, len(got.Items))
		}
		for i := range got.Items {
			assertSameMeta(t, &got.Items[i], want)
		}
	})
	t.Run("a watch event", func(t *testing.T) {
		event := &metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: encode(t, podMetadata("web-1"))}}
		event.Object.Raw = encode(t, podMetadata("web-1"))
		b := encodeWatchEvent(t, event)
		n, ok := stripManagedFields(b, eventShape, keep)
		got := &metav1.WatchEvent{}
		if err := got.Unmarshal(b[:n]); !ok || err != nil {
			t.Fatalf("strip ok=%v, decode %v", ok, err)
		}
		obj := &metav1.PartialObjectMetadata{}
		if _, _, err := protobufCodec(t).Decode(got.Object.Raw, nil, obj); err != nil {
			t.Fatal(err)
		}
		assertSameMeta(t, obj, want)
	})
}

// encodeWatchEvent encodes a watch stream frame's content: a bare WatchEvent,
// as the API server's protobuf stream serializer writes it.
func encodeWatchEvent(t testing.TB, e *metav1.WatchEvent) []byte {
	t.Helper()
	b, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func assertSameMeta(t *testing.T, got, want *metav1.PartialObjectMetadata) {
	t.Helper()
	if !reflect.DeepEqual(got.ObjectMeta, want.ObjectMeta) {
		t.Errorf("after stripping:\n got %+v\nwant %+v", got.ObjectMeta, want.ObjectMeta)
	}
}

// The transport strips a protobuf watch stream frame by frame, for metadata
// requests only, and passes everything else through untouched.
func TestStripTransport(t *testing.T) {
	event := func() []byte {
		e := &metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: encode(t, podMetadata("web-1"))}}
		frame := encodeWatchEvent(t, e)
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)
	}
	stream := append(event(), event()...)
	cases := map[string]struct {
		accept    string
		wantStrip bool
	}{
		"a metadata watch":    {accept: metadataProtobuf + ";g=meta.k8s.io;v=v1,application/json", wantStrip: true},
		"a typed watch":       {accept: "application/vnd.kubernetes.protobuf,application/json", wantStrip: false},
		"a json metadata one": {accept: "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", wantStrip: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rt := stripTransport{keep: [][]byte{keep}, next: roundTripFunc(func(*http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/vnd.kubernetes.protobuf;stream=watch"}},
					Body: io.NopCloser(bytes.NewReader(stream))}, nil
			})}
			req := httptest.NewRequest(http.MethodGet, "https://api/api/v1/pods?watch=true", nil)
			req.Header.Set("Accept", tc.accept)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if stripped := len(body) < len(stream); stripped != tc.wantStrip {
				t.Fatalf("stripped = %v (%d -> %d bytes), want %v", stripped, len(stream), len(body), tc.wantStrip)
			}
			if tc.wantStrip {
				assertFramesDecode(t, body, 2)
			}
		})
	}
}

func assertFramesDecode(t *testing.T, body []byte, want int) {
	t.Helper()
	frames := decodeFrames(t, body)
	for _, f := range frames {
		if len(f.object.ManagedFields) != 1 || f.object.ManagedFields[0].Manager != manager {
			t.Errorf("managedFields after the transport: %v", f.object.ManagedFields)
		}
	}
	if len(frames) != want {
		t.Errorf("%d frames, want %d", len(frames), want)
	}
}

// frame is one decoded frame of a protobuf watch stream.
type frame struct {
	typ    string
	object *metav1.PartialObjectMetadata
}

// decodeFrames decodes every frame of a protobuf watch stream.
func decodeFrames(t *testing.T, stream []byte) []frame {
	t.Helper()
	var out []frame
	for len(stream) > 0 {
		size := int(binary.BigEndian.Uint32(stream))
		e := &metav1.WatchEvent{}
		if err := e.Unmarshal(stream[4 : 4+size]); err != nil {
			t.Fatal(err)
		}
		obj := &metav1.PartialObjectMetadata{}
		if _, _, err := protobufCodec(t).Decode(e.Object.Raw, nil, obj); err != nil {
			t.Fatal(err)
		}
		out = append(out, frame{typ: e.Type, object: obj})
		stream = stream[4+size:]
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Input the stripper cannot parse passes through unchanged, even when the
// part it cannot parse comes after a part it already rewrote (in place): here
// a list whose first item is fine and whose second item's metadata is not.
func TestStripLeavesInputItRejectsByteIdentical(t *testing.T) {
	good := encode(t, podMetadata("web-1"))[len(protobufMagic):] // a runtime.Unknown
	var goodItem []byte
	for rest := good; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		m := protowire.ConsumeFieldValue(num, typ, rest[n:])
		if num == unknownRaw {
			goodItem, _ = protowire.ConsumeBytes(rest[n : n+m])
		}
		rest = rest[n+m:]
	}
	badItem := protowire.AppendBytes(protowire.AppendTag(nil, objectMeta, protowire.BytesType), []byte{0x00}) // field number 0
	list := protowire.AppendBytes(protowire.AppendTag(nil, listItems, protowire.BytesType), goodItem)
	list = protowire.AppendBytes(protowire.AppendTag(list, listItems, protowire.BytesType), badItem)
	unknown := protowire.AppendBytes(protowire.AppendTag(nil, unknownRaw, protowire.BytesType), list)
	in := append(append([]byte(nil), protobufMagic...), unknown...)

	b := append([]byte(nil), in...)
	if _, ok := stripManagedFields(b, envelopeOf(listShape), keep); ok {
		t.Fatal("the stripper accepted a list whose second item is malformed")
	}
	if !bytes.Equal(b, in) {
		t.Errorf("the stripper rejected the input but changed it: %d bytes differ", differing(b, in))
	}
}

func differing(a, b []byte) int {
	n := 0
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n + max(len(a), len(b)) - min(len(a), len(b))
}

// client-go tells a dropped connection (resume the watch from its last
// resourceVersion) from a watch error (list everything again) by comparing
// the stream's error with io.EOF and io.ErrUnexpectedEOF using ==. The frame
// stripper must hand those errors on as they are, wherever the cut falls.
func TestFrameStripperReturnsConnectionErrorsUnwrapped(t *testing.T) {
	e := &metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: encode(t, podMetadata("web-1"))}}
	payload := encodeWatchEvent(t, e)
	frame := append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
	cases := map[string]struct {
		body []byte
		err  error
		want error
	}{
		"the stream ends between frames":        {body: frame, err: io.EOF, want: io.EOF},
		"the connection is cut inside a header": {body: append(frame, frame[:2]...), err: io.ErrUnexpectedEOF, want: io.ErrUnexpectedEOF},
		"the connection is cut inside a frame":  {body: append(frame, frame[:10]...), err: io.ErrUnexpectedEOF, want: io.ErrUnexpectedEOF},
		"the stream ends inside a frame":        {body: append(frame, frame[:10]...), err: io.EOF, want: io.ErrUnexpectedEOF},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &frameStripper{edit: edit{managers: [][]byte{keep}}, body: io.NopCloser(io.MultiReader(bytes.NewReader(tc.body), errReader{tc.err}))}
			_, err := io.ReadAll(readerOnly{f})
			if err == nil && tc.want == io.EOF { //nolint:errorlint // a sentinel from the table, not a returned error
				return // ReadAll turns io.EOF into nil
			}
			if err != tc.want { //nolint:errorlint // client-go compares with ==: the exact value is the property
				t.Errorf("Read returned %#v, want exactly %v", err, tc.want)
			}
		})
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// readerOnly hides everything but Read, so io.ReadAll sees the raw errors.
type readerOnly struct{ r io.Reader }

func (r readerOnly) Read(p []byte) (int, error) { return r.r.Read(p) }

// Found by FuzzStripManagedFields (testdata/fuzz/FuzzStripManagedFields/c0ad3635c2d47146):
// the generated decoder reads a label's value up to the end of the ObjectMeta,
// not of its map entry, so a value that runs past its entry decodes the bytes
// after it. Had the stripper removed a managedFields entry there, the label
// would have decoded differently; such a message must pass through untouched.
func TestLabelValueRunningPastItsEntryIsPassedThrough(t *testing.T) {
	entry := protowire.AppendTag(nil, 1, protowire.BytesType)
	entry = protowire.AppendString(entry, "tier")
	entry = protowire.AppendTag(entry, 2, protowire.BytesType)
	entry = protowire.AppendVarint(entry, 40) // the value claims 40 bytes; the entry ends here
	meta := protowire.AppendTag(nil, objectLabels, protowire.BytesType)
	meta = protowire.AppendBytes(meta, entry)
	foreign := protowire.AppendTag(nil, entryManager, protowire.BytesType)
	foreign = protowire.AppendString(foreign, "kubectl-client-side-apply")
	for range 3 {
		meta = protowire.AppendTag(meta, objectManagedFields, protowire.BytesType)
		meta = protowire.AppendBytes(meta, foreign)
	}
	in := append([]byte(nil), meta...)
	if _, ok := stripManagedFields(meta, metaShape, keep); ok {
		t.Fatal("an ObjectMeta whose label value runs past its entry was rewritten")
	}
	if !bytes.Equal(meta, in) {
		t.Error("the rejected ObjectMeta was changed")
	}
}

// An installation that adopts the keys of the field manager it wrote as
// before (--adopt-field-manager) keeps that manager's entry too, and no other.
func TestStripManagedFieldsKeepsTheAdoptedManagersEntry(t *testing.T) {
	want := podMetadata("web-1")
	want.ManagedFields = want.ManagedFields[:2]
	assertSameMeta(t, stripObject(t, keep, []byte("kubectl")), want)
}

// stripObject is podMetadata stripped of every entry but managers', decoded.
func stripObject(t *testing.T, managers ...[]byte) *metav1.PartialObjectMetadata {
	t.Helper()
	b := encode(t, podMetadata("web-1"))
	n, ok := strip(b, envelopeOf(objectShape), edit{managers: managers})
	if !ok || n >= len(b) {
		t.Fatalf("strip: ok=%v, %d -> %d bytes", ok, len(b), n)
	}
	got := &metav1.PartialObjectMetadata{}
	if _, _, err := protobufCodec(t).Decode(b[:n], nil, got); err != nil {
		t.Fatal(err)
	}
	return got
}
