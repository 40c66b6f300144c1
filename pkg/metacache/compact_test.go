package metacache

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/metawatch/metawatch/pkg/informer"
)

var podGVK = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}

func packable() *metav1.PartialObjectMetadata {
	p := NewObject(podGVK)
	p.Name, p.Namespace, p.UID, p.ResourceVersion = "web-7d9f8c6b5d-x2x4z", "shop", "6a1f3c2e-9b4d-4e8a-b1c7-2f5d8e9a0b3c", "123456"
	p.CreationTimestamp, p.Generation = metav1.Unix(1_700_000_000, 0), 2
	p.Labels, p.Annotations = map[string]string{"app": "web"}, map[string]string{"cost-center": "7"}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: ownManager, Operation: metav1.ManagedFieldsOperationApply, FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{}}`)}}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f8c6b5d", UID: "0b6e1f5c-3a2d-4c8e-9f1a-7d5e2c4b6a80", Controller: ptr.To(true)}}
	return p
}

// What a compact holds comes back exactly, field for field, from a copy and
// from a view, whatever the object holds that a compact can.
func TestAPackedObjectComesBackExactly(t *testing.T) {
	deleted := metav1.Unix(1_700_000_100, 0)
	for name, change := range map[string]func(*metav1.PartialObjectMetadata){
		"an object as the cache keeps it": func(*metav1.PartialObjectMetadata) {},
		"an object being deleted":         func(p *metav1.PartialObjectMetadata) { p.DeletionTimestamp = &deleted },
		"an object without labels, annotations, managedFields or owners": func(p *metav1.PartialObjectMetadata) {
			p.Labels, p.Annotations, p.ManagedFields, p.OwnerReferences = nil, nil, nil, nil
		},
		"empty, not nil, maps and slices": func(p *metav1.PartialObjectMetadata) {
			p.Labels, p.Annotations, p.ManagedFields, p.OwnerReferences = map[string]string{}, map[string]string{}, []metav1.ManagedFieldsEntry{}, []metav1.OwnerReference{}
		},
		"a zero creation time":                   func(p *metav1.PartialObjectMetadata) { p.CreationTimestamp = metav1.Time{} },
		"a cluster-scoped object, no type":       func(p *metav1.PartialObjectMetadata) { p.Namespace, p.TypeMeta = "", metav1.TypeMeta{} },
		"a resourceVersion at the uint64 bounds": func(p *metav1.PartialObjectMetadata) { p.ResourceVersion = "18446744073709551615" },
	} {
		t.Run(name, func(t *testing.T) {
			p := packable()
			change(p)
			want := p.DeepCopy()
			c, ok := pack(p)
			if !ok {
				t.Fatal("not packed")
			}
			if got := c.DeepCopyObject(); !reflect.DeepEqual(got, want) {
				t.Errorf("a copy is\n%#v\nwant\n%#v", got, want)
			}
			if got, _ := View(c); !reflect.DeepEqual(got, want) {
				t.Errorf("a view is\n%#v\nwant\n%#v", got, want)
			}
		})
	}
}

// An object a compact could not give back the same is not packed: the cache
// keeps it as it is.
func TestWhatCannotBePackedIsNotPacked(t *testing.T) {
	for name, change := range map[string]func(*metav1.PartialObjectMetadata){
		"a uid that is not a UUID":           func(p *metav1.PartialObjectMetadata) { p.UID = "pod-1" },
		"an upper-case UUID":                 func(p *metav1.PartialObjectMetadata) { p.UID = "6A1F3C2E-9B4D-4E8A-B1C7-2F5D8E9A0B3C" },
		"a UUID in braces":                   func(p *metav1.PartialObjectMetadata) { p.UID = "{6a1f3c2e-9b4d-4e8a-b1c7-2f5d8e9a0b3c}" },
		"no uid":                             func(p *metav1.PartialObjectMetadata) { p.UID = "" },
		"a resourceVersion not a number":     func(p *metav1.PartialObjectMetadata) { p.ResourceVersion = "v7" },
		"a resourceVersion with a leading 0": func(p *metav1.PartialObjectMetadata) { p.ResourceVersion = "0123" },
		"no resourceVersion":                 func(p *metav1.PartialObjectMetadata) { p.ResourceVersion = "" },
		"a creation time finer than a second": func(p *metav1.PartialObjectMetadata) {
			p.CreationTimestamp = metav1.NewTime(time.Unix(1_700_000_000, 5))
		},
		"a creation time in UTC, not the local zone as decoded": func(p *metav1.PartialObjectMetadata) {
			p.CreationTimestamp = metav1.NewTime(time.Unix(1_700_000_000, 0).UTC())
		},
		"a grace period":   func(p *metav1.PartialObjectMetadata) { p.DeletionGracePeriodSeconds = ptr.To[int64](30) },
		"finalizers":       func(p *metav1.PartialObjectMetadata) { p.Finalizers = []string{"example.com/keep"} },
		"a generateName":   func(p *metav1.PartialObjectMetadata) { p.GenerateName = "web-" },
		"a selfLink":       func(p *metav1.PartialObjectMetadata) { p.SetSelfLink("/api/v1/pods/x") },
		"a zero deletion":  func(p *metav1.PartialObjectMetadata) { p.DeletionTimestamp = &metav1.Time{} },
		"a monotonic time": func(p *metav1.PartialObjectMetadata) { p.CreationTimestamp = metav1.Now() },
	} {
		t.Run(name, func(t *testing.T) {
			p := packable()
			change(p)
			if reflect.DeepEqual(p, packable()) {
				t.Fatal("the case changes nothing")
			}
			if _, ok := pack(p); ok {
				t.Error("packed; want it kept as it is")
			}
		})
	}
}

// A packed object refuses to be changed in place, naming what and where.
func TestAPackedObjectIsReadOnly(t *testing.T) {
	c, _ := pack(packable())
	defer func() {
		if r := recover(); r == nil || !slices.Contains([]string{fmt.Sprint(r)}, "metacache: labels of cached Pod shop/web-7d9f8c6b5d-x2x4z set in place: cached objects are read-only, DeepCopyObject it first") {
			t.Errorf("setting labels: %v", r)
		}
	}()
	c.SetLabels(nil)
}

// FuzzPackedStoreMatchesStock runs the same random adds, updates and
// deletes through two stores, one keeping what metawatch's transform makes
// of each object and one keeping that packed, with the cache's namespace and
// controller indexes, and checks that every read gives the same objects:
// by key, the whole list, by namespace, by controlling owner, and through
// label selectors.
func FuzzPackedStoreMatchesStock(f *testing.F) {
	for seed := range uint64(8) {
		f.Add(seed, uint8(60))
	}
	f.Fuzz(func(t *testing.T, seed uint64, ops uint8) {
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		shrink := Shrink{ManagedFields: true, Manager: ownManager, Annotations: true, Keep: keepAnnotations, Intern: true, ShareLabels: true,
			UnreadFields: true, KeepController: true}
		packed := shrink
		packed.Pack = true
		stock, compact := newStore(shrink.Transform()), newStore(packed.Transform())
		for range int(ops) {
			op, obj := randomOp(rng)
			for _, s := range []*store{stock, compact} {
				if err := s.apply(op, obj.DeepCopy()); err != nil {
					t.Fatal(err)
				}
			}
			sameReads(t, rng, stock, compact)
		}
	})
}

var keepAnnotations = sets.New("example.com/owner", "cost-center")

// store is an informer's store as the cache builds it: the transform runs
// on what the watch delivers, then the object is indexed.
type store struct {
	transform toolscache.TransformFunc
	indexer   toolscache.Indexer
}

func newStore(transform toolscache.TransformFunc) *store {
	return &store{transform: transform, indexer: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{
		toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc, "field:" + ControllerIndex: controllerKey,
	})}
}

func (s *store) apply(op string, obj *metav1.PartialObjectMetadata) error {
	if op == "delete" {
		return s.indexer.Delete(obj)
	}
	stored, err := s.transform(obj)
	if err != nil {
		return err
	}
	stored, err = s.transform(stored) // client-go runs it twice on a watch-list sync
	if err != nil {
		return err
	}
	return s.indexer.Update(stored)
}

// sameReads fails t unless every read of a and b gives the same objects.
func sameReads(t *testing.T, rng *rand.Rand, a, b *store) {
	t.Helper()
	sameObjects(t, "the whole list", a.indexer.List(), b.indexer.List())
	for _, key := range a.indexer.ListKeys() {
		x, _, _ := a.indexer.GetByKey(key)
		y, ok, _ := b.indexer.GetByKey(key)
		if !ok {
			t.Fatalf("%s is in the stock store only", key)
		}
		sameObjects(t, "get "+key, []any{x}, []any{y})
	}
	for _, ns := range namespaces {
		x, _ := a.indexer.ByIndex(toolscache.NamespaceIndex, ns)
		y, _ := b.indexer.ByIndex(toolscache.NamespaceIndex, ns)
		sameObjects(t, "namespace "+ns, x, y)
		for _, owner := range owners {
			x, _ := a.indexer.ByIndex("field:"+ControllerIndex, ns+"/"+owner)
			y, _ := b.indexer.ByIndex("field:"+ControllerIndex, ns+"/"+owner)
			sameObjects(t, "controlled by "+owner, x, y)
		}
	}
	selector := labels.SelectorFromSet(labels.Set{"app": pick(rng, labelValues)})
	sameObjects(t, "selector "+selector.String(), matching(a.indexer.List(), selector), matching(b.indexer.List(), selector))
}

// matching is what controller-runtime's cache List keeps with a label selector.
func matching(items []any, selector labels.Selector) []any {
	var out []any
	for _, item := range items {
		if selector.Matches(labels.Set(item.(metav1.Object).GetLabels())) {
			out = append(out, item)
		}
	}
	return out
}

// sameObjects compares what a cache read returns of each: its deep copy.
func sameObjects(t *testing.T, what string, a, b []any) {
	t.Helper()
	copies := func(items []any) map[string]any {
		out := map[string]any{}
		for _, item := range items {
			obj := item.(metav1.Object)
			out[obj.GetNamespace()+"/"+obj.GetName()] = item.(runtime.Object).DeepCopyObject()
		}
		return out
	}
	if x, y := copies(a), copies(b); !reflect.DeepEqual(x, y) {
		t.Fatalf("%s: the stock store gives\n%v\nthe packed one\n%v", what, x, y)
	}
}

var (
	namespaces  = []string{"shop", "team-a", ""}
	owners      = []string{"0b6e1f5c-3a2d-4c8e-9f1a-7d5e2c4b6a80", "1c7f2a6d-4b3e-4d9f-8a2b-8e6f3d5c7b91"}
	labelValues = []string{"web", "api", "db"}
)

func pick[T any](rng *rand.Rand, from []T) T { return from[rng.IntN(len(from))] }

// randomOp is an add or update (of one of a few names, so updates and
// re-adds happen) or a delete, of an object with random metadata: some
// packable, some not.
func randomOp(rng *rand.Rand) (string, *metav1.PartialObjectMetadata) {
	p := NewObject(podGVK)
	p.Namespace, p.Name = pick(rng, namespaces), fmt.Sprintf("pod-%d", rng.IntN(6))
	if rng.IntN(5) == 0 {
		return "delete", p
	}
	p.UID = pick(rng, []types.UID{"6a1f3c2e-9b4d-4e8a-b1c7-2f5d8e9a0b3c", "7b2e4d3f-0c5e-4f9b-a2d8-3e6f9a1b4c5d", "pod-uid"})
	p.ResourceVersion = pick(rng, []string{"1", "42", "123456789", "x1"})
	p.Generation = rng.Int64N(3)
	p.CreationTimestamp = pick(rng, []metav1.Time{metav1.Unix(1_700_000_000, 0), {}, metav1.NewTime(time.Unix(1_700_000_000, 7))})
	if rng.IntN(4) == 0 {
		p.DeletionTimestamp = ptr.To(metav1.Unix(1_700_000_500, 0))
	}
	if rng.IntN(5) > 0 {
		p.Labels = map[string]string{"app": pick(rng, labelValues)}
		if rng.IntN(2) == 0 {
			p.Labels["tier"] = pick(rng, []string{"1", "2"})
		}
	}
	if rng.IntN(2) == 0 {
		p.Annotations = map[string]string{"cost-center": pick(rng, []string{"7", "8"}), "kubectl.kubernetes.io/last-applied-configuration": "{}"}
	}
	if rng.IntN(2) == 0 {
		p.ManagedFields = []metav1.ManagedFieldsEntry{
			{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"},
			{Manager: ownManager, Operation: metav1.ManagedFieldsOperationApply, FieldsV1: metav1.NewFieldsV1(pick(rng, []string{`{"f:metadata":{}}`, `{"f:metadata":{"f:labels":{}}}`}))},
		}
	}
	if rng.IntN(3) > 0 {
		p.OwnerReferences = []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a"},
			{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: types.UID(pick(rng, owners)), Controller: ptr.To(rng.IntN(4) > 0)},
		}
	}
	if rng.IntN(6) == 0 {
		p.Finalizers = []string{"example.com/keep"}
	}
	return pick(rng, []string{"add", "update"}), p
}

// The streaming informer's mark fits in what a packed object's size class
// leaves: 128 bytes, as before it.
func TestCompactKeepsItsSizeClassWithTheListMark(t *testing.T) {
	if size := unsafe.Sizeof(compact{}); size > 128 {
		t.Errorf("a packed object takes %d bytes, past its 128-byte size class", size)
	}
	var _ informer.Marked = &compact{}
}
