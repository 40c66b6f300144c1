package variant

import (
	"bytes"
	"net/url"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// watchFrame is a watch event as the API server frames it in protobuf: the
// event bare (its stream serializer is the raw one), its object a pod's
// metadata with annotations in the envelope (magic and type meta).
func watchFrame(t *testing.T, eventType string, annotations map[string]string) []byte {
	t.Helper()
	scheme := runtime.NewScheme()
	gv := schema.GroupVersion{Version: "v1"}
	metav1.AddToGroupVersion(scheme, gv)
	scheme.AddKnownTypes(gv, &metav1.PartialObjectMetadata{})
	s := protobuf.NewSerializer(scheme, scheme)
	object := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
		ObjectMeta: metav1.ObjectMeta{Name: "pod-0", Namespace: "bench-0", Annotations: annotations}}
	var raw bytes.Buffer
	if err := s.Encode(object, &raw); err != nil {
		t.Fatal(err)
	}
	var frame bytes.Buffer
	if err := protobuf.NewRawSerializer(scheme, scheme).Encode(&metav1.WatchEvent{Type: eventType, Object: runtime.RawExtension{Raw: raw.Bytes()}}, &frame); err != nil {
		t.Fatal(err)
	}
	return frame.Bytes()
}

func TestFrameCounterCountsPodsUntilTheInitialEventsEnd(t *testing.T) {
	end := map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	for name, tc := range map[string]struct {
		frames                             []string // event types; "END" is the initial events' end
		wantEvents, wantAdded, wantRelists int64
		wantSynced                         bool
	}{
		"pods before the end are cached and counted":     {frames: []string{"ADDED", "ADDED", "END"}, wantEvents: 2, wantAdded: 2, wantSynced: true},
		"a bookmark that is not the end is not an event": {frames: []string{"ADDED", "BOOKMARK", "ADDED"}, wantEvents: 2, wantAdded: 2},
		"events after the end are counted, not cached":   {frames: []string{"ADDED", "END", "MODIFIED", "MODIFIED", "BOOKMARK"}, wantEvents: 3, wantAdded: 1, wantSynced: true},
		"another end is a relist, its pods events":       {frames: []string{"ADDED", "END", "ADDED", "END", "ADDED", "END"}, wantEvents: 3, wantAdded: 1, wantRelists: 2, wantSynced: true},
		"nothing before the end is an empty cache":       {frames: []string{"END"}, wantSynced: true},
	} {
		t.Run(name, func(t *testing.T) {
			counters := &Counters{}
			w := &frameCounter{counters: counters, synced: make(chan struct{})}
			for _, f := range tc.frames {
				if f == "END" {
					w.count(watchFrame(t, "BOOKMARK", end))
				} else {
					w.count(watchFrame(t, f, map[string]string{"note": "BOOKMARK"}))
				}
			}
			if got := counters.Events.Load(); got != tc.wantEvents {
				t.Errorf("%d events, want %d", got, tc.wantEvents)
			}
			if got := w.added.Load(); got != tc.wantAdded {
				t.Errorf("%d pods cached, want %d", got, tc.wantAdded)
			}
			if got := w.relists.Load(); got != tc.wantRelists {
				t.Errorf("%d relists, want %d", got, tc.wantRelists)
			}
			if got := isClosed(w.synced); got != tc.wantSynced {
				t.Errorf("synced %t, want %t", got, tc.wantSynced)
			}
		})
	}
}

func TestPodsWatchURLKeepsTheServersPath(t *testing.T) {
	for name, tc := range map[string]struct{ server, wantPrefix string }{
		"a server at its root":         {server: "https://127.0.0.1:6443", wantPrefix: "https://127.0.0.1:6443/api/v1/pods?"},
		"a server behind a proxy path": {server: "https://proxy.example/k8s/clusters/c1/", wantPrefix: "https://proxy.example/k8s/clusters/c1/api/v1/pods?"},
	} {
		t.Run(name, func(t *testing.T) {
			server, err := url.Parse(tc.server)
			if err != nil {
				t.Fatal(err)
			}
			got := podsWatchURL(server, "metawatch.dev/bench=true")
			if !strings.HasPrefix(got, tc.wantPrefix) || !strings.Contains(got, "sendInitialEvents=true") || !strings.Contains(got, "watch=true") {
				t.Errorf("%s: want a watch-list of pods under %s", got, tc.wantPrefix)
			}
		})
	}
}
