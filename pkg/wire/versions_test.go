package wire

import (
	"bytes"
	"io"
	"testing"
)

// The newest resourceVersion of an object is the one of the latest version
// its stream left out as unchanged after the version the cache holds; the
// cached one when the cache holds another version (behind the stream, or
// from another stream), when nothing was left out, or once the stream ended.
func TestResourceVersionsFollowTheEventsLeftOut(t *testing.T) {
	a := version{uid: "a", labels: map[string]string{"app": "web"}, own: "2026-11-22T09:00:00Z", kubelet: "2026-11-22T09:00:00Z"}
	status := func(at string) func(*version) { return func(v *version) { v.kubelet = at } }
	relabel := func(v *version) { v.labels = map[string]string{"app": "db"} }
	steps := []struct {
		typ    string
		v      version
		cached string
		want   string
	}{
		{"ADDED", a.at("10", nil), "10", "10"},
		{"MODIFIED", a.at("12", status("2026-11-22T09:01:00Z")), "10", "12"},
		{"MODIFIED", a.at("15", status("2026-11-22T09:02:00Z")), "10", "15"},
		{"MODIFIED", a.at("16", status("2026-11-22T09:03:00Z")), "9", "9"}, // the cache holds another version
		{"MODIFIED", a.at("20", relabel), "16", "16"},                      // delivered: the cache has not applied it yet
		{"MODIFIED", a.at("21", func(v *version) { relabel(v); status("2026-11-22T09:04:00Z")(v) }), "20", "21"},
		{"MODIFIED", a.at("22", func(v *version) { relabel(v); status("2026-11-22T09:05:00Z")(v) }), "not-a-number", "not-a-number"},
	}
	var stream []byte
	for _, s := range steps {
		stream = append(stream, frameOf(t, s.typ, s.v.object())...)
	}
	versions := NewResourceVersions()
	f := &frameStripper{edit: edit{managers: [][]byte{keep}}, body: io.NopCloser(bytes.NewReader(stream)), unchanged: newUnchangedEvents(0, nil), versions: versions}
	versions.add(f.unchanged)
	for i, s := range steps {
		if err := f.next(); err != nil {
			t.Fatal(err)
		}
		f.pending = nil
		if got := versions.Newest("a", s.cached); got != s.want {
			t.Errorf("after event %d (%s %s), Newest(a, %s) = %s, want %s", i, s.typ, s.v.rv, s.cached, got, s.want)
		}
	}
	if got := versions.Newest("b", "10"); got != "10" {
		t.Errorf("Newest of an object no stream knows = %s, want the cached 10", got)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := versions.Newest("a", "20"); got != "20" {
		t.Errorf("Newest after the stream ended = %s, want the cached 20", got)
	}
}

// A version too far ahead of the delivered one to be said in 32 bits is not
// kept: the cached version is the answer (and a failed precondition reads
// the object anew).
func TestAVersionFarAheadIsNotKept(t *testing.T) {
	d := newDelivered(1, 100)
	d.leftOut(100 + 1<<31)
	if d.newer != 0 {
		t.Errorf("a version 2^31 ahead was kept as %d ahead", d.newer)
	}
	d.leftOut(150)
	d.leftOut(140) // out of order: the newest stays
	if d.newer != 50 {
		t.Errorf("newer = %d, want 50", d.newer)
	}
}
