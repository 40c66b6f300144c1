package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// keepOdd keeps the objects whose uid ends in an odd byte: a stand-in for a
// replica's buckets. An empty uid is sent (and refused) like any other.
func keepOdd(uid []byte) bool { return len(uid) > 0 && uid[len(uid)-1]%2 == 1 }

// keepOddOrNone also keeps the empty uid, which decodes like one never sent (kept).
func keepOddOrNone(uid []byte) bool { return len(uid) == 0 || keepOdd(uid) }

func podWithUID(name string, uid types.UID) *metav1.PartialObjectMetadata {
	obj := podMetadata(name)
	obj.UID = uid
	return obj
}

func listOf(t testing.TB, items ...*metav1.PartialObjectMetadata) []byte {
	list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}}
	for _, item := range items {
		list.Items = append(list.Items, *item)
	}
	list.SetGroupVersionKind(metaGV.WithKind("PartialObjectMetadataList"))
	return encode(t, list)
}

func frameOf(t testing.TB, typ string, obj *metav1.PartialObjectMetadata) []byte {
	e := &metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: encode(t, obj)}}
	b := encodeWatchEvent(t, e)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// Requests made with KeepUIDs get, before decoding, only the list items and
// watch events of the uids it keeps, bookmarks and errors always; requests
// without it get everything.
func TestKeepUIDsDropsOtherObjectsBeforeDecoding(t *testing.T) {
	bookmark := podWithUID("", "")
	bookmark.ResourceVersion = "99"
	stream := bytes.Join([][]byte{frameOf(t, "ADDED", podWithUID("a", "u-1")), frameOf(t, "ADDED", podWithUID("b", "u-2")),
		frameOf(t, "BOOKMARK", bookmark), frameOf(t, "MODIFIED", podWithUID("a", "u-1")), frameOf(t, "DELETED", podWithUID("c", "u-4")),
		frameOf(t, "DELETED", podWithUID("d", "u-5")), frameOf(t, "ERROR", podWithUID("e", "u-6"))}, nil)
	list := listOf(t, podWithUID("a", "u-1"), podWithUID("b", "u-2"), podWithUID("c", "u-3"), podWithUID("no-uid", ""))
	cases := map[string]struct {
		keep        func([]byte) bool
		watch, body []byte
		want        []string // "TYPE name" of the events, or the names of the list's items
		wantDropped int
	}{
		"a watch keeps its uids' events, bookmarks and errors": {keep: keepOdd, watch: stream,
			want: []string{"ADDED a", "BOOKMARK ", "MODIFIED a", "DELETED d", "ERROR e"}, wantDropped: 2},
		"a watch without KeepUIDs keeps everything": {watch: stream,
			want: []string{"ADDED a", "ADDED b", "BOOKMARK ", "MODIFIED a", "DELETED c", "DELETED d", "ERROR e"}},
		"a list keeps its uids' items":             {keep: keepOdd, body: list, want: []string{"a", "c"}, wantDropped: 2},
		"a list without KeepUIDs keeps everything": {body: list, want: []string{"a", "b", "c", "no-uid"}},
		"a list that keeps nothing is empty":       {keep: func([]byte) bool { return false }, body: list, wantDropped: 4},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, url, accept := t.Context(), "https://api/api/v1/pods", metadataProtobuf+"List;g=meta.k8s.io;v=v1"
			body := tc.body
			if tc.watch != nil {
				url, accept, body = url+"?watch=true", metadataProtobuf+";g=meta.k8s.io;v=v1", tc.watch
			}
			dropped := 0
			if tc.keep != nil {
				ctx = KeepUIDs(ctx, UIDFilter{Keep: tc.keep, Dropped: func() { dropped++ }})
			}
			got := roundTrip(ctx, t, url, accept, body)
			var names []string
			if tc.watch != nil {
				names = eventNames(t, got)
			} else {
				names = itemNames(t, got)
			}
			if !reflect.DeepEqual(names, tc.want) {
				t.Errorf("got %q, want %q", names, tc.want)
			}
			if dropped != tc.wantDropped {
				t.Errorf("%d objects counted as dropped, want %d", dropped, tc.wantDropped)
			}
		})
	}
}

func roundTrip(ctx context.Context, t *testing.T, url, accept string, body []byte) []byte {
	t.Helper()
	rt := stripTransport{keep: [][]byte{keep}, next: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/vnd.kubernetes.protobuf"}},
			Body: io.NopCloser(bytes.NewReader(body))}, nil
	})}
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", accept)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func eventNames(t *testing.T, stream []byte) []string {
	t.Helper()
	var out []string
	for _, f := range decodeFrames(t, stream) {
		out = append(out, f.typ+" "+f.object.Name)
	}
	return out
}

func itemNames(t *testing.T, body []byte) []string {
	t.Helper()
	list := &metav1.PartialObjectMetadataList{}
	if _, _, err := protobufCodec(t).Decode(body, nil, list); err != nil {
		t.Fatal(err)
	}
	if list.ResourceVersion != "7" {
		t.Errorf("the list's resourceVersion is %q after filtering, want 7", list.ResourceVersion)
	}
	var out []string
	for _, item := range list.Items {
		out = append(out, item.Name)
	}
	return out
}

// Filtering by uid, whatever bytes arrive: input the stripper rejects comes
// out byte-identical; a list that decodes decodes, after filtering, to the
// items of kept uids of the original, stripped, in order; and
// filtering twice changes nothing.
func FuzzKeepUIDsInLists(f *testing.F) {
	f.Add(listOf(f, podWithUID("a", "u-1"), podWithUID("b", "u-2"), podWithUID("c", "u-3")))
	f.Add(listOf(f))
	f.Add([]byte("k8s\x00garbage"))
	shape := envelopeOf(listShape)
	e := edit{managers: [][]byte{keep}, uids: &UIDFilter{Keep: keepOddOrNone}}
	f.Fuzz(func(t *testing.T, in []byte) {
		b := append([]byte(nil), in...)
		n, ok := strip(b, shape, e)
		if !ok {
			if !bytes.Equal(b, in) {
				t.Fatal("rejected input was changed")
			}
			return
		}
		out := b[:n]
		again := append([]byte(nil), out...)
		if m, ok := strip(again, shape, e); !ok || !bytes.Equal(again[:m], out) {
			t.Fatalf("filtering twice changed the output (ok=%v)", ok)
		}
		before := &metav1.PartialObjectMetadataList{}
		if _, _, err := protobufCodec(t).Decode(in, nil, before); err != nil {
			return
		}
		after := &metav1.PartialObjectMetadataList{}
		if _, _, err := protobufCodec(t).Decode(out, nil, after); err != nil {
			t.Fatalf("the input decodes, the filtered output does not: %v", err)
		}
		var want []metav1.PartialObjectMetadata
		for _, item := range before.Items {
			if keepOddOrNone([]byte(item.UID)) {
				item.ManagedFields = ownEntries(item.ManagedFields)
				want = append(want, item)
			}
		}
		if !reflect.DeepEqual(after.Items, want) && (len(want) != 0 || len(after.Items) != 0) {
			t.Fatalf("after filtering\n got %+v\nwant %+v", after.Items, want)
		}
		if after.ResourceVersion != before.ResourceVersion || after.Continue != before.Continue {
			t.Fatalf("the list's metadata changed: %+v, want %+v", after.ListMeta, before.ListMeta)
		}
	})
}
