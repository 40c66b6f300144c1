package metacache_test

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/testing/cachekit"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
	"github.com/metawatch/metawatch/pkg/wire"
)

// client-go 0.37 runs the cache's transform twice on every object of a
// watch-list sync: for the reflector's temporary store, and again when the
// informer's queue takes the list. The second run must find the object
// shrunk and rebuild nothing (TestTheTransformsSecondRunChangesNothingAndAllocatesNothing
// shows it allocates nothing).
func TestTheTransformsSecondRunOnTheInitialSyncRebuildsNothing(t *testing.T) {
	controlplane.SkipIfShort(t)
	const ns, pods = "transform-once", 5
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, ns, nil)
	for i := range pods {
		p := testkit.Pod(t, c, ns, fmt.Sprintf("p-%d", i), map[string]string{"suite": ns})
		testkit.MergePatch(t, c, p, "kubectl-annotate", `{"metadata":{"annotations":{"example.com/note":"kept"}}}`)
	}
	// A kept annotation: the transform rebuilds the annotations into a map of interned keys.
	watches := testkit.Resolve(t, cp.Config, "watches:\n- kind: Pod\n  labelSelector: suite="+ns+"\ncache: {keepAnnotations: [example.com/note]}\n")
	opts := metacache.CacheOptions(watches, metacache.Options{Identity: authority.NewIdentity(authority.DefaultFieldManager, "")})
	var mu sync.Mutex
	calls, rebuilt := map[types.UID]int{}, map[types.UID]bool{}
	for obj, by := range opts.ByObject {
		transform := by.Transform
		by.Transform = func(in any) (any, error) {
			m, ok := in.(*metav1.PartialObjectMetadata)
			if !ok {
				return transform(in)
			}
			before := shrunkParts(m)
			out, err := transform(in)
			mu.Lock()
			defer mu.Unlock()
			if calls[m.UID]++; calls[m.UID] > 1 && shrunkParts(m) != before {
				rebuilt[m.UID] = true
			}
			return out, err
		}
		opts.ByObject[obj] = by
	}
	cachekit.StartPodCache(t, wire.StripManagedFields(cp.Config, []string{authority.DefaultFieldManager}, wire.Options{}, nil), opts)
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != pods {
		t.Fatalf("the transform saw %d objects, want %d", len(calls), pods)
	}
	for uid, n := range calls {
		if n > 2 || rebuilt[uid] {
			t.Errorf("the transform ran %d times on %s, and its second run rebuilt something: %v; want at most twice, the second changing nothing", n, uid, rebuilt[uid])
		}
	}
	t.Logf("transform runs per object of the initial sync: %v", calls)
}

// shrunkParts is where the parts of m a transform rebuilds live.
type parts struct{ labels, annotations, managedFields unsafe.Pointer }

func shrunkParts(m *metav1.PartialObjectMetadata) parts {
	return parts{reflect.ValueOf(m.Labels).UnsafePointer(), reflect.ValueOf(m.Annotations).UnsafePointer(), unsafe.Pointer(unsafe.SliceData(m.ManagedFields))}
}
