package metacache

import (
	"reflect"
	"strconv"
	"testing"
	"time"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/metawatch/metawatch/pkg/authority"
)

// ownManager is the field manager whose entry the transforms keep, as
// metawatch's (authority.DefaultFieldManager) is.
const ownManager = "metawatch"

// transformFor is what the cache keeps of an object of a watch (every
// Shrink step) with metawatch's entry and the annotations in keep.
func transformFor(keep sets.Set[string]) toolscache.TransformFunc {
	return shrinkFor(authority.NewIdentity(ownManager, ""), keep).Transform()
}

func TestTransform(t *testing.T) {
	own := metav1.ManagedFieldsEntry{Manager: ownManager, Operation: metav1.ManagedFieldsOperationApply, FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{}}`)}
	cases := map[string]struct {
		keep            sets.Set[string]
		wantAnnotations map[string]string
	}{
		"annotations nothing reads are dropped": {keep: sets.New("example.com/owner"), wantAnnotations: map[string]string{"example.com/owner": "alice"}},
		"nil keeps every annotation": {keep: nil, wantAnnotations: map[string]string{
			"example.com/owner": "alice", "kubectl.kubernetes.io/last-applied-configuration": "{...}",
		}},
		"an empty keep-list keeps none": {keep: sets.New[string](), wantAnnotations: nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
				Name: "p", Namespace: "shop", Labels: map[string]string{"app": "web"},
				Annotations:     map[string]string{"example.com/owner": "alice", "kubectl.kubernetes.io/last-applied-configuration": "{...}"},
				ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}, own, {Manager: "kubelet"}},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1"}},
				Finalizers:      []string{"example.com/cleanup"}, GenerateName: "web-", UID: "0c2b", ResourceVersion: "42",
			}}
			if _, err := transformFor(tc.keep)(obj); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(obj.Annotations, tc.wantAnnotations) {
				t.Errorf("annotations %v, want %v", obj.Annotations, tc.wantAnnotations)
			}
			if len(obj.ManagedFields) != 1 || obj.ManagedFields[0].Manager != ownManager {
				t.Errorf("managedFields %v, want only metawatch's", obj.ManagedFields)
			}
			if obj.Labels["app"] != "web" || obj.Namespace != "shop" || obj.Name != "p" || obj.UID != "0c2b" || obj.ResourceVersion != "42" {
				t.Errorf("the transform changed what it keeps: %+v", obj.ObjectMeta)
			}
			if obj.OwnerReferences != nil || obj.Finalizers != nil || obj.GenerateName != "" {
				t.Errorf("fields nothing reads are still cached: %+v", obj.ObjectMeta)
			}
		})
	}
}

// Two objects' equal strings share one copy after the transform.
func TestTransformInterns(t *testing.T) {
	a := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: string([]byte("shop")), Labels: map[string]string{string([]byte("app")): string([]byte("web"))}}}
	b := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: string([]byte("shop")), Labels: map[string]string{string([]byte("app")): string([]byte("web"))}}}
	for _, obj := range []*metav1.PartialObjectMetadata{a, b} {
		if _, err := transformFor(nil)(obj); err != nil {
			t.Fatal(err)
		}
	}
	if unsafe.StringData(a.Namespace) != unsafe.StringData(b.Namespace) {
		t.Error("namespaces are not shared")
	}
	if unsafe.StringData(a.Labels["app"]) != unsafe.StringData(b.Labels["app"]) {
		t.Error("label values are not shared")
	}
	for ka := range a.Labels {
		for kb := range b.Labels {
			if unsafe.StringData(ka) != unsafe.StringData(kb) {
				t.Error("label keys are not shared")
			}
		}
	}
}

// Objects with equal labels share one map; others keep their own.
func TestTransformSharesLabelSets(t *testing.T) {
	objects := []*metav1.PartialObjectMetadata{
		{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "pod-template-hash": "5d4c"}}},
		{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"pod-template-hash": "5d4c", "app": "web"}}},
		{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "pod-template-hash": "7f00"}}},
		// The separator keeps {"a": "b\x00c"}-like ambiguities apart: keys and values are concatenated with 0 bytes.
		{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "webpod-template-hash"}}},
	}
	for _, obj := range objects {
		if _, err := transformFor(nil)(obj); err != nil {
			t.Fatal(err)
		}
	}
	same := func(a, b map[string]string) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	if !same(objects[0].Labels, objects[1].Labels) {
		t.Error("equal label sets are not shared")
	}
	if same(objects[0].Labels, objects[2].Labels) || same(objects[0].Labels, objects[3].Labels) {
		t.Error("different label sets share a map")
	}
	if !reflect.DeepEqual(objects[2].Labels, map[string]string{"app": "web", "pod-template-hash": "7f00"}) {
		t.Errorf("labels changed: %v", objects[2].Labels)
	}
}

// The table of shared sets starts over when full, so unique labels cannot grow it without bound.
func TestSharedTablesAreBounded(t *testing.T) {
	l := newTable(func(int) unsafe.Pointer { return nil })
	for i := range maxShared + 10 {
		l.share([]byte(strconv.Itoa(i)), func() int { return i })
	}
	if len(l.values) > maxShared {
		t.Errorf("%d shared values, want at most %d", len(l.values), maxShared)
	}
}

// Objects metawatch manages alike share one managedFields entry, without its time.
func TestTransformSharesOwnEntry(t *testing.T) {
	entry := func(raw string, at time.Time) []metav1.ManagedFieldsEntry {
		return []metav1.ManagedFieldsEntry{{Manager: ownManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
			FieldsType: "FieldsV1", Time: &metav1.Time{Time: at}, FieldsV1: metav1.NewFieldsV1(raw)}}
	}
	team, zone := `{"f:metadata":{"f:labels":{"f:team":{}}}}`, `{"f:metadata":{"f:labels":{"f:zone":{}}}}`
	objects := []*metav1.PartialObjectMetadata{
		{ObjectMeta: metav1.ObjectMeta{ManagedFields: entry(team, time.Unix(1, 0))}},
		{ObjectMeta: metav1.ObjectMeta{ManagedFields: entry(team, time.Unix(2, 0))}},
		{ObjectMeta: metav1.ObjectMeta{ManagedFields: entry(zone, time.Unix(1, 0))}},
	}
	for _, obj := range objects {
		if _, err := transformFor(nil)(obj); err != nil {
			t.Fatal(err)
		}
	}
	if &objects[0].ManagedFields[0] != &objects[1].ManagedFields[0] {
		t.Error("equal entries are not shared")
	}
	if &objects[0].ManagedFields[0] == &objects[2].ManagedFields[0] || objects[2].ManagedFields[0].FieldsV1.GetRawString() != zone {
		t.Errorf("different entries share one: %s", objects[2].ManagedFields[0].FieldsV1.GetRawString())
	}
	if objects[0].ManagedFields[0].Time != nil {
		t.Error("the entry's time is kept")
	}
}

// client-go 0.37 runs a cache's transform twice on every object of a
// watch-list sync. The second run finds the object shrunk and changes
// nothing: the same maps and entry, and not one allocation.
func TestTheTransformsSecondRunChangesNothingAndAllocatesNothing(t *testing.T) {
	own := metav1.ManagedFieldsEntry{Manager: ownManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{"f:team":{}}}}`)}
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: "p", Namespace: "shop", UID: "u", ResourceVersion: "42",
		Labels:        map[string]string{"app": "web", "pod-template-hash": "5d8f9", "team": "a"},
		Annotations:   map[string]string{"example.com/owner": "alice", "unread": "x"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}, own},
	}}
	transform := transformFor(sets.New("example.com/owner"))
	if _, err := transform(obj); err != nil {
		t.Fatal(err)
	}
	labels, annotations, entry := reflect.ValueOf(obj.Labels).UnsafePointer(), reflect.ValueOf(obj.Annotations).UnsafePointer(), &obj.ManagedFields[0]
	before := obj.DeepCopy()
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := transform(obj); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("the second run allocated %v times, want 0", allocs)
	}
	if reflect.ValueOf(obj.Labels).UnsafePointer() != labels || reflect.ValueOf(obj.Annotations).UnsafePointer() != annotations || &obj.ManagedFields[0] != entry {
		t.Error("the second run rebuilt the labels, annotations or managedFields")
	}
	if !reflect.DeepEqual(obj, before) {
		t.Errorf("the second run changed the object:\n got %+v\nwant %+v", obj.ObjectMeta, before.ObjectMeta)
	}
}

