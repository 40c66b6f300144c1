package rulecontroller

import (
	"errors"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/metawatch/metawatch/pkg/ownership"
)

// owned is the label and annotation keys a field manager owns on an object
// (package ownership). The sets ownedKeys returns are shared between
// objects: read them, never change them.
type owned = ownership.Keys

// ownedKeys reads the managedFields entry of metawatch's field manager (the
// cache keeps only that one, and the adopted name's).
func ownedKeys(obj metav1.Object, fieldManager string) owned {
	return ownership.Applied(obj, fieldManager)
}

// mine is what metawatch's field manager owns on obj. A decision reads it
// once and hands it to each of its steps (adoption, fights, guardrails,
// the brake, the apply), which then agree on it.
func (r *ruleReconciler) mine(obj metav1.Object) owned {
	return ownedKeys(obj, r.settings.Identity.FieldManager)
}

// takenBy returns the keys metawatch owned on before that another manager took
// on after: metawatch no longer owns them, and their value changed. Losing
// ownership alone proves nothing: metawatch's own applies release keys (a
// Namespace lost the key, a rule stopped wanting it), and a manager that
// writes the same value takes nothing a rule wants.
func takenBy(before, after metav1.Object, fieldManager string) owned {
	was, is := ownedKeys(before, fieldManager), ownedKeys(after, fieldManager)
	return owned{
		Labels:      changedValues(was.Labels.Difference(is.Labels), before.GetLabels(), after.GetLabels()),
		Annotations: changedValues(was.Annotations.Difference(is.Annotations), before.GetAnnotations(), after.GetAnnotations()),
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

// conflictingKeys returns the label and annotation keys of a server-side apply
// conflict (409 with FieldManagerConflict causes), or ok=false for any other error.
func conflictingKeys(err error) (keys owned, ok bool) {
	var status apierrors.APIStatus
	if !apierrors.IsConflict(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return owned{}, false
	}
	keys = ownership.NewKeys()
	for _, c := range status.Status().Details.Causes {
		if c.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		if k, found := strings.CutPrefix(c.Field, ".metadata.labels."); found {
			keys.Labels.Insert(k)
		} else if k, found := strings.CutPrefix(c.Field, ".metadata.annotations."); found {
			keys.Annotations.Insert(k)
		}
	}
	return keys, !keys.Empty()
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
