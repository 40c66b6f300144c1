package preview

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/rules"
)

// managers are the field managers of an object's label and annotation
// keys, from its managedFields ("labels/key" → managers), and the name
// metawatch applies as (self).
type managers struct {
	self string
	keys map[string][]string
}

func managersOf(obj metav1.Object, fieldManager string) managers {
	m := managers{self: fieldManager, keys: map[string][]string{}}
	for _, f := range obj.GetManagedFields() {
		if f.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Metadata map[string]map[string]json.RawMessage `json:"f:metadata"`
		}
		if json.Unmarshal(f.FieldsV1.GetRawBytes(), &fields) != nil {
			continue
		}
		name := f.Manager
		if f.Manager == fieldManager && f.Operation != metav1.ManagedFieldsOperationApply {
			name = f.Manager + " (" + string(f.Operation) + ")"
		}
		for _, what := range []string{"labels", "annotations"} {
			for k := range fields.Metadata["f:"+what] {
				if key, ok := strings.CutPrefix(k, "f:"); ok {
					m.keys[what+"/"+key] = append(m.keys[what+"/"+key], name)
				}
			}
		}
	}
	return m
}

func (m managers) mine(what, key string) bool {
	return slices.Contains(m.keys[what+"/"+key], m.self)
}

// other is a manager other than metawatch's apply that owns key, "" if none.
func (m managers) other(what, key string) string {
	for _, name := range m.keys[what+"/"+key] {
		if name != m.self {
			return name
		}
	}
	return ""
}

// changes compares obj with what the rules want of it, as the controller
// does: a key to set (or adopt), a key to remove, a key metawatch set that
// no rule wants any more (released), and a key another manager holds with
// another value (a conflict, unless the rule has force).
func changes(obj Object, m managers, res rules.Result, src found) ([]Write, []Conflict, []string) {
	var writes []Write
	var conflicts []Conflict
	var notes []string
	for _, what := range []struct {
		name    string
		current map[string]string
		desired map[string]rules.Owned
		remove  map[string]string
	}{{"labels", obj.GetLabels(), res.Labels, res.RemoveLabels}, {"annotations", obj.GetAnnotations(), res.Annotations, res.RemoveAnnotations}} {
		for _, k := range sortedKeys(what.desired) {
			o := what.desired[k]
			was, had := what.current[k]
			w := Write{Map: what.name, Key: k, Action: "set", Value: o.Value, Was: was, Had: had, Rule: o.Rule, From: fromOf(o.Rule, what.name, k, src)}
			switch other := m.other(what.name, k); {
			case had && was == o.Value && o.Adopt && !m.mine(what.name, k) && len(obj.GetManagedFields()) > 0:
				w.Action = "adopt"
			case had && was == o.Value:
				continue
			case had && other != "" && !o.Force:
				conflicts = append(conflicts, Conflict{Map: what.name, Key: k, Want: o.Value, Have: was, Manager: other, Rule: o.Rule})
				continue
			case had && len(obj.GetManagedFields()) == 0 && !o.Force:
				notes = append(notes, fmt.Sprintf("%s %s: the object has no managedFields (kubectl get --show-managed-fields shows them): "+
					"if another field manager owns it, metawatch leaves it (a conflict)", what.name, k))
			}
			writes = append(writes, w)
		}
		for _, k := range sortedKeys(what.remove) {
			if was, had := what.current[k]; had {
				writes = append(writes, Write{Map: what.name, Key: k, Action: "remove", Was: was, Had: true, Rule: what.remove[k]})
			}
		}
		for _, k := range sortedKeys(what.current) {
			_, removed := what.remove[k]
			if _, wanted := what.desired[k]; !wanted && !removed && m.mine(what.name, k) {
				writes = append(writes, Write{Map: what.name, Key: k, Action: "release", Was: what.current[k], Had: true})
			}
		}
	}
	return writes, conflicts, notes
}

// leftAll is every key metawatch owns on an object whose kind the limits
// do not let rules write, left for reason.
func leftAll(m managers, current rules.Metadata, reason string) []rules.Left {
	var left []rules.Left
	for _, what := range []config.MetadataMap{config.Labels, config.Annotations} {
		for _, k := range sortedKeys(what.Of(current.Labels, current.Annotations)) {
			if m.mine(what.Plural(), k) {
				left = append(left, rules.Left{Map: what, Key: k, Action: "release", Reason: reason})
			}
		}
	}
	return left
}

// fromOf says where rule's value of key comes from.
func fromOf(rule, what, key string, src found) string {
	for _, r := range src.rules {
		if r.Name != rule {
			continue
		}
		copied, owned := r.CopyLabels, r.OwnerLabels
		if what == "annotations" {
			copied, owned = r.CopyAnnotations, r.OwnerAnnotations
		}
		switch {
		case slices.Contains(copied, key):
			return "Namespace " + src.namespace
		case slices.Contains(owned, key):
			for i, o := range src.Owners {
				if slices.Contains(r.OwnerKinds, o.Kind) {
					return "owner " + src.owners[i].Kind + "/" + src.owners[i].Name
				}
			}
		}
	}
	return "" // the rule's own value
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
