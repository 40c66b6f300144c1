package metamanager_test

import (
	"bytes"
	"net/http"
	"path"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/testing/cachekit"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

const protobufWatchConfig = `
watches:
- kind: Namespace
- kind: Pod
  namespaces: [proto-a]
  labelSelector: app=web
- kind: ConfigMap
- kind: Node
- kind: Deployment
`

// Every LIST and WATCH the Manager makes for a watched kind must ask for
// metadata-only protobuf and get protobuf back: checked on the wire, at the
// transport, for requests of the initial sync and of live updates.
func TestEveryListAndWatchIsMetadataProtobuf(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "proto-a", nil)
	testkit.Pod(t, c, "proto-a", "web-1", map[string]string{"app": "web"})
	watches := testkit.Resolve(t, cp.Config, protobufWatchConfig)
	var rec testkit.Recorder
	mgr := cachekit.StartEngine(t, rec.Wrap(cp.Config), watches)

	testkit.Pod(t, c, "proto-a", "web-2", map[string]string{"app": "web"})
	testkit.WaitFor(t, "web-2 in the cache", testkit.Timeout, func() bool {
		return mgr.GetCache().Get(t.Context(), client.ObjectKey{Namespace: "proto-a", Name: "web-2"}, cachekit.PodMetadata()) == nil
	})

	watched := sets.New[string]()
	for _, w := range watches {
		watched.Insert(w.Resource.Resource)
	}
	seen := sets.New[string]()
	for _, r := range rec.All() {
		resource := path.Base(r.Path)
		if r.Method != http.MethodGet || !watched.Has(resource) {
			continue
		}
		seen.Insert(resource)
		wantAs := "as=PartialObjectMetadataList"
		if r.Query.Get("watch") == "true" || r.Query.Get("watch") == "1" {
			wantAs = "as=PartialObjectMetadata;"
		}
		first, _, _ := strings.Cut(r.Accept, ",")
		if !strings.HasPrefix(first, "application/vnd.kubernetes.protobuf;") || !strings.Contains(first+";", wantAs) {
			t.Errorf("%s %s?%s asked for %q, want application/vnd.kubernetes.protobuf with %s first", r.Method, r.Path, r.Query.Encode(), r.Accept, wantAs)
		}
		if !strings.HasPrefix(r.ContentType, "application/vnd.kubernetes.protobuf") {
			t.Errorf("%s %s?%s received %q, want application/vnd.kubernetes.protobuf", r.Method, r.Path, r.Query.Encode(), r.ContentType)
		}
		// The protobuf envelope of every object names its type: metadata only, never the full kind.
		if !bytes.Contains(r.Body, []byte("PartialObjectMetadata")) {
			t.Errorf("%s %s?%s: the response body does not carry PartialObjectMetadata: %q", r.Method, r.Path, r.Query.Encode(), r.Body)
		}
		if bytes.Contains(r.Body, []byte(testkit.PodImage)) {
			t.Errorf("%s %s?%s: the response body carries a pod's spec (%s)", r.Method, r.Path, r.Query.Encode(), testkit.PodImage)
		}
	}
	if !seen.Equal(watched) {
		t.Errorf("saw list/watch requests for %v, want one for every watched resource %v", sets.List(seen), sets.List(watched))
	}
}
