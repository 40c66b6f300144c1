package ownership

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Keys are the label and annotation keys a field manager owns on an object.
// The sets Applied and Parse return are shared between objects: read them,
// never change them.
type Keys struct {
	Labels, Annotations sets.Set[string]
}

// None is Keys with no key, shared (read-only).
var None = Keys{Labels: sets.New[string](), Annotations: sets.New[string]()}

// NewKeys is Keys with empty sets of its own, to be filled.
func NewKeys() Keys { return Keys{Labels: sets.New[string](), Annotations: sets.New[string]()} }

// Empty reports whether no key is owned.
func (k Keys) Empty() bool { return k.Labels.Len()+k.Annotations.Len() == 0 }

// Len is how many keys are owned.
func (k Keys) Len() int { return k.Labels.Len() + k.Annotations.Len() }

// Union is a new Keys with the keys of both.
func (k Keys) Union(o Keys) Keys {
	return Keys{Labels: k.Labels.Union(o.Labels), Annotations: k.Annotations.Union(o.Annotations)}
}

// Covers reports whether k owns every key o owns.
func (k Keys) Covers(o Keys) bool {
	return k.Labels.IsSuperset(o.Labels) && k.Annotations.IsSuperset(o.Annotations)
}

// Applied is the keys manager owns on obj through server-side apply (its
// Apply entry of the main resource); None if it has none.
func Applied(obj metav1.Object, manager string) Keys {
	if e := entryOf(obj.GetManagedFields(), manager); e != nil {
		return Parse(e.FieldsV1.GetRawBytes())
	}
	return None
}

// Entry is manager's Apply entry on obj (nil if none), the keys it owns and
// whether it owns nothing but labels and annotations.
func Entry(obj metav1.Object, manager string) (entry *metav1.ManagedFieldsEntry, keys Keys, onlyMetadata bool) {
	e := entryOf(obj.GetManagedFields(), manager)
	if e == nil {
		return nil, None, false
	}
	raw := e.FieldsV1.GetRawBytes()
	return e, Parse(raw), onlyLabelsAndAnnotations(raw)
}

// AnnotationsOf is the annotation keys the Apply entries of managers own
// among fields (an object's managedFields, as the cache's transform has
// them), or nil if they own none.
func AnnotationsOf(fields []metav1.ManagedFieldsEntry, managers ...string) sets.Set[string] {
	var out sets.Set[string]
	for _, m := range managers {
		if m == "" {
			continue
		}
		e := entryOf(fields, m)
		if e == nil {
			continue
		}
		keys := Parse(e.FieldsV1.GetRawBytes()).Annotations
		if keys.Len() == 0 {
			continue
		}
		if out == nil {
			out = keys
			continue
		}
		out = out.Union(keys)
	}
	return out
}

func entryOf(fields []metav1.ManagedFieldsEntry, manager string) *metav1.ManagedFieldsEntry {
	for i := range fields {
		f := &fields[i]
		if f.Manager == manager && f.Operation == metav1.ManagedFieldsOperationApply && f.Subresource == "" && f.FieldsV1 != nil {
			return f
		}
	}
	return nil
}

// memo holds parsed sets by their bytes. Objects metawatch manages alike
// carry the same set (the cache even shares one entry between them), a
// decision reads it up to three times, an update event twice, and the
// cache's transform once per object: parsing each time was 30 allocations
// and about 6 us, 13 s of CPU for the settled checks of a million objects
// at start. Bounded: cleared when full, as the cache's tables of shared
// values are.
type memo struct {
	mu     sync.Mutex
	parsed map[string]Keys
}

var parsed = &memo{parsed: map[string]Keys{}}

// maxParsed bounds the memo: distinct owned sets are few (one per
// combination of keys the rules write), so the bound is rarely reached.
const maxParsed = 4096

// Parse is the label and annotation keys of a FieldsV1 set (none if it
// cannot be read), memoized.
func Parse(raw []byte) Keys {
	parsed.mu.Lock()
	k, ok := parsed.parsed[string(raw)]
	parsed.mu.Unlock()
	if ok {
		return k
	}
	k = parse(raw)
	parsed.mu.Lock()
	defer parsed.mu.Unlock()
	if len(parsed.parsed) >= maxParsed {
		clear(parsed.parsed)
	}
	parsed.parsed[string(raw)] = k
	return k
}

// parse reads the label and annotation keys of a FieldsV1 set.
func parse(raw []byte) Keys {
	k := NewKeys()
	var fields struct {
		Metadata struct {
			Labels      map[string]json.RawMessage `json:"f:labels"`
			Annotations map[string]json.RawMessage `json:"f:annotations"`
		} `json:"f:metadata"`
	}
	if json.Unmarshal(raw, &fields) != nil {
		return k
	}
	addFieldKeys(k.Labels, fields.Metadata.Labels)
	addFieldKeys(k.Annotations, fields.Metadata.Annotations)
	return k
}

func addFieldKeys(dst sets.Set[string], fields map[string]json.RawMessage) {
	for k := range fields {
		if key, ok := strings.CutPrefix(k, "f:"); ok {
			dst.Insert(key)
		}
	}
}

// onlyLabelsAndAnnotations reports whether a FieldsV1 set holds nothing but
// label and annotation keys ("." is a set's own marker); false if it cannot
// be read.
func onlyLabelsAndAnnotations(raw []byte) bool {
	var root, meta map[string]json.RawMessage
	if json.Unmarshal(raw, &root) != nil || !onlyKeys(root, "f:metadata") {
		return false
	}
	if m, ok := root["f:metadata"]; ok && json.Unmarshal(m, &meta) != nil {
		return false
	}
	if !onlyKeys(meta, "f:labels", "f:annotations") {
		return false
	}
	for _, name := range []string{"f:labels", "f:annotations"} {
		var m map[string]json.RawMessage
		if raw, ok := meta[name]; ok && json.Unmarshal(raw, &m) != nil {
			return false
		}
		for k := range m {
			if k != "." && !strings.HasPrefix(k, "f:") {
				return false
			}
		}
	}
	return true
}

// onlyKeys reports whether m has no key but allowed and ".".
func onlyKeys(m map[string]json.RawMessage, allowed ...string) bool {
	for k := range m {
		if k != "." && !slices.Contains(allowed, k) {
			return false
		}
	}
	return true
}
