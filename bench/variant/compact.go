package variant

import (
	"context"
	"strconv"
	"sync"
	"unsafe"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/metacache"
)

// compactObjects is issue #14's item 3 measured: metawatch's cache (step6)
// with each object the informer stores turned into a compactPod: 128 bytes
// instead of 352 for the PartialObjectMetadata (BenchmarkWhatAPackedPodCosts),
// materialised again as a PartialObjectMetadata by every cache read (a read
// deep-copies anyway). The informer, its store and its namespace index are
// client-go's, unchanged.
// step6 is step6-unread-fields' Shrink, so the two differ only by the packing.
// Cache only: an experiment, not what metawatch runs (see bench/README.md).
func compactObjects(step6 metacache.Shrink) Variant {
	return Variant{Name: "step7-compact-objects", CacheOnly: true,
		Description: "cache only: + each stored object packed into 128 bytes, materialised on every read (an experiment: not metawatch's cache)",
		Start: func(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters) (*Running, error) {
			c, err := newCache(stripped(cfg), spec, cache.Options{DefaultTransform: compacting(step6.Transform())})
			if err != nil {
				return nil, err
			}
			running, err := startCounted(ctx, c, c.Start, counters, metadataPodList, metacache.NewObject(podGVK))
			if err != nil {
				return nil, err
			}
			// Read through the cache as a controller does: every item materialised.
			running.CachedPods = func(ctx context.Context) (int, error) { return countCached(ctx, c, metadataPodList()) }
			return running, nil
		}}
}

// compacting is shrink, then the object packed; packed objects (the
// transform's second run on a watch-list sync) pass as they are.
func compacting(shrink toolscache.TransformFunc) toolscache.TransformFunc {
	return func(in any) (any, error) {
		if c, ok := in.(*compactPod); ok {
			return c, nil
		}
		out, err := shrink(in)
		if p, ok := out.(*metav1.PartialObjectMetadata); ok && err == nil {
			if c, ok := pack(p); ok {
				return c, nil
			}
		}
		return out, err
	}
}

// compactPod is a pod's metadata as metawatch's cache keeps it, packed: the
// uid and resourceVersion as numbers, timestamps as seconds, the shared maps
// and managedFields entry by reference. It is a client.Object, so client-go's
// store, key functions and indexers and controller-runtime's handlers take it.
type compactPod struct {
	name, namespace     string
	uid                 uuid.UUID
	resourceVersion     uint64
	created, deleted    int64 // unix seconds; deleted 0: not being deleted
	generation          int64
	labels, annotations map[string]string
	managedFields       *[]metav1.ManagedFieldsEntry
}

// pack is p packed, false if it holds what a compactPod cannot give back
// exactly (a uid that is not a UUID in its usual form, a resourceVersion that
// is not a number as written, times finer than a second, a grace period):
// such an object is stored as it is.
func pack(p *metav1.PartialObjectMetadata) (*compactPod, bool) {
	uid, err := uuid.Parse(string(p.UID))
	if err != nil || uid.String() != string(p.UID) { // not only parsed: written back the same
		return nil, false
	}
	rv, err := strconv.ParseUint(p.ResourceVersion, 10, 64)
	if err != nil || strconv.FormatUint(rv, 10) != p.ResourceVersion || p.CreationTimestamp.Nanosecond() != 0 || p.DeletionGracePeriodSeconds != nil || p.GetSelfLink() != "" ||
		p.GenerateName != "" || p.OwnerReferences != nil || p.Finalizers != nil {
		return nil, false
	}
	c := &compactPod{name: p.Name, namespace: p.Namespace, uid: uid, resourceVersion: rv, created: p.CreationTimestamp.Unix(),
		generation: p.Generation, labels: p.Labels, annotations: p.Annotations}
	if d := p.DeletionTimestamp; d != nil {
		if d.Nanosecond() != 0 || d.Unix() == 0 {
			return nil, false
		}
		c.deleted = d.Unix()
	}
	if p.ManagedFields != nil {
		c.managedFields = sharedFields(p.ManagedFields)
	}
	return c, true
}

// sharedFields is one pointer to each managedFields slice the transform
// shares (metacache shares metawatch's own entry between objects), so that a
// packed object keeps 8 bytes, not a slice header of its own.
func sharedFields(fields []metav1.ManagedFieldsEntry) *[]metav1.ManagedFieldsEntry {
	key := fieldsKey{unsafe.SliceData(fields), len(fields)}
	fieldsMu.Lock()
	defer fieldsMu.Unlock()
	if shared, ok := fieldsByData[key]; ok {
		return shared
	}
	fieldsByData[key] = &fields
	return &fields
}

