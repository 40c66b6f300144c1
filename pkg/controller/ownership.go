package controller

import (
	"encoding/json"
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/metawatch/metawatch/pkg/engine"
)

// owned is the label and annotation keys metawatch's field manager owns on an object.
type owned struct {
	labels, annotations sets.Set[string]
}

// ownedKeys reads metawatch's managedFields entry (the cache keeps only that one).
func ownedKeys(obj metav1.Object) owned {
	o := owned{labels: sets.New[string](), annotations: sets.New[string]()}
	for _, f := range obj.GetManagedFields() {
		if f.Manager != engine.FieldManager || f.Operation != metav1.ManagedFieldsOperationApply || f.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Metadata struct {
				Labels      map[string]json.RawMessage `json:"f:labels"`
				Annotations map[string]json.RawMessage `json:"f:annotations"`
			} `json:"f:metadata"`
		}
		if json.Unmarshal(f.FieldsV1.Raw, &fields) != nil {
			continue
		}
		addFieldKeys(o.labels, fields.Metadata.Labels)
		addFieldKeys(o.annotations, fields.Metadata.Annotations)
	}
	return o
}

func addFieldKeys(dst sets.Set[string], fields map[string]json.RawMessage) {
	for k := range fields {
		if key, ok := strings.CutPrefix(k, "f:"); ok {
			dst.Insert(key)
		}
	}
}

// lost returns the keys o owns and now does not: another manager's Update took them.
func (o owned) lost(now owned) owned {
	return owned{labels: o.labels.Difference(now.labels), annotations: o.annotations.Difference(now.annotations)}
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
