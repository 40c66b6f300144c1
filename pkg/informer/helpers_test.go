package informer_test

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
)

// recorder is a handler that records its calls per object key, in order.
type recorder struct {
	mu    sync.Mutex
	calls map[string][]string
}

func newRecorder() *recorder { return &recorder{calls: map[string][]string{}} }

func (r *recorder) record(obj any, call string) {
	key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		key = fmt.Sprintf("<%v>", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[key] = append(r.calls[key], call)
}

func (r *recorder) OnAdd(obj any, initial bool) {
	r.record(obj, fmt.Sprintf("add %s initial=%v", rvOf(obj), initial))
}

func (r *recorder) OnUpdate(old, obj any) {
	r.record(obj, fmt.Sprintf("update %s->%s", rvOf(old), rvOf(obj)))
}

func (r *recorder) OnDelete(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		r.record(obj, fmt.Sprintf("delete %s final state unknown", rvOf(tomb.Obj)))
		return
	}
	r.record(obj, fmt.Sprintf("delete %s", rvOf(obj)))
}

func (r *recorder) snapshot() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]string, len(r.calls))
	for k, v := range r.calls {
		out[k] = slices.Clone(v)
	}
	return out
}

func (r *recorder) String() string {
	calls := r.snapshot()
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(calls)) {
		fmt.Fprintf(&b, "  %s: %s\n", k, strings.Join(calls[k], ", "))
	}
	return b.String()
}

func rvOf(obj any) string {
	m, err := apimeta.Accessor(obj)
	if err != nil {
		return "?"
	}
	return m.GetResourceVersion()
}

// contents is a store's objects: key to resourceVersion.
func contents(s toolscache.Store) map[string]string {
	out := map[string]string{}
	for _, key := range s.ListKeys() {
		if obj, ok, _ := s.GetByKey(key); ok {
			out[key] = rvOf(obj)
		}
	}
	return out
}

// markedPod is a stored object that keeps its list mark itself, as
// pkg/metacache's packed objects do.
type markedPod struct {
	metav1.PartialObjectMetadata
	epoch atomic.Uint32
}

func (m *markedPod) ListEpoch() uint32     { return m.epoch.Load() }
func (m *markedPod) SetListEpoch(e uint32) { m.epoch.Store(e) }
func (m *markedPod) DeepCopyObject() k8sruntime.Object {
	return m.DeepCopy()
}

// markSome is a transform that stores the pods whose name ends in an even
// digit as markedPods, so that a test goes through both kinds of marks.
func markSome(obj any) (any, error) {
	p, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok || p.Name == "" || (p.Name[len(p.Name)-1]-'0')%2 != 0 {
		return obj, nil
	}
	m := &markedPod{PartialObjectMetadata: *p}
	return m, nil
}

// settled waits, in the bubble's time, until every informer has synced,
// has processed every change of api and has a watch open on it that handed
// out everything, and its handlers are idle; it fails the test after ten
// minutes of the bubble's time.
func settled(t *testing.T, api *fakeAPI, informers map[string]toolscache.SharedIndexInformer) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		synctest.Wait()
		if allSettled(api, informers) {
			return
		}
		if time.Now().After(deadline) {
			for name, inf := range informers {
				t.Logf("%s: synced %v, at %q (api at %q), caught up %v", name, inf.HasSynced(), inf.LastSyncResourceVersion(), api.currentRV(), api.caughtUp(name))
			}
			buf := make([]byte, 1<<20)
			t.Logf("%s", buf[:runtime.Stack(buf, true)])
			t.Fatalf("the informers did not settle in 10 minutes; requests %q", api.requests)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func allSettled(api *fakeAPI, informers map[string]toolscache.SharedIndexInformer) bool {
	rv := api.currentRV()
	for name, inf := range informers {
		if !inf.HasSynced() || inf.LastSyncResourceVersion() != rv || !api.caughtUp(name) {
			return false
		}
	}
	return true
}

func newPod() *metav1.PartialObjectMetadata {
	p := &metav1.PartialObjectMetadata{}
	p.SetGroupVersionKind(podGVK)
	return p
}