type fieldsKey struct {
	data *metav1.ManagedFieldsEntry
	len  int
}

var (
	fieldsMu     sync.Mutex
	fieldsByData = map[fieldsKey]*[]metav1.ManagedFieldsEntry{}
)

// DeepCopyObject materialises the object: what every cache read returns.
func (c *compactPod) DeepCopyObject() runtime.Object {
	p := metacache.NewObject(podGVK)
	p.Name, p.Namespace, p.UID, p.ResourceVersion = c.name, c.namespace, c.GetUID(), c.GetResourceVersion()
	p.CreationTimestamp, p.DeletionTimestamp, p.Generation = c.GetCreationTimestamp(), c.GetDeletionTimestamp(), c.generation
	p.Labels, p.Annotations = copyMap(c.labels), copyMap(c.annotations)
	if c.managedFields != nil {
		for _, f := range *c.managedFields {
			p.ManagedFields = append(p.ManagedFields, *f.DeepCopy())
		}
	}
	return p
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (c *compactPod) GetObjectKind() schema.ObjectKind {
	return &metav1.TypeMeta{APIVersion: podGVK.GroupVersion().String(), Kind: podGVK.Kind}
}
func (c *compactPod) GetNamespace() string          { return c.namespace }
func (c *compactPod) SetNamespace(namespace string) { c.namespace = namespace }
func (c *compactPod) GetName() string               { return c.name }
func (c *compactPod) SetName(name string)           { c.name = name }
func (c *compactPod) GetGenerateName() string       { return "" }
func (c *compactPod) SetGenerateName(string)        {}
func (c *compactPod) GetUID() types.UID             { return types.UID(c.uid.String()) }
func (c *compactPod) SetUID(uid types.UID)          { c.uid, _ = uuid.Parse(string(uid)) }
func (c *compactPod) GetResourceVersion() string    { return strconv.FormatUint(c.resourceVersion, 10) }
func (c *compactPod) SetResourceVersion(rv string) {
	c.resourceVersion, _ = strconv.ParseUint(rv, 10, 64)
}
func (c *compactPod) GetGeneration() int64                  { return c.generation }
func (c *compactPod) SetGeneration(generation int64)        { c.generation = generation }
func (c *compactPod) GetSelfLink() string                   { return "" }
func (c *compactPod) SetSelfLink(string)                    {}
func (c *compactPod) GetCreationTimestamp() metav1.Time     { return metav1.Unix(c.created, 0) }
func (c *compactPod) SetCreationTimestamp(t metav1.Time)    { c.created = t.Unix() }
func (c *compactPod) GetDeletionGracePeriodSeconds() *int64 { return nil }
func (c *compactPod) SetDeletionGracePeriodSeconds(*int64)  {}
func (c *compactPod) GetLabels() map[string]string          { return c.labels }
func (c *compactPod) SetLabels(labels map[string]string)    { c.labels = labels }
func (c *compactPod) GetAnnotations() map[string]string     { return c.annotations }
func (c *compactPod) SetAnnotations(a map[string]string)    { c.annotations = a }
func (c *compactPod) GetFinalizers() []string               { return nil }
func (c *compactPod) SetFinalizers([]string)                {}
func (c *compactPod) GetOwnerReferences() []metav1.OwnerReference {
	return nil
}
func (c *compactPod) SetOwnerReferences([]metav1.OwnerReference) {}

func (c *compactPod) GetDeletionTimestamp() *metav1.Time {
	if c.deleted == 0 {
		return nil
	}
	t := metav1.Unix(c.deleted, 0)
	return &t
}

func (c *compactPod) SetDeletionTimestamp(t *metav1.Time) {
	c.deleted = 0
	if t != nil {
		c.deleted = t.Unix()
	}
}

func (c *compactPod) GetManagedFields() []metav1.ManagedFieldsEntry {
	if c.managedFields == nil {
		return nil
	}
	return *c.managedFields
}

func (c *compactPod) SetManagedFields(fields []metav1.ManagedFieldsEntry) {
	c.managedFields = nil
	if fields != nil {
		c.managedFields = &fields
	}
}

var _ client.Object = &compactPod{}
