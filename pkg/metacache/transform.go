package metacache

import (
	"slices"
	"unique"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/ownership"
)

// Shrink is what a cache transform removes from, and shares between, the
// objects it keeps. metawatch uses every step (Transform); each is a field so
// the bench harness can show what each one saves (bench/results).
type Shrink struct {
	// ManagedFields keeps only the entry of Manager's applies, metawatch's
	// own: the other managers' entries are most of the bytes of metadata, and
	// metawatch's own is how a reconcile knows which keys its rules own and
	// must remove when a rule stops wanting them, without asking the API
	// server.
	ManagedFields bool
	Manager       string
	// Adopted, if set, is a field manager whose Apply entry is kept too, as
	// it is (time included): the name this installation wrote as before,
	// whose keys metawatch takes over (--adopt-field-manager).
	Adopted string
	// Annotations keeps only the annotations in Keep and those the entries of
	// Manager and Adopted own: the ones nothing reads can be large, e.g.
	// kubectl's last-applied-configuration. An annotation metawatch owns stays
	// in view whether or not the configuration still reads it: it is what the
	// next apply would release, and what the guardrails, the removal brake and
	// adoption must see to hold it.
	Annotations bool
	Keep        sets.Set[string]
	// Intern makes repeated strings (namespace, label keys and values,
	// annotation keys) one copy each: 100k pods share one
	// "app.kubernetes.io/name" instead of holding 100k.
	Intern bool
	// ShareLabels makes objects with equal labels (the pods of one ReplicaSet,
	// Job or DaemonSet) share one map, and objects metawatch manages alike share
	// one managedFields entry, see table.
	ShareLabels bool
	// UnreadFields drops what no rule or write reads: ownerReferences,
	// finalizers and generateName. Rules read labels and annotations only;
	// writes need name, namespace and resourceVersion, and Events the UID.
	UnreadFields bool
	// KeepController keeps, of the ownerReferences UnreadFields drops, the
	// controlling one (copyFromOwner follows it), shared between the objects
	// of one owner.
	KeepController bool
	// KeepLabels, if not nil, keeps only these labels (an owner-only watch
	// keeps the keys copied from it).
	KeepLabels sets.Set[string]
	// Pack stores each object packed (compact): the same metadata in about a
	// third of the memory, given back whole by every cache read. Not for
	// kinds read with client.UnsafeDisableDeepCopy (Namespaces, owners):
	// controller-runtime hands such reads the stored object itself.
	Pack bool
}

// shrinkFor is every Shrink step, with the entries of id's field manager
// and adopted name (if any) and the annotations in keep (nil keeps all).
func shrinkFor(id *authority.Identity, keep sets.Set[string]) Shrink {
	return Shrink{ManagedFields: true, Manager: id.FieldManager, Adopted: id.Adopted, Annotations: keep != nil, Keep: keep,
		Intern: true, ShareLabels: true, UnreadFields: true}
}

// watchTransform is what the cache keeps of an object of w: shrinkFor's,
// and what copyFromOwner needs of the owner chains (see ResolvedWatch).
func watchTransform(w config.ResolvedWatch, id *authority.Identity) toolscache.TransformFunc {
	s := shrinkFor(id, w.Annotations)
	s.KeepController, s.KeepLabels, s.Pack = w.KeepController, w.Labels, Packed(w)
	return s.Transform()
}

// Packed tells whether the cache packs w's objects (Shrink.Pack): those of
// the namespaced kinds rules write, which are nearly all of a cluster's
// objects. Namespaces and the kinds of owner chains stay as they are: they
// are few, and read on every event without a copy.
func Packed(w config.ResolvedWatch) bool { return w.Namespaced && !w.Owner }

// Transform is s as a cache transform. Objects it returns may share label
// maps: like everything in an informer's store they must not be modified in
// place (controller-runtime's cache reads return deep copies).
func (s Shrink) Transform() toolscache.TransformFunc {
	return func(in any) (any, error) {
		if _, packed := in.(*compact); packed {
			return in, nil // the transform's second run on a watch-list sync
		}
		obj, err := meta.Accessor(in)
		if err != nil {
			return in, nil //nolint:nilerr // tombstones and the like pass through unchanged
		}
		s.apply(obj)
		if p, ok := in.(*metav1.PartialObjectMetadata); ok && s.Pack {
			if c, ok := pack(p); ok {
				return c, nil
			}
		}
		return in, nil
	}
}

