package metacache

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// compact is a cached object's metadata packed into 128 bytes, where the
// metav1.PartialObjectMetadata it was made from takes 352 and its uid and
// resourceVersion strings more: the uid as 16 bytes, the resourceVersion as
// a number, times as seconds, and the shared label map, managedFields entry
// and controlling reference by pointer. At a million pods that is about
// 300 MB of heap.
//
// It holds exactly what the object held (pack refuses what it could not give
// back the same), and every cache read gives back a PartialObjectMetadata:
// controller-runtime's cache reader deep-copies each object it returns
// (DeepCopyObject), and event handlers that want one without the copy use
// View. Like everything in an informer's store it is never modified in place:
// its setters panic.
type compact struct {
	name, namespace string
	uid             uuid.UUID
	resourceVersion uint64
	created         int64 // unix seconds, or noTime for the zero time
	deleted         int64 // unix seconds, or noTime for none
	generation      int64
	typeMeta        *metav1.TypeMeta
	labels          map[string]string
	annotations     map[string]string
	managedFields   *[]metav1.ManagedFieldsEntry
	owners          *[]metav1.OwnerReference
	// epoch is the mark of the list that last brought the object (see
	// informer.Marked): the streaming informer's relists need no set of the
	// keys they saw. Four bytes of the 128-byte size class the fields above
	// leave unused (120 bytes).
	epoch atomic.Uint32
}

// noTime marks a zero creation time or no deletion time.
const noTime = math.MinInt64

// pack is p packed, or false if p holds what a compact cannot give back
// exactly: a uid that is not a UUID as the API server writes them, a
// resourceVersion that is not a number as written, a time finer than a
// second, a grace period, finalizers, a generateName or a selfLink (the
// transform drops the last three: an object that still has them is kept as
// it is).
func pack(p *metav1.PartialObjectMetadata) (*compact, bool) {
	uid, err := uuid.Parse(string(p.UID))
	if err != nil || uid.String() != string(p.UID) {
		return nil, false
	}
	rv, err := strconv.ParseUint(p.ResourceVersion, 10, 64)
	if err != nil || strconv.FormatUint(rv, 10) != p.ResourceVersion {
		return nil, false
	}
	if p.DeletionGracePeriodSeconds != nil || p.Finalizers != nil || p.GenerateName != "" || p.GetSelfLink() != "" {
		return nil, false
	}
	c := &compact{name: p.Name, namespace: p.Namespace, uid: uid, resourceVersion: rv, generation: p.Generation,
		typeMeta: internTypeMeta(p.TypeMeta), labels: p.Labels, annotations: p.Annotations,
		managedFields: ownHeaders.of(p.ManagedFields, sharedOwn.holds(p.ManagedFields)),
		owners:        ownerHeaders.of(p.OwnerReferences, sharedOwners.holds(p.OwnerReferences))}
	var ok bool
	if c.created, ok = seconds(p.CreationTimestamp); !ok {
		return nil, false
	}
	c.deleted = noTime
	if p.DeletionTimestamp != nil {
		if c.deleted, ok = seconds(*p.DeletionTimestamp); !ok || c.deleted == noTime {
			return nil, false
		}
	}
	return c, true
}

// seconds is t as unix seconds (noTime for the zero time), if that gives t
// back exactly: whole seconds, in the local zone, as decoding makes them.
func seconds(t metav1.Time) (int64, bool) {
	if t == (metav1.Time{}) {
		return noTime, true
	}
	s := t.Unix()
	return s, s != noTime && metav1.Unix(s, 0) == t
}

func timeOf(s int64) metav1.Time {
	if s == noTime {
		return metav1.Time{}
	}
	return metav1.Unix(s, 0)
}

// View is o's metadata as a PartialObjectMetadata without copying what it
// shares with the cache: the object itself if it is one, else a new one
// whose maps and slices are the cached object's. Read it, never modify it.
// False if o is neither.
func View(o client.Object) (*metav1.PartialObjectMetadata, bool) {
	switch o := o.(type) {
	case *metav1.PartialObjectMetadata:
		return o, true
	case *compact:
		return o.view(), true
	}
	return nil, false
}

func (c *compact) view() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: *c.typeMeta, ObjectMeta: c.meta()}
}

// meta is the object's metadata, sharing its maps and slices with c.
func (c *compact) meta() metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: c.name, Namespace: c.namespace, UID: c.GetUID(), ResourceVersion: c.GetResourceVersion(), Generation: c.generation,
		CreationTimestamp: timeOf(c.created), DeletionTimestamp: c.GetDeletionTimestamp(),
		Labels: c.labels, Annotations: c.annotations, ManagedFields: c.GetManagedFields(), OwnerReferences: c.GetOwnerReferences()}
}

// DeepCopyObject is the object as a PartialObjectMetadata of its own: what
// every cache read returns. Copied straight from c, not through a view that
// would be thrown away.
func (c *compact) DeepCopyObject() runtime.Object {
	p := &metav1.PartialObjectMetadata{TypeMeta: *c.typeMeta}
	meta := c.meta()
	meta.DeepCopyInto(&p.ObjectMeta)
	return p
}

