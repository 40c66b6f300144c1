package engine

import (
	"unique"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	toolscache "k8s.io/client-go/tools/cache"
)

// FieldManager is the server-side apply field manager metawatch writes as.
const FieldManager = "metawatch"

// Transform is what the cache keeps of an object of a watch: managedFields
// only metawatch's own (most of the bytes of metadata; metawatch's entry is
// small and is how a reconcile knows which keys its rules own and must remove
// when a rule stops wanting them, without asking the API server), annotations only those in keep (nil keeps all: the
// annotations nothing reads can be large, e.g. kubectl's
// last-applied-configuration), and repeated strings (namespace, label keys
// and values, annotation keys, owner kinds) interned, so 100k pods share one
// copy of "app.kubernetes.io/name" instead of holding 100k.
func Transform(keep sets.Set[string]) toolscache.TransformFunc {
	return func(in any) (any, error) {
		obj, err := meta.Accessor(in)
		if err != nil {
			return in, nil //nolint:nilerr // tombstones and the like pass through unchanged
		}
		if fields := obj.GetManagedFields(); len(fields) > 0 {
			obj.SetManagedFields(own(fields))
		}
		obj.SetNamespace(intern(obj.GetNamespace()))
		obj.SetLabels(internMap(obj.GetLabels(), nil, true))
		obj.SetAnnotations(internMap(obj.GetAnnotations(), keep, false))
		internOwners(obj)
		return in, nil
	}
}

// own returns the entries of FieldManager's applies, or nil.
func own(fields []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	for _, f := range fields {
		if f.Manager == FieldManager && f.Operation == metav1.ManagedFieldsOperationApply && f.Subresource == "" {
			return []metav1.ManagedFieldsEntry{f}
		}
	}
	return nil
}

func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// internMap returns m with interned keys (and values, if internValues: label
// values repeat, annotation values are rarely shared and can be large), without
// the keys keep lacks (nil keeps all).
func internMap(m map[string]string, keep sets.Set[string], internValues bool) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if keep != nil && !keep.Has(k) {
			continue
		}
		if internValues {
			v = intern(v)
		}
		out[intern(k)] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func internOwners(obj metav1.Object) {
	owners := obj.GetOwnerReferences()
	for i := range owners {
		owners[i].APIVersion, owners[i].Kind = intern(owners[i].APIVersion), intern(owners[i].Kind)
	}
}
