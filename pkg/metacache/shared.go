package metacache

import (
	"reflect"
	"slices"
	"sync"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxShared bounds each table of shared values: when one is full it starts
// over, so a cluster whose every object is unique costs at most this many
// entries, and values already shared stay shared.
const maxShared = 1 << 15

// table hands out one value per distinct key. In a real cluster most pods
// have the labels of their siblings (the pod template's plus the same
// pod-template-hash or controller-revision-hash), so 100k pods carry a few
// thousand distinct label sets; a 5-label map costs ~300 B, more than the rest
// of a cached pod's metadata. Likewise every object metawatch manages the same
// way carries the same managedFields entry (~270 B decoded).
//
// Sharing is safe because nothing modifies an object in an informer's store in
// place: updates replace the object, and controller-runtime's cache reads
// return deep copies.
//
// held also knows the values by identity (where their data lives), so that a
// value the table handed out is recognised without building its key: client-go
// 0.37 runs a cache's transform a second time on every object of a watch-list
// sync (the reflector's temporary store, then the informer's queue), and that
// second run must cost next to nothing.
type table[V any] struct {
	mu       sync.Mutex
	values   map[string]V
	held     map[unsafe.Pointer]struct{}
	identity func(V) unsafe.Pointer
}

func newTable[V any](identity func(V) unsafe.Pointer) *table[V] {
	return &table[V]{values: map[string]V{}, held: map[unsafe.Pointer]struct{}{}, identity: identity}
}

// share returns the value an earlier call stored for key, or stores and returns newValue().
func (t *table[V]) share(key []byte, newValue func() V) V {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.values[string(key)]; ok {
		return v
	}
	if len(t.values) >= maxShared {
		clear(t.values)
		clear(t.held) // the values may be freed now, and their addresses reused
	}
	v := newValue()
	t.values[string(key)] = v
	t.held[t.identity(v)] = struct{}{}
	return v
}

// holds reports whether v is a value the table handed out (and still holds).
func (t *table[V]) holds(v V) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.held[t.identity(v)]
	return ok
}

var (
	sharedLabels = newTable(func(m map[string]string) unsafe.Pointer { return reflect.ValueOf(m).UnsafePointer() })
	sharedOwn    = newTable(func(s []metav1.ManagedFieldsEntry) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(s)) })
	sharedOwners = newTable(func(s []metav1.OwnerReference) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(s)) })
)

// shareController returns the controlling reference of owners alone, one
// shared slice per owner: the pods of a ReplicaSet all point to it, and a
// reference costs ~150 B.
func shareController(owners []metav1.OwnerReference) []metav1.OwnerReference {
	if len(owners) == 0 {
		return nil
	}
	if sharedOwners.holds(owners) {
		return owners // shared already: the transform's second run
	}
	i := slices.IndexFunc(owners, func(o metav1.OwnerReference) bool { return o.Controller != nil && *o.Controller })
	if i < 0 {
		return nil
	}
	ref := owners[i]
	key := []byte(ref.APIVersion + "\x00" + ref.Kind + "\x00" + ref.Name + "\x00" + string(ref.UID))
	return sharedOwners.share(key, func() []metav1.OwnerReference {
		ref.APIVersion, ref.Kind = intern(ref.APIVersion), intern(ref.Kind)
		ref.BlockOwnerDeletion = nil // nothing reads it
		return []metav1.OwnerReference{ref}
	})
}

// shareLabels returns the map equal to m that an earlier call returned, or
// m's copy (with interned strings if intern) that later calls will return.
func shareLabels(m map[string]string, intern bool) map[string]string {
	if len(m) == 0 {
		return nil
	}
	if sharedLabels.holds(m) {
		return m // shared already: the transform's second run
	}
	return sharedLabels.share(encodeMap(m), func() map[string]string {
		if intern {
			return internMap(m, true)
		}
		return m
	})
}

// shareOwn returns one shared copy of metawatch's entry per distinct set of
// fields, without its time (nothing reads when metawatch last applied).
func shareOwn(entry metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	if entry.FieldsV1 == nil {
		return []metav1.ManagedFieldsEntry{entry}
	}
	// Everything the shared copy keeps is in the key: two managers (two
	// installations' caches in one process, as in tests) may own the same
	// fields, and one must not be handed the other's entry.
	key := append([]byte(entry.Manager+"\x00"+string(entry.Operation)+"\x00"+entry.Subresource+"\x00"+entry.APIVersion+"\x00"+entry.FieldsType+"\x00"),
		entry.FieldsV1.GetRawBytes()...)
	return sharedOwn.share(key, func() []metav1.ManagedFieldsEntry {
		entry.Time = nil
		entry.Manager, entry.APIVersion, entry.FieldsType = intern(entry.Manager), intern(entry.APIVersion), intern(entry.FieldsType)
		entry.Operation = metav1.ManagedFieldsOperationType(intern(string(entry.Operation)))
		return []metav1.ManagedFieldsEntry{entry}
	})
}

// encodeMap is m's sorted keys and values, each followed by a 0 byte (which
// label keys and values cannot contain).
func encodeMap(m map[string]string) []byte {
	keys := make([]string, 0, len(m))
	size := 0
	for k, v := range m {
		keys = append(keys, k)
		size += len(k) + len(v) + 2
	}
	slices.Sort(keys)
	key := make([]byte, 0, size)
	for _, k := range keys {
		key = append(append(append(append(key, k...), 0), m[k]...), 0)
	}
	return key
}
