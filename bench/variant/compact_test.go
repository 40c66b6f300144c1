package variant

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/metawatch/metawatch/pkg/controller"
	"github.com/metawatch/metawatch/pkg/metacache"
)

func packable() *metav1.PartialObjectMetadata {
	p := metacache.NewObject(podGVK)
	p.Name, p.Namespace, p.UID, p.ResourceVersion = "web-7d9f8c6b5d-x2x4z", "shop", "6a1f3c2e-9b4d-4e8a-b1c7-2f5d8e9a0b3c", "123456"
	p.CreationTimestamp, p.Generation = metav1.Unix(1_700_000_000, 0), 2
	p.Labels, p.Annotations = map[string]string{"app": "web"}, map[string]string{"cost-center": "7"}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: controller.FieldManager, Operation: metav1.ManagedFieldsOperationApply}}
	return p
}

// What a compactPod holds comes back, field for field, from every cache read.
func TestAPackedPodMaterialisesAsItCame(t *testing.T) {
	deleted := metav1.Unix(1_700_000_100, 0)
	for name, change := range map[string]func(*metav1.PartialObjectMetadata){
		"a pod as metawatch's cache keeps it": func(*metav1.PartialObjectMetadata) {},
		"a pod being deleted":                 func(p *metav1.PartialObjectMetadata) { p.DeletionTimestamp = &deleted },
		"a pod without labels, annotations or managedFields": func(p *metav1.PartialObjectMetadata) {
			p.Labels, p.Annotations, p.ManagedFields = nil, nil, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			p := packable()
			change(p)
			c, ok := pack(p)
			if !ok {
				t.Fatal("not packed")
			}
			if got := c.DeepCopyObject(); !equality.Semantic.DeepEqual(got, p) {
				t.Errorf("materialised %#v, want %#v", got, p)
			}
		})
	}
}

// An object a compactPod cannot hold exactly is left as it is.
func TestWhatCannotBePackedIsKeptAsItIs(t *testing.T) {
	grace := int64(30)
	for name, change := range map[string]func(*metav1.PartialObjectMetadata){
		"a uid that is not a UUID":               func(p *metav1.PartialObjectMetadata) { p.UID = "pod-1" },
		"a resourceVersion that is not a number": func(p *metav1.PartialObjectMetadata) { p.ResourceVersion = "v7" },
		"a creation time finer than a second": func(p *metav1.PartialObjectMetadata) {
			p.CreationTimestamp = metav1.NewTime(time.Unix(1_700_000_000, 5))
		},
		"a deletion grace period": func(p *metav1.PartialObjectMetadata) { p.DeletionGracePeriodSeconds = &grace },
		"owner references":        func(p *metav1.PartialObjectMetadata) { p.OwnerReferences = []metav1.OwnerReference{{Name: "rs"}} },
		"finalizers":              func(p *metav1.PartialObjectMetadata) { p.Finalizers = []string{"x"} },
		"a generateName":          func(p *metav1.PartialObjectMetadata) { p.GenerateName = "web-" },
	} {
		t.Run(name, func(t *testing.T) {
			p := packable()
			change(p)
			out, err := compacting(func(in any) (any, error) { return in, nil })(p)
			if err != nil || out != any(p) {
				t.Errorf("transform gave %T (%v), want the object itself", out, err)
			}
		})
	}
}

// Packing is a round trip for every name, uid, resourceVersion and time it accepts.
func FuzzPackRoundTrips(f *testing.F) {
	f.Add("web-1", "shop", "6a1f3c2e-9b4d-4e8a-b1c7-2f5d8e9a0b3c", "42", int64(1_700_000_000), int64(0), int64(1))
	f.Fuzz(func(t *testing.T, name, namespace, uid, rv string, created, deleted, generation int64) {
		p := packable()
		p.Name, p.Namespace, p.UID, p.ResourceVersion, p.Generation = name, namespace, types.UID(uid), rv, generation
		p.CreationTimestamp = metav1.Unix(created, 0)
		if deleted != 0 {
			d := metav1.Unix(deleted, 0)
			p.DeletionTimestamp = &d
		}
		c, ok := pack(p)
		if !ok {
			return
		}
		if got := c.DeepCopyObject(); !equality.Semantic.DeepEqual(got, p) {
			t.Fatalf("materialised %#v, want %#v", got, p)
		}
		again, err := compacting(func(in any) (any, error) { return in, nil })(c)
		if err != nil || again != any(c) {
			t.Fatalf("the second run gave %v (%v), want the packed object itself", again, err)
		}
	})
}

// BenchmarkWhatAPackedPodCosts reports the heap a packed pod costs alone
// (object-B/pod), the same pod unpacked (unpacked-B/pod), and what
// client-go's store and namespace index add (store-B/pod): the part a
// compact object cannot shrink (issue #14, item 3).
// go test ./variant -run XXX -bench WhatAPackedPodCosts -benchtime 1x
func BenchmarkWhatAPackedPodCosts(b *testing.B) {
	const pods = 100_000
	shared := packable() // its label and annotation maps and managedFields, shared as metacache shares them
	unpacked := func(i int) *metav1.PartialObjectMetadata {
		p := *shared
		p.Name, p.UID = fmt.Sprintf("app-%d-%08d", i%50, i), types.UID(uuid.NewString())
		return &p
	}
	pack := func(i int) *compactPod {
		c, _ := pack(unpacked(i))
		return c
	}
	for range b.N {
		plain := make([]*metav1.PartialObjectMetadata, pods)
		before := heapAfterGC()
		for i := range plain {
			plain[i] = unpacked(i)
		}
		b.ReportMetric(float64(heapAfterGC()-before)/pods, "unpacked-B/pod")
		runtime.KeepAlive(plain)
		objects := make([]*compactPod, pods)
		before = heapAfterGC()
		for i := range objects {
			objects[i] = pack(i)
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

func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
