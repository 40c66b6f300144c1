package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// version is one version of a pod's metadata, as the API server would send it.
type version struct {
	uid          types.UID
	rv           string
	labels       map[string]string
	annotation   string
	own, kubelet string // the time of metawatch's and of the kubelet's managedFields entries
	deleting     bool
}

// at is v at resourceVersion rv, changed by change.
func (v version) at(rv string, change func(*version)) version {
	v.rv = rv
	if change != nil {
		change(&v)
	}
	return v
}

func mustTime(s string) time.Time {
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return at
}

func (v version) object() *metav1.PartialObjectMetadata {
	obj := podWithUID("pod-"+string(v.uid), v.uid)
	obj.ResourceVersion, obj.Labels, obj.Annotations = v.rv, v.labels, map[string]string{"note": v.annotation}
	entry := func(manager, at string, op metav1.ManagedFieldsOperationType) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "v1", FieldsType: "FieldsV1",
			Time: &metav1.Time{Time: mustTime(at)}, FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{"f:app":{}}}}`)}
	}
	obj.ManagedFields = []metav1.ManagedFieldsEntry{entry(manager, v.own, metav1.ManagedFieldsOperationApply), entry("kubelet", v.kubelet, metav1.ManagedFieldsOperationUpdate)}
	if v.deleting {
		obj.DeletionTimestamp = &metav1.Time{Time: mustTime("2026-11-22T10:00:00Z")}
	}
	return obj
}

// watchThrough is what a watch stream of frames becomes through the
// transport, read in chunks of chunk bytes, and the events it counted as
// unchanged.
func watchThrough(t testing.TB, stream []byte, o Options, chunk int) ([]byte, int) {
	t.Helper()
	counted := 0
	f := &frameStripper{edit: edit{managers: [][]byte{keep}}, body: io.NopCloser(&choppy{data: stream, size: chunk})}
	if !o.DecodeUnchanged {
		f.unchanged = newUnchangedEvents(o.BookmarkInterval, func() { counted++ })
	}
	out, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return out, counted
}

// An event whose object is unchanged but for its resourceVersion and the
// managedFields the cache never sees (a status-only update) reaches client-go
// as a bookmark with that resourceVersion; anything the cache keeps changing
// (a label, an annotation, the deletion timestamp, metawatch's own entry), an
// ADDED or a DELETED, or an object the stream has not delivered yet is
// delivered as it came.
func TestUnchangedEventsBecomeBookmarks(t *testing.T) {
	web := map[string]string{"app": "web"}
	a := version{uid: "a", labels: web, annotation: "x", own: "2026-11-22T09:00:00Z", kubelet: "2026-11-22T09:00:00Z"}
	b := version{uid: "b", labels: web, own: a.own, kubelet: a.kubelet}
	status := func(v *version) { v.kubelet = "2026-11-22T09:30:00Z" }
	events := []struct {
		typ  string
		v    version
		want string
	}{
		{"ADDED", a.at("1", nil), "ADDED 1"},
		{"MODIFIED", a.at("2", status), "BOOKMARK 2"},
		{"MODIFIED", a.at("3", func(v *version) { v.labels = map[string]string{"app": "db"} }), "MODIFIED 3"},
		{"MODIFIED", a.at("4", nil), "MODIFIED 4"}, // the label back: not what the stream delivered last
		{"MODIFIED", a.at("5", status), "BOOKMARK 5"},
		{"MODIFIED", a.at("6", func(v *version) { v.annotation = "y" }), "MODIFIED 6"},
		{"MODIFIED", a.at("7", func(v *version) { v.annotation = "y"; v.own = "2026-11-22T09:45:00Z" }), "MODIFIED 7"},
		{"MODIFIED", a.at("8", func(v *version) { v.annotation = "y"; v.own = "2026-11-22T09:45:00Z"; v.deleting = true }), "MODIFIED 8"},
		{"MODIFIED", b.at("9", nil), "MODIFIED 9"}, // not delivered on this stream yet
		{"MODIFIED", b.at("10", status), "BOOKMARK 10"},
		{"DELETED", b.at("11", nil), "DELETED 11"},
		{"MODIFIED", b.at("12", nil), "MODIFIED 12"},
	}
	var stream []byte
	for _, e := range events {
		stream = append(stream, frameOf(t, e.typ, e.v.object())...)
	}
	cases := map[string]struct {
		o         Options
		replaced  bool
		wantCount int
	}{
		"by default":                {replaced: true, wantCount: 3},
		"with DecodeUnchanged, not": {o: Options{DecodeUnchanged: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, counted := watchThrough(t, stream, tc.o, 7)
			frames := decodeFrames(t, out)
			if len(frames) != len(events) || counted != tc.wantCount {
				t.Fatalf("%d frames out of %d, %d counted as unchanged, want %d", len(frames), len(events), counted, tc.wantCount)
			}
			for i, f := range frames {
				want := fmt.Sprintf("%s %s", events[i].typ, events[i].v.rv)
				if tc.replaced {
					want = events[i].want
				}
				if got := f.typ + " " + f.object.ResourceVersion; got != want {
					t.Errorf("event %d: %s, want %s", i, got, want)
				}
				if f.typ == "BOOKMARK" && !reflect.DeepEqual(f.object.ObjectMeta, metav1.ObjectMeta{ResourceVersion: events[i].v.rv}) {
					t.Errorf("event %d: the bookmark's object is %+v, want only resourceVersion %s", i, f.object.ObjectMeta, events[i].v.rv)
				}
				if f.typ == "BOOKMARK" && f.object.GroupVersionKind() != metaGV.WithKind("PartialObjectMetadata") {
					t.Errorf("event %d: the bookmark is a %v, want a PartialObjectMetadata", i, f.object.GroupVersionKind())
				}
			}
		})
	}
}

// A frame the stripper cannot parse reaches client-go as it came, and the
// cache will hold whatever client-go makes of it: the next event of that
// object, even one equal to what the stream delivered before, is delivered.
func TestAFrameTheStripperRejectsIsNeverComparedWith(t *testing.T) {
	a := version{uid: "a", rv: "1", labels: map[string]string{"app": "web"}, own: "2026-11-22T09:00:00Z", kubelet: "2026-11-22T09:00:00Z"}
	rejected := frameOf(t, "MODIFIED", a.at("2", nil).object())
	// A label value that claims more bytes than its entry has: the stripper
	// passes such a message through untouched (TestLabelValueRunningPastItsEntryIsPassedThrough).
	bad := bytes.Replace(rejected, []byte("\x0a\x03app\x12\x03web"), []byte("\x0a\x03app\x12\x09web"), 1)
	if bytes.Equal(bad, rejected) {
		t.Fatal("the test's label entry was not found in the frame")
	}
	stream := bytes.Join([][]byte{frameOf(t, "ADDED", a.object()), bad, frameOf(t, "MODIFIED", a.at("3", nil).object())}, nil)
	out, counted := watchThrough(t, stream, Options{}, 64)
	if counted != 0 || !bytes.Contains(out, bad[4:]) {
		t.Fatalf("%d events counted as unchanged, rejected frame passed as it came: %v; want 0 and true", counted, bytes.Contains(out, bad[4:]))
	}
}

// Whatever sequence of events a stream carries, client-go's store ends the
// stream with the same objects (resourceVersions aside) and the same last
// resourceVersion whether unchanged events are left out or not, bookmarks
// held back or not. Every event delivered is delivered as it came, in order,
// and every bookmark carries the resourceVersion of a MODIFIED event left
// out. With a bookmark for each event left out, the stores agree after every
// event.
func FuzzUnchangedEventsKeepTheStoreExact(f *testing.F) {
	f.Add([]byte{0, 1, 1, 1, 2, 17, 1, 33, 1, 2, 1}, uint8(5), false)
	f.Add([]byte{0, 8, 1, 1, 1, 0, 2, 0, 1, 4, 1, 1}, uint8(64), true)
	f.Fuzz(func(t *testing.T, script []byte, chunk uint8, hold bool) {
		stream, sent := scriptedStream(t, script)
		all, _ := watchThrough(t, stream, Options{DecodeUnchanged: true}, int(chunk%32)+1)
		o := Options{}
		if hold {
			o.BookmarkInterval = time.Hour // held back until the next event or the stream's end
		}
		some, _ := watchThrough(t, stream, o, int(chunk%32)+1)
		want, got := decodeFrames(t, all), decodeFrames(t, some)
		wantStore, gotStore := newStore(), newStore()
		i := 0 // the event of want that got[j] stands for
		for j, g := range got {
			for ; i < len(want) && want[i].object.ResourceVersion != g.object.ResourceVersion; i++ {
				wantStore.apply(want[i])
			}
			if i == len(want) || g.typ != want[i].typ && (g.typ != "BOOKMARK" || sent[i] != "MODIFIED") {
				t.Fatalf("event %d (%s at %s) is not an event of the stream in order, or a bookmark for a MODIFIED one", j, g.typ, g.object.ResourceVersion)
			}
			wantStore.apply(want[i])
			gotStore.apply(g)
			i++
			if !hold && (gotStore.rv != wantStore.rv || !reflect.DeepEqual(gotStore.withoutVersions(), wantStore.withoutVersions())) {
				t.Fatalf("after event %d: store %v at %s, want %v at %s", j, gotStore.withoutVersions(), gotStore.rv, wantStore.withoutVersions(), wantStore.rv)
			}
		}
		for ; i < len(want); i++ {
			wantStore.apply(want[i])
		}
		if gotStore.rv != wantStore.rv || !reflect.DeepEqual(gotStore.withoutVersions(), wantStore.withoutVersions()) {
			t.Fatalf("at the stream's end: store %v at %s, want %v at %s", gotStore.withoutVersions(), gotStore.rv, wantStore.withoutVersions(), wantStore.rv)
		}
	})
}

// scriptedStream is a watch stream of one event per byte of script, over two
// pods: the byte picks the event's type, pod, label, annotation, deletion
// timestamp and metawatch's entry; every event moves the kubelet's entry.
func scriptedStream(t *testing.T, script []byte) (stream []byte, kinds []string) {
	for i, op := range script {
		typ := []string{"ADDED", "MODIFIED", "MODIFIED", "DELETED"}[op&3]
		v := version{uid: []types.UID{"u-1", "u-2"}[op>>2&1], rv: fmt.Sprint(i + 1), labels: map[string]string{"app": []string{"web", "db"}[op>>3&1]},
			annotation: []string{"x", "y"}[op>>4&1], own: "2026-11-22T09:00:00Z", kubelet: fmt.Sprintf("2026-11-22T09:%02d:00Z", i%60), deleting: op>>5&1 == 1}
		if op>>6&1 == 1 {
			v.own = "2026-11-22T09:59:00Z"
		}
		stream = append(stream, frameOf(t, typ, v.object())...)
		kinds = append(kinds, typ)
	}
	return stream, kinds
}

// With an interval, the bookmark for unchanged events is held back: the next
// delivered event makes it unnecessary, one is sent once the interval has
// passed since the reflector last got a resourceVersion, and always one
// before the stream's end, whatever the end (the reflector resumes from it).
func TestBookmarksAreHeldBackAtMostTheInterval(t *testing.T) {
	a := version{uid: "a", labels: map[string]string{"app": "web"}, own: "2026-11-22T09:00:00Z", kubelet: "2026-11-22T09:00:00Z"}
	status := func(v *version) { v.kubelet = "2026-11-22T09:30:00Z" }
	steps := []struct {
		at   time.Duration // since the stream started
		typ  string
		v    version
		want string // what the stream delivers for it: "" for nothing yet
	}{
		{0, "ADDED", a.at("1", nil), "ADDED 1"},
		{100 * time.Millisecond, "MODIFIED", a.at("2", status), ""},
		{200 * time.Millisecond, "MODIFIED", a.at("3", nil), ""},
		{1200 * time.Millisecond, "MODIFIED", a.at("4", status), "BOOKMARK 4"}, // a second since ADDED 1
		{1300 * time.Millisecond, "MODIFIED", a.at("5", nil), ""},
		{1400 * time.Millisecond, "MODIFIED", a.at("6", func(v *version) { v.labels = map[string]string{"app": "db"} }), "MODIFIED 6"},
		{2300 * time.Millisecond, "MODIFIED", a.at("7", func(v *version) { v.labels = map[string]string{"app": "db"} }), ""}, // 0.9s since MODIFIED 6
	}
	clock := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	start := clock
	u := newUnchangedEvents(time.Second, nil)
	u.now = func() time.Time { return clock }
	u.sent = start
	for i, step := range steps {
		clock = start.Add(step.at)
		frame := frameOf(t, step.typ, step.v.object())[4:]
		n, ok := strip(frame, eventShape, edit{managers: [][]byte{keep}})
		if !ok {
			t.Fatalf("step %d: the frame does not strip", i)
		}
		bookmark, skip := u.next(frame[:n], nil)
		got := ""
		switch {
		case bookmark != nil:
			got = describe(t, bookmark)
		case !skip:
			got = describe(t, append(binary.BigEndian.AppendUint32(nil, uint32(n)), frame[:n]...))
		}
		if got != step.want {
			t.Errorf("step %d (%s %s at %s): the stream delivers %q, want %q", i, step.typ, step.v.rv, step.at, got, step.want)
		}
	}
	if got := describe(t, u.flush(nil)); got != "BOOKMARK 7" {
		t.Errorf("at the stream's end: %q, want the bookmark of 7", got)
	}
	if got := u.flush(nil); got != nil {
		t.Errorf("a second flush gave %q, want nothing", describe(t, got))
	}
}

// describe is "TYPE resourceVersion" of the one frame in b.
func describe(t *testing.T, b []byte) string {
	t.Helper()
	frames := decodeFrames(t, b)
	if len(frames) != 1 {
		t.Fatalf("%d frames, want 1", len(frames))
	}
	return frames[0].typ + " " + frames[0].object.ResourceVersion
}

// However the stream ends (cleanly, inside a frame, with a connection error),
// the bookmark of the events held back comes first, then the very error the
// connection gave: client-go compares it with ==.
func TestTheStreamsEndComesAfterTheHeldBackBookmark(t *testing.T) {
	a := version{uid: "a", labels: map[string]string{"app": "web"}, own: "2026-11-22T09:00:00Z", kubelet: "2026-11-22T09:00:00Z"}
	events := bytes.Join([][]byte{frameOf(t, "ADDED", a.at("1", nil).object()), frameOf(t, "MODIFIED", a.at("2", nil).object()),
		frameOf(t, "MODIFIED", a.at("3", nil).object()), frameOf(t, "MODIFIED", a.at("4", nil).object())}, nil)
	reset := errors.New("read tcp 127.0.0.1:1234: connection reset by peer")
	cases := map[string]struct {
		body    io.Reader
		wantErr error
	}{
		"a clean end":           {body: bytes.NewReader(events), wantErr: io.EOF},
		"an end inside a frame": {body: bytes.NewReader(append(events, 0, 0, 0, 9, 1, 2)), wantErr: io.ErrUnexpectedEOF},
		"a connection error":    {body: io.MultiReader(bytes.NewReader(events), errReader{reset}), wantErr: reset},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &frameStripper{edit: edit{managers: [][]byte{keep}}, body: io.NopCloser(tc.body), unchanged: newUnchangedEvents(time.Hour, nil)}
			out, err := readToEnd(f, 5)
			if err != tc.wantErr { //nolint:errorlint // client-go compares with ==: the exact value is the property
				t.Errorf("the stream ended with %v, want exactly %v", err, tc.wantErr)
			}
			if got := eventNames(t, out); fmt.Sprint(got) != "[ADDED pod-a BOOKMARK ]" {
				t.Errorf("the stream delivered %v, want ADDED pod-a, then a bookmark", got)
			}
			if frames := decodeFrames(t, out); frames[len(frames)-1].object.ResourceVersion != "4" {
				t.Errorf("the bookmark carries %q, want the last event's resourceVersion 4", frames[len(frames)-1].object.ResourceVersion)
			}
			if _, again := f.Read(make([]byte, 5)); again != tc.wantErr { //nolint:errorlint // as above
				t.Errorf("a read after the end gave %v, want %v again", again, tc.wantErr)
			}
		})
	}
}

// store is what a reflector does with the events of a watch: objects by uid
// and the last resourceVersion.
type store struct {
	objects map[types.UID]metav1.ObjectMeta
	rv      string
}

func newStore() *store { return &store{objects: map[types.UID]metav1.ObjectMeta{}} }

func (s *store) apply(f frame) {
	switch f.typ {
	case "ADDED", "MODIFIED":
		s.objects[f.object.UID] = f.object.ObjectMeta
	case "DELETED":
		delete(s.objects, f.object.UID)
	}
	s.rv = f.object.ResourceVersion
}

func (s *store) withoutVersions() map[types.UID]metav1.ObjectMeta {
	out := map[types.UID]metav1.ObjectMeta{}
	for uid, m := range s.objects {
		m.ResourceVersion = ""
		out[uid] = m
	}
	return out
}