// With a field manager to adopt from, its Apply entry stays beside
// metawatch's, time included (a write after adoption began tells of a live
// installation under that name), packed or not, and a second run changes
// nothing.
func TestTransformKeepsTheAdoptedManagersEntry(t *testing.T) {
	since := metav1.NewTime(time.Unix(1700000000, 0))
	own := metav1.ManagedFieldsEntry{Manager: ownManager, Operation: metav1.ManagedFieldsOperationApply, FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{"f:a":{}}}}`)}
	old := metav1.ManagedFieldsEntry{Manager: "metawatch-old", Operation: metav1.ManagedFieldsOperationApply, Time: &since,
		FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{"f:b":{}}}}`)}
	for name, pack := range map[string]bool{"as it is": false, "packed": true} {
		t.Run(name, func(t *testing.T) {
			obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
				Name: "p", Namespace: "shop", UID: "0c2b7a54-1b7e-4f43-9a49-0d1b3c7e9f10", ResourceVersion: "42", CreationTimestamp: since,
				Labels: map[string]string{"a": "1", "b": "2"},
				ManagedFields: []metav1.ManagedFieldsEntry{
					{Manager: "metawatch-old", Operation: metav1.ManagedFieldsOperationUpdate}, own, {Manager: "kubelet"}, old,
				},
			}}
			s := shrinkFor(authority.NewIdentity(ownManager, "metawatch-old"), nil)
			s.Pack = pack
			var got any = obj
			for range 2 {
				var err error
				if got, err = s.Transform()(got); err != nil {
					t.Fatal(err)
				}
			}
			fields := got.(interface {
				GetManagedFields() []metav1.ManagedFieldsEntry
			}).GetManagedFields()
			if len(fields) != 2 || fields[0].Manager != ownManager || fields[1].Manager != "metawatch-old" ||
				fields[1].Operation != metav1.ManagedFieldsOperationApply || !fields[1].Time.Equal(&since) {
				t.Errorf("managedFields %+v, want metawatch's, then metawatch-old's Apply entry with its time", fields)
			}
		})
	}
}

// Two caches in one process whose field managers own the same fields (two
// installations, as tests run them) each keep their own manager's entry:
// the table of shared entries once keyed them by their fields alone, and
// handed the second cache the first one's entry, under the other name.
func TestSharedEntriesKeepTheirManager(t *testing.T) {
	fields := `{"f:metadata":{"f:labels":{"f:shared-by-two-managers":{}}}}`
	for _, manager := range []string{"metawatch-team-a", "metawatch-team-b"} {
		obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "shop", ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)},
		}}}
		if _, err := shrinkFor(authority.NewIdentity(manager, ""), nil).Transform()(obj); err != nil {
			t.Fatal(err)
		}
		if len(obj.ManagedFields) != 1 || obj.ManagedFields[0].Manager != manager {
			t.Errorf("the cache of %s keeps %+v, want its own entry", manager, obj.ManagedFields)
		}
	}
}