func (s Shrink) apply(obj metav1.Object) {
	if fields := obj.GetManagedFields(); s.ManagedFields && len(fields) > 0 {
		obj.SetManagedFields(s.own(fields))
	}
	if s.Annotations {
		owned := ownership.AnnotationsOf(obj.GetManagedFields(), s.Manager, s.Adopted)
		obj.SetAnnotations(filter(obj.GetAnnotations(), s.Keep, owned))
	}
	if s.KeepLabels != nil {
		obj.SetLabels(filter(obj.GetLabels(), s.KeepLabels, nil))
	}
	if s.UnreadFields {
		if s.KeepController {
			obj.SetOwnerReferences(shareController(obj.GetOwnerReferences()))
		} else {
			obj.SetOwnerReferences(nil)
		}
		obj.SetFinalizers(nil)
		obj.SetGenerateName("")
	}
	if s.Intern {
		obj.SetNamespace(intern(obj.GetNamespace()))
		obj.SetAnnotations(internMap(obj.GetAnnotations(), false))
		if !s.KeepController { // a kept controller reference is shared, interned already
			internOwners(obj)
		}
	}
	s.shrinkLabels(obj)
}

func (s Shrink) shrinkLabels(obj metav1.Object) {
	switch {
	case s.ShareLabels:
		obj.SetLabels(shareLabels(obj.GetLabels(), s.Intern))
	case s.Intern:
		obj.SetLabels(internMap(obj.GetLabels(), true))
	}
}

// own returns the entry of Manager's applies, or nil; shared between
// objects with the same one when s shares (ShareLabels).
func (s Shrink) own(fields []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	if s.ShareLabels && sharedOwn.holds(fields) {
		return fields // shared already: the transform's second run
	}
	var own []metav1.ManagedFieldsEntry
	var adopted *metav1.ManagedFieldsEntry
	for i, f := range fields {
		switch {
		case f.Operation != metav1.ManagedFieldsOperationApply || f.Subresource != "":
		case f.Manager == s.Manager && own == nil:
			own = []metav1.ManagedFieldsEntry{f}
			if s.ShareLabels {
				own = shareOwn(f)
			}
		case s.Adopted != "" && f.Manager == s.Adopted:
			adopted = &fields[i]
		}
	}
	if adopted == nil {
		return own
	}
	// Rare and short-lived (until adopted): not shared, and a copy, so that
	// the shared entry is never appended to.
	return append(slices.Clone(own), *adopted)
}

// filter returns m without the keys neither keep nor owned has, nil if none is left.
func filter(m map[string]string, keep, owned sets.Set[string]) map[string]string {
	for k := range m {
		if !keep.Has(k) && !owned.Has(k) {
			delete(m, k)
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// internMap returns m with interned keys (and values, if internValues: label
// values repeat, annotation values are rarely shared and can be large); m
// itself if they are already (the transform's second run).
func internMap(m map[string]string, internValues bool) map[string]string {
	if len(m) == 0 {
		return nil
	}
	if interned(m, internValues) {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if internValues {
			v = intern(v)
		}
		out[intern(k)] = v
	}
	return out
}

// interned reports whether m's keys (and values, if values) are the interned copies.
func interned(m map[string]string, values bool) bool {
	same := func(s string) bool { return s == "" || unsafe.StringData(s) == unsafe.StringData(intern(s)) }
	for k, v := range m {
		if !same(k) || values && !same(v) {
			return false
		}
	}
	return true
}

func internOwners(obj metav1.Object) {
	owners := obj.GetOwnerReferences()
	for i := range owners {
		owners[i].APIVersion, owners[i].Kind = intern(owners[i].APIVersion), intern(owners[i].Kind)
	}
}