// GetObjectKind is a copy of the object's type: setting it changes nothing cached.
func (c *compact) GetObjectKind() schema.ObjectKind {
	t := *c.typeMeta
	return &t
}

func (c *compact) GetNamespace() string                  { return c.namespace }
func (c *compact) GetName() string                       { return c.name }
func (c *compact) GetGenerateName() string               { return "" }
func (c *compact) GetUID() types.UID                     { return types.UID(c.uid.String()) }
func (c *compact) GetResourceVersion() string            { return strconv.FormatUint(c.resourceVersion, 10) }
func (c *compact) GetGeneration() int64                  { return c.generation }
func (c *compact) GetSelfLink() string                   { return "" }
func (c *compact) GetCreationTimestamp() metav1.Time     { return timeOf(c.created) }
func (c *compact) GetDeletionGracePeriodSeconds() *int64 { return nil }
func (c *compact) GetLabels() map[string]string          { return c.labels }
func (c *compact) GetAnnotations() map[string]string     { return c.annotations }
func (c *compact) GetFinalizers() []string               { return nil }

func (c *compact) GetDeletionTimestamp() *metav1.Time {
	if c.deleted == noTime {
		return nil
	}
	t := metav1.Unix(c.deleted, 0)
	return &t
}

func (c *compact) GetOwnerReferences() []metav1.OwnerReference {
	if c.owners == nil {
		return nil
	}
	return *c.owners
}

func (c *compact) GetManagedFields() []metav1.ManagedFieldsEntry {
	if c.managedFields == nil {
		return nil
	}
	return *c.managedFields
}

// ListEpoch and SetListEpoch are the informer's mark (informer.Marked): the
// one field the streaming informer sets on a stored object, atomically,
// which no reader reads.
func (c *compact) ListEpoch() uint32     { return c.epoch.Load() }
func (c *compact) SetListEpoch(e uint32) { c.epoch.Store(e) }

// The setters panic: a cached object is shared with every reader, and
// nothing may change it in place (DeepCopyObject it first).
func (c *compact) readOnly(field string) {
	panic(fmt.Sprintf("metacache: %s of cached %s %s/%s set in place: cached objects are read-only, DeepCopyObject it first",
		field, c.typeMeta.Kind, c.namespace, c.name))
}

func (c *compact) SetNamespace(string)                          { c.readOnly("namespace") }
func (c *compact) SetName(string)                               { c.readOnly("name") }
func (c *compact) SetGenerateName(string)                       { c.readOnly("generateName") }
func (c *compact) SetUID(types.UID)                             { c.readOnly("uid") }
func (c *compact) SetResourceVersion(string)                    { c.readOnly("resourceVersion") }
func (c *compact) SetGeneration(int64)                          { c.readOnly("generation") }
func (c *compact) SetSelfLink(string)                           { c.readOnly("selfLink") }
func (c *compact) SetCreationTimestamp(metav1.Time)             { c.readOnly("creationTimestamp") }
func (c *compact) SetDeletionTimestamp(*metav1.Time)            { c.readOnly("deletionTimestamp") }
func (c *compact) SetDeletionGracePeriodSeconds(*int64)         { c.readOnly("deletionGracePeriodSeconds") }
func (c *compact) SetLabels(map[string]string)                  { c.readOnly("labels") }
func (c *compact) SetAnnotations(map[string]string)             { c.readOnly("annotations") }
func (c *compact) SetFinalizers([]string)                       { c.readOnly("finalizers") }
func (c *compact) SetOwnerReferences([]metav1.OwnerReference)   { c.readOnly("ownerReferences") }
func (c *compact) SetManagedFields([]metav1.ManagedFieldsEntry) { c.readOnly("managedFields") }

var _ client.Object = &compact{}

// headers hands out one pointer per shared slice, so a compact keeps 8
// bytes for it, not a slice header of its own; a slice that is not shared
// gets a pointer of its own.
type headers[T any] struct {
	mu     sync.Mutex
	byData map[*T]*[]T
}

func (h *headers[T]) of(s []T, shared bool) *[]T {
	if s == nil {
		return nil
	}
	if !shared {
		return &s
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if p, ok := h.byData[unsafe.SliceData(s)]; ok && len(*p) == len(s) {
		return p
	}
	if len(h.byData) >= maxShared {
		clear(h.byData)
	}
	h.byData[unsafe.SliceData(s)] = &s
	return &s
}

var (
	ownHeaders   = &headers[metav1.ManagedFieldsEntry]{byData: map[*metav1.ManagedFieldsEntry]*[]metav1.ManagedFieldsEntry{}}
	ownerHeaders = &headers[metav1.OwnerReference]{byData: map[*metav1.OwnerReference]*[]metav1.OwnerReference{}}

	typeMetasMu sync.Mutex
	typeMetas   = map[metav1.TypeMeta]*metav1.TypeMeta{}
)

// internTypeMeta is one pointer per distinct type (a cache has a few).
func internTypeMeta(t metav1.TypeMeta) *metav1.TypeMeta {
	typeMetasMu.Lock()
	defer typeMetasMu.Unlock()
	if p, ok := typeMetas[t]; ok {
		return p
	}
	p := &t
	typeMetas[t] = p
	return p
}
