package rulecontroller

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// owned is the label and annotation keys metawatch's field manager owns on
// an object. The sets ownedKeys returns are shared between objects (see
// parsedFields): read them, never change them.
type owned struct {
	labels, annotations sets.Set[string]
}

// ownedKeys reads the managedFields entry of metawatch's field manager (the
// cache keeps only that one).
func ownedKeys(obj metav1.Object, fieldManager string) owned {
	for _, f := range obj.GetManagedFields() {
		if f.Manager == fieldManager && f.Operation == metav1.ManagedFieldsOperationApply && f.FieldsV1 != nil {
			return parsedFields.keysOf(f.FieldsV1.GetRawBytes())
		}
	}
	return noKeys
}

// noKeys is owned with no key, shared (read-only, as every owned ownedKeys returns).
var noKeys = owned{labels: sets.New[string](), annotations: sets.New[string]()}

// fieldKeys memoizes the label and annotation keys of a FieldsV1 set by its
// bytes. Objects metawatch manages alike carry the same set (the cache even
// shares one entry between them), a decision reads it up to three times and
// an update event twice: parsing it each time was 30 allocations and about
// 6 us, 13 s of CPU for the settled checks of a million objects at start.
// Bounded: cleared when full, as the cache's tables of shared values are.
type fieldKeys struct {
	mu     sync.Mutex
	parsed map[string]owned
}

var parsedFields = &fieldKeys{parsed: map[string]owned{}}

// maxParsedFields bounds fieldKeys: distinct owned sets are few (one per
// combination of keys the rules write), so the bound is rarely reached.
const maxParsedFields = 4096

func (p *fieldKeys) keysOf(raw []byte) owned {
	p.mu.Lock()
	o, ok := p.parsed[string(raw)]
	p.mu.Unlock()
	if ok {
		return o
	}
	o = parseOwned(raw)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.parsed) >= maxParsedFields {
		clear(p.parsed)
	}
	p.parsed[string(raw)] = o
	return o
}

// parseOwned reads the label and annotation keys of a FieldsV1 set (none if
// it cannot be read).
func parseOwned(raw []byte) owned {
	o := owned{labels: sets.New[string](), annotations: sets.New[string]()}
	var fields struct {
		Metadata struct {
			Labels      map[string]json.RawMessage `json:"f:labels"`
			Annotations map[string]json.RawMessage `json:"f:annotations"`
		} `json:"f:metadata"`
	}
	if json.Unmarshal(raw, &fields) != nil {
		return o
	}
	addFieldKeys(o.labels, fields.Metadata.Labels)
	addFieldKeys(o.annotations, fields.Metadata.Annotations)
	return o
}

func addFieldKeys(dst sets.Set[string], fields map[string]json.RawMessage) {
	for k := range fields {
		if key, ok := strings.CutPrefix(k, "f:"); ok {
			dst.Insert(key)
		}
	}
}

// takenBy returns the keys metawatch owned on before that another manager took
// on after: metawatch no longer owns them, and their value changed. Losing
// ownership alone proves nothing: metawatch's own applies release keys (a
// Namespace lost the key, a rule stopped wanting it), and a manager that
// writes the same value takes nothing a rule wants.
func takenBy(before, after metav1.Object, fieldManager string) owned {
	was, is := ownedKeys(before, fieldManager), ownedKeys(after, fieldManager)
	return owned{
		labels:      changedValues(was.labels.Difference(is.labels), before.GetLabels(), after.GetLabels()),
		annotations: changedValues(was.annotations.Difference(is.annotations), before.GetAnnotations(), after.GetAnnotations()),
	}
}

// changedValues returns the keys of lost that after still has, with another value than before.
func changedValues(lost sets.Set[string], before, after map[string]string) sets.Set[string] {
	out := sets.New[string]()
	for k := range lost {
		if v, ok := after[k]; ok && v != before[k] {
			out.Insert(k)
		}
	}
	return out
}

func (o owned) empty() bool { return o.labels.Len()+o.annotations.Len() == 0 }

// conflictingKeys returns the label and annotation keys of a server-side apply
// conflict (409 with FieldManagerConflict causes), or ok=false for any other error.
func conflictingKeys(err error) (keys owned, ok bool) {
	var status apierrors.APIStatus
	if !apierrors.IsConflict(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return owned{}, false
	}
	keys = owned{labels: sets.New[string](), annotations: sets.New[string]()}
	for _, c := range status.Status().Details.Causes {
		if c.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		if k, found := strings.CutPrefix(c.Field, ".metadata.labels."); found {
			keys.labels.Insert(k)
		} else if k, found := strings.CutPrefix(c.Field, ".metadata.annotations."); found {
			keys.annotations.Insert(k)
		}
	}
	return keys, !keys.empty()
}

// conflictHolders returns, for each label and annotation key of a server-side
// apply conflict, the field manager that holds it, as the API server names
// it in the cause ("conflict with \"kubectl-edit\" using v1"); keyed by the
// map's Plural and the key ("labels/team").
func conflictHolders(err error) map[string]string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	out := map[string]string{}
	for _, c := range status.Status().Details.Causes {
		field, found := strings.CutPrefix(c.Field, ".metadata.")
		_, quoted, named := strings.Cut(c.Message, "conflict with ")
		if c.Type != metav1.CauseTypeFieldManagerConflict || !found || !named {
			continue
		}
		if manager, err := strconv.QuotedPrefix(quoted); err == nil {
			out[strings.Replace(field, ".", "/", 1)], _ = strconv.Unquote(manager)
		}
	}
	return out
}
