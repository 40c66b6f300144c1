package rulecontroller

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/rules"
	"github.com/metawatch/metawatch/pkg/telemetry"
)

// remove deletes the keys remove actions name, whoever set them, with a JSON
// merge patch that carries rv (obj's newest resourceVersion) as a
// precondition: if the object changed since, the patch fails (409, see
// authority.Stale), and the caller decides again on the object as it is now.
// It returns the resourceVersion the object has after it (rv if nothing was
// written).
func (r *ruleReconciler) remove(ctx context.Context, obj *metav1.PartialObjectMetadata, rv string, res rules.Result) (string, error) {
	involved := sets.New[string]()
	labels := present(obj.Labels, res.RemoveLabels, involved)
	annotations := present(obj.Annotations, res.RemoveAnnotations, involved)
	if len(labels)+len(annotations) == 0 {
		return rv, nil
	}
	log := logr.FromContextOrDiscard(ctx)
	if r.settings.DryRun {
		r.count(involved, telemetry.ResultDryRun)
		log.Info("dry run: would remove", "labels", labels, "annotations", annotations)
		return rv, nil
	}
	metadata := map[string]any{"resourceVersion": rv, "uid": obj.UID}
	if len(labels) > 0 {
		metadata["labels"] = nulls(labels)
	}
	if len(annotations) > 0 {
		metadata["annotations"] = nulls(annotations)
	}
	patch, err := json.Marshal(map[string]any{"metadata": metadata})
	if err != nil {
		return rv, err
	}
	target := metacache.NewObject(r.GVK)
	target.Namespace, target.Name, target.UID = obj.Namespace, obj.Name, obj.UID // the UID for the shard gate
	err = r.Writer.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch))
	switch outcome := authority.Classify(err); {
	case outcome == authority.Written:
	case dropped(ctx, outcome, "removed", obj.UID):
		return rv, nil
	case outcome == authority.SendSoon, outcome == authority.Stale:
		return rv, err // not a failure: tried again soon, or at once on the object as it is now
	default:
		r.count(involved, telemetry.ResultError)
		return rv, err
	}
	r.count(involved, telemetry.ResultRemoved)
	log.Info("removed", "labels", labels, "annotations", annotations)
	return target.ResourceVersion, nil
}

// present returns the keys of toRemove the object has, and adds their rules to involved.
func present(current map[string]string, toRemove map[string]string, involved sets.Set[string]) []string {
	var keys []string
	for k, rule := range toRemove {
		if _, ok := current[k]; ok {
			keys = append(keys, k)
			involved.Insert(rule)
		}
	}
	sort.Strings(keys)
	return keys
}

// nulls is a merge patch that deletes keys (null deletes in JSON merge patch).
func nulls(keys []string) map[string]any {
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		out[k] = nil
	}
	return out
}
