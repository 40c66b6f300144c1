package rulecontroller

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/ownership"
	"github.com/metawatch/metawatch/pkg/rules"
	"github.com/metawatch/metawatch/pkg/telemetry"
)

// Adoption takes over, object by object, the label and annotation keys that
// the field manager this installation wrote as before owns
// (authority.Identity.Adopted, --adopt-field-manager). Without it, a renamed
// --field-manager leaves those keys to a name nobody runs: never released
// when a rule stops wanting them, and fought over by the new name.
//
// It never changes a value. First the installation applies, as its own name,
// every key it owns and every key the old name owns, at their current values:
// each such key is then owned by both. Then it applies as the old name with
// only the keys the guardrails keep from it (protected and reserved keys stay
// with the old name, as they are): the old name lets go of the rest, and as
// the new name owns them too, they stay. What no rule wants is released after
// that like any other key the installation owns, through the removal brake.
// Each write carries the object's resourceVersion: a stale view fails, and is
// decided again on the object as it is now. Killed between the two, the next
// reconcile finds the first done and sends the second.
//
// It refuses, and counts (metawatch_field_manager_adoptions_total):
//   - an object where the old name owns any field but labels and annotations:
//     applying as the old name without them would delete them;
//   - an object the old name applied to since adoption began (with
//     liveWriterSlack for clocks apart): an installation still writes as that
//     name, and taking its keys would start a fight.

// liveWriterSlack is how much later than adoption began an apply of the old
// name must be to count as a live writer's: managedFields times are the API
// server's clock, adoption's start this process's, and the old installation
// may have written up to when it handed the Lease over.
const liveWriterSlack = 30 * time.Second

// adoptionPlan is what adoption would do to one object.
type adoptionPlan struct {
	take, keep owned // the keys taken over; those left to the old name
	refused    string
}

// planAdoption is what adoption would do to obj: nothing (ok false) when the
// old name owns no key adoption may take.
func (r *ruleReconciler) planAdoption(obj *metav1.PartialObjectMetadata) (p adoptionPlan, ok bool) {
	if r.settings.Identity.Adopted == "" {
		return p, false
	}
	entry, theirs, onlyMetadata := ownership.Entry(obj, r.settings.Identity.Adopted)
	if entry == nil {
		return p, false
	}
	p.take, p.keep = r.splitAdoptable(obj, theirs)
	switch {
	case p.take.Empty():
		return p, false
	case !onlyMetadata:
		p.refused = telemetry.AdoptionOtherFields
	case entry.Time != nil && entry.Time.After(r.adoptionBegan().Add(liveWriterSlack)):
		p.refused = telemetry.AdoptionLive
	}
	return p, true
}

// splitAdoptable sorts the keys the old name owns on obj into those to take
// and those the guardrails keep from this installation; keys obj no longer
// has (a stale entry) are neither.
func (r *ruleReconciler) splitAdoptable(obj *metav1.PartialObjectMetadata, theirs owned) (take, keep owned) {
	take = ownership.NewKeys()
	keep = ownership.NewKeys()
	for _, m := range []struct {
		theirs, take, keep sets.Set[string]
		current            map[string]string
	}{{theirs.Labels, take.Labels, keep.Labels, obj.Labels}, {theirs.Annotations, take.Annotations, keep.Annotations, obj.Annotations}} {
		for k := range m.theirs {
			switch _, has := m.current[k]; {
			case !has:
			case r.settings.Guardrails.ReleaseRefusal(k) != "":
				m.keep.Insert(k)
			default:
				m.take.Insert(k)
			}
		}
	}
	return take, keep
}

// adopt carries out obj's adoption, if it has one; adopted reports that it
// wrote: obj is then not the object as it is now.
func (r *ruleReconciler) adopt(ctx context.Context, obj *metav1.PartialObjectMetadata, mine owned, rv string) (adopted bool, err error) {
	p, ok := r.planAdoption(obj)
	if !ok {
		return false, nil
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("from", r.settings.Identity.Adopted, "labels", sets.List(p.take.Labels), "annotations", sets.List(p.take.Annotations))
	if p.refused != "" {
		telemetry.Adoptions.WithLabelValues(kindLabel(r.GVK), p.refused).Inc()
		log.Info("keys of the adopted field manager not taken over", "reason", p.refused)
		return false, nil
	}
	if r.settings.DryRun {
		log.Info("dry run: would adopt keys")
		return false, nil
	}
	if !mine.Covers(p.take) {
		both := mine.Union(p.take)
		if rv, err = r.applyCurrent(ctx, asInstallation, obj, rv, both); err != nil || rv == "" {
			return false, err
		}
	}
	if rv, err = r.applyCurrent(ctx, asAdopted, obj, rv, p.keep); err != nil || rv == "" {
		return false, err // a dropped write adopted nothing yet
	}
	telemetry.Adoptions.WithLabelValues(kindLabel(r.GVK), telemetry.AdoptionDone).Inc()
	log.Info("adopted keys")
	return true, nil
}

// applyCurrent applies keys at their current values as the field manager as names, on obj's
// version rv, and returns the version the object has after it; "" and no
// error when the write was dropped: the object is gone or replaced, the
// generation is stopping, or another replica holds its bucket.
func (r *ruleReconciler) applyCurrent(ctx context.Context, as applier, obj *metav1.PartialObjectMetadata, rv string, keys owned) (string, error) {
	labels, annotations := atCurrent(obj.Labels, keys.Labels), atCurrent(obj.Annotations, keys.Annotations)
	after, err := r.applyAs(ctx, as, obj, rv, labels, annotations, false)
	switch outcome := authority.Classify(err); {
	case outcome == authority.Written:
	case dropped(ctx, outcome, "adopted", obj.UID):
		return "", nil
	default:
		return "", err // stale: decided again on the object as it is now; or tried again
	}
	return after, nil
}

// atCurrent is the keys current has of keys, at their values, as an
// apply's Owned.
func atCurrent(current map[string]string, keys sets.Set[string]) map[string]rules.Owned {
	out := make(map[string]rules.Owned, keys.Len())
	for k := range keys {
		if v, has := current[k]; has {
			out[k] = rules.Owned{Value: v, Keep: true}
		}
	}
	return out
}
