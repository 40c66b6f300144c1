package metacache

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/metawatch/metawatch/pkg/authority"
)

// Every annotation metawatch's entry (or the adopted name's) owns stays in
// the cache, whether or not a rule still reads it: the next apply would
// release it, and the guardrails, the brake and adoption must see it to
// hold it. Annotations nobody owns or reads are dropped as before.
func TestTransformKeepsOwnedAnnotations(t *testing.T) {
	cases := map[string]struct {
		keep, adopted string
		want          []string
	}{
		"a key metawatch owns and no rule reads stays": {want: []string{"example.com/owned"}},
		"a key the adopted name owns stays":            {adopted: "metawatch-old", want: []string{"example.com/adopted", "example.com/owned"}},
		"the adopted name's keys go without adoption":  {want: []string{"example.com/owned"}},
		"a read key stays beside the owned ones":       {keep: "example.com/read", want: []string{"example.com/owned", "example.com/read"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, pack := range []bool{false, true} {
				obj := ownedAnnotationsPod()
				s := shrinkFor(authority.NewIdentity(ownManager, tc.adopted), sets.New(strings.Fields(tc.keep)...))
				s.Pack = pack
				out, err := s.Transform()(obj)
				if err != nil {
					t.Fatal(err)
				}
				got := out.(interface{ GetAnnotations() map[string]string }).GetAnnotations()
				if keys := sets.List(sets.KeySet(got)); !slicesEqual(keys, tc.want) {
					t.Errorf("packed=%v: annotations %v, want %v", pack, keys, tc.want)
				}
			}
		})
	}
}

// Whatever the annotations and whatever the entry owns, the transform keeps
// exactly the owned and the read ones, with their values, and a second run
// changes nothing.
func FuzzTransformKeepsOwnedAnnotations(f *testing.F) {
	f.Add("a b c", "b", "c")
	f.Add("x", "", "x y")
	f.Fuzz(func(t *testing.T, present, read, owned string) {
		annotations := map[string]string{}
		for i, k := range strings.Fields(present) {
			annotations["example.com/"+k] = fmt.Sprint(i)
		}
		var fields []string
		for _, k := range strings.Fields(owned) {
			fields = append(fields, fmt.Sprintf("%q:{}", "f:example.com/"+k))
		}
		keep := sets.New[string]()
		for _, k := range strings.Fields(read) {
			keep.Insert("example.com/" + k)
		}
		obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: maps.Clone(annotations),
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: ownManager, Operation: metav1.ManagedFieldsOperationApply,
				FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{` + strings.Join(fields, ",") + `}}}`)}}}}
		ownedKeys := sets.New[string]()
		for _, k := range strings.Fields(owned) {
			ownedKeys.Insert("example.com/" + k)
		}
		tr := shrinkFor(authority.NewIdentity(ownManager, ""), keep).Transform()
		if _, err := tr(obj); err != nil {
			t.Fatal(err)
		}
		for k, v := range annotations {
			_, kept := obj.Annotations[k]
			if want := keep.Has(k) || ownedKeys.Has(k); kept != want {
				t.Fatalf("annotation %s kept=%v, want %v (read %v, owned %v)", k, kept, want, sets.List(keep), sets.List(ownedKeys))
			}
			if kept && obj.Annotations[k] != v {
				t.Fatalf("annotation %s = %q, want %q", k, obj.Annotations[k], v)
			}
		}
		again := maps.Clone(obj.Annotations)
		if _, err := tr(obj); err != nil || !maps.Equal(again, obj.Annotations) {
			t.Fatalf("a second run changed the annotations: %v -> %v", again, obj.Annotations)
		}
	})
}

func ownedAnnotationsPod() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: "p", Namespace: "shop", UID: "0c2b7a54-1b7e-4f43-9a49-0d1b3c7e9f10", ResourceVersion: "42",
		Annotations: map[string]string{"example.com/owned": "1", "example.com/adopted": "2", "example.com/read": "3", "example.com/nobody": "4"},
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: ownManager, Operation: metav1.ManagedFieldsOperationApply, FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{"f:example.com/owned":{}}}}`)},
			{Manager: "metawatch-old", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{"f:example.com/adopted":{}}}}`)},
			{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{"f:example.com/nobody":{}}}}`)},
		},
	}}
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
