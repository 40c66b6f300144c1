package metacache

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

// Packing is a round trip for every name, uid, resourceVersion and time it
// accepts, and the transform's second run keeps the packed object.
func FuzzPackRoundTrips(f *testing.F) {
	f.Add("web-1", "shop", "6a1f3c2e-9b4d-4e8a-b1c7-2f5d8e9a0b3c", "42", int64(1_700_000_000), int64(0), int64(1))
	f.Add("", "", "00000000-0000-0000-0000-000000000000", "0", int64(-62135596800), int64(1), int64(-1))
	f.Fuzz(func(t *testing.T, name, namespace, uid, rv string, created, deleted, generation int64) {
		p := packable()
		p.Name, p.Namespace, p.UID, p.ResourceVersion, p.Generation = name, namespace, types.UID(uid), rv, generation
		p.CreationTimestamp = metav1.Unix(created, 0)
		if deleted != 0 {
			d := metav1.Unix(deleted, 0)
			p.DeletionTimestamp = &d
		}
		want := p.DeepCopy()
		c, ok := pack(p)
		if !ok {
			return
		}
		if got := c.DeepCopyObject(); !equality.Semantic.DeepEqual(got, want) {
			t.Fatalf("materialised %#v, want %#v", got, want)
		}
		again, err := Shrink{Pack: true}.Transform()(c)
		if err != nil || again != any(c) {
			t.Fatalf("the second run gave %v (%v), want the packed object itself", again, err)
		}
	})
}

// BenchmarkWhatAPackedPodCosts reports the heap a packed pod costs alone
// (object-B/pod), the same pod unpacked (unpacked-B/pod), and what
// client-go's store and namespace index add (store-B/pod): the part packing
// cannot shrink.
// go test ./pkg/metacache -run '^$' -bench WhatAPackedPodCosts -benchtime 1x
func BenchmarkWhatAPackedPodCosts(b *testing.B) {
	const pods = 100_000
	shared := packable() // its label and annotation maps, managedFields and owner, shared as the transform shares them
	Shrink{ManagedFields: true, Manager: ownManager, Intern: true, ShareLabels: true, UnreadFields: true, KeepController: true}.apply(shared)
	unpacked := func(i int) *metav1.PartialObjectMetadata {
		p := *shared
		p.Name, p.UID = fmt.Sprintf("app-%d-%08d", i%50, i), types.UID(uuid.NewString())
		return &p
	}
	for range b.N {
		plain := make([]*metav1.PartialObjectMetadata, pods)
		before := heapAfterGC()
		for i := range plain {
			plain[i] = unpacked(i)
		}
		b.ReportMetric(float64(heapAfterGC()-before)/pods, "unpacked-B/pod")
		runtime.KeepAlive(plain)
		objects := make([]*compact, pods)
		before = heapAfterGC()
		for i := range objects {
			objects[i], _ = pack(unpacked(i))
		}
		packed := heapAfterGC()
		store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
		for _, c := range objects {
			if err := store.Add(c); err != nil {
				b.Fatal(err)
			}
		}
		stored := heapAfterGC()
		b.ReportMetric(float64(packed-before)/pods, "object-B/pod")
		b.ReportMetric(float64(stored-packed)/pods, "store-B/pod")
		runtime.KeepAlive(objects)
		runtime.KeepAlive(store)
	}
}
