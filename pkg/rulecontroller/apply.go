package rulecontroller

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/rules"
	"github.com/metawatch/metawatch/pkg/telemetry"
)

// Event reasons of writes.
const (
	// ReasonConflict: another field manager owns a key a rule wants.
	ReasonConflict = "LabelConflict"
	// ReasonOwnershipFight: another manager keeps taking a key metawatch takes back; metawatch stops.
	ReasonOwnershipFight = "OwnershipFight"
)

var namespaceGVK = corev1.SchemeGroupVersion.WithKind("Namespace")

// apply server-side applies the labels and annotations the rules own, when
// anything differs from the cached object: a value, or a key metawatch owns
// that no rule wants any more (leaving it out of the apply deletes it). rv is
// the apply's resourceVersion precondition: the server refuses it (409, see
// authority.Stale) if anyone wrote the object since.
// It also returns the rules whose keys another field manager holds (left
// to it, settled or just now), for metawatch_rule_objects_off.
func (r *ruleReconciler) apply(ctx context.Context, obj *metav1.PartialObjectMetadata, mine owned, rv string, res rules.Result) (map[string]bool, error) {
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	wanted := res
	res.Labels = r.memory.yielded.withoutSettled(key, config.Labels, res.Labels, obj.Labels)
	res.Annotations = r.memory.yielded.withoutSettled(key, config.Annotations, res.Annotations, obj.Annotations)
	held := heldRules(wanted, res)
	changed := changeOf(obj, mine, res)
	if changed.empty() {
		return held, nil
	}
	log := logr.FromContextOrDiscard(ctx)
	if r.settings.DryRun {
		r.count(changed.rules, telemetry.ResultDryRun)
		log.Info("dry run: would apply", changed.logValues()...)
		return held, nil
	}
	err := r.applyManifest(ctx, obj, rv, res.Labels, res.Annotations, false)
	if conflicts, ok := conflictingKeys(err); ok {
		var kept rules.Result
		kept, err = r.resolveConflicts(ctx, obj, rv, res, conflicts, conflictHolders(err))
		changed = changeOf(obj, mine, kept) // yielded keys were not written
		held = heldRules(wanted, kept)
	}
	switch outcome := authority.Classify(err); {
	case outcome == authority.Written:
	case dropped(ctx, outcome, "applied", obj.UID):
		return nil, nil
	case outcome == authority.SendSoon, outcome == authority.Stale:
		return nil, err // not a failure: tried again soon, or at once on the object as it is now
	default:
		r.count(changed.rules, telemetry.ResultError)
		return nil, err
	}
	r.count(changed.rules, telemetry.ResultApplied)
	r.memory.reclaims.clear(key)
	log.Info("applied", changed.logValues()...)
	return held, nil
}

// dropped reports whether a rule write's outcome drops it, and logs so: the
// object is gone or was replaced (the watch brings that, decided on its
// own), this generation is stopping, or another replica holds its bucket.
// One policy for every write of the rules: apply, remove, adoption.
func dropped(ctx context.Context, outcome authority.Outcome, write string, uid types.UID) bool {
	if outcome != authority.Gone && outcome != authority.NotSent {
		return false
	}
	logr.FromContextOrDiscard(ctx).V(1).Info("not "+write+": the object is gone or was replaced (the watch will tell), this generation is stopping, or another replica holds its bucket", "uid", uid)
	return true
}

// heldRules are the rules of the keys wanted wants that kept leaves out:
// those left to another field manager.
func heldRules(wanted, kept rules.Result) map[string]bool {
	held := map[string]bool{}
	for _, m := range []struct{ wanted, kept map[string]rules.Owned }{{wanted.Labels, kept.Labels}, {wanted.Annotations, kept.Annotations}} {
		for k, o := range m.wanted {
			if _, ok := m.kept[k]; !ok && !o.Keep {
				held[o.Rule] = true
			}
		}
	}
	return held
}

// change is what an apply would change: keys to set (with the rule that
// wants each), keys metawatch owns that no rule wants any more, and the rules involved.
type change struct {
	setLabels, setAnnotations         map[string]string
	releaseLabels, releaseAnnotations []string
	rules                             sets.Set[string]
}

func (c change) empty() bool {
	return len(c.setLabels)+len(c.setAnnotations)+len(c.releaseLabels)+len(c.releaseAnnotations) == 0
}

// changeOf compares the object, on which metawatch owns mine, with what the
// rules own.
func changeOf(obj *metav1.PartialObjectMetadata, mine owned, res rules.Result) change {
	c := change{rules: sets.New[string]()}
	c.setLabels, c.releaseLabels = diffOwned(c.rules, obj.Labels, res.Labels, mine.Labels)
	c.setAnnotations, c.releaseAnnotations = diffOwned(c.rules, obj.Annotations, res.Annotations, mine.Annotations)
	return c
}

// diffOwned is what to apply (a key missing or with another value, or one
// to adopt that metawatch does not own yet) and what to release.
func diffOwned(involved sets.Set[string], current map[string]string, desired map[string]rules.Owned, mine sets.Set[string]) (set map[string]string, release []string) {
	set = map[string]string{}
	for k, o := range desired {
		if v, ok := current[k]; !ok || v != o.Value || (o.Adopt && !mine.Has(k)) {
			set[k] = o.Value
			involved.Insert(o.Rule)
		}
	}
	for k := range mine {
		if _, wanted := desired[k]; !wanted {
			release = append(release, k)
		}
	}
	sort.Strings(release)
	return set, release
}

// resolveConflicts handles keys another manager owns with another value: keys
// of a rule with force, or that metawatch owned until a hand edit, are taken
// back; the others are left to their owner, with an Event and a count.
// It returns what was applied.
func (r *ruleReconciler) resolveConflicts(ctx context.Context, obj *metav1.PartialObjectMetadata, rv string, res rules.Result, conflicts owned, holders map[string]string) (rules.Result, error) {
	reclaim := r.memory.reclaims.get(types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name})
	labels, forceLabels := r.yield(obj, config.Labels, res.Labels, conflicts.Labels.UnsortedList(), reclaim.Labels.Has, holders)
	annotations, forceAnnotations := r.yield(obj, config.Annotations, res.Annotations, conflicts.Annotations.UnsortedList(), reclaim.Annotations.Has, holders)
	res.Labels, res.Annotations = labels, annotations
	return res, r.applyManifest(ctx, obj, rv, labels, annotations, forceLabels || forceAnnotations)
}

// yield removes from desired the conflicting keys metawatch may not take, and
// reports whether any conflicting key remains (to be taken with force). A key
// is taken when its rule has force, or when another manager took it from
// metawatch (a hand edit, reclaimed), unless it keeps being taken (a fight):
// then metawatch stops, says so, and leaves the key to the other manager.
func (r *ruleReconciler) yield(obj *metav1.PartialObjectMetadata, what config.MetadataMap, desired map[string]rules.Owned, conflicts []string, reclaimed func(string) bool, holders map[string]string) (map[string]rules.Owned, bool) {
	out := maps.Clone(desired)
	force := false
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	for _, k := range conflicts {
		o, ok := desired[k]
		switch {
		case !ok:
		case (o.Force || reclaimed(k)) && r.memory.takeovers.fighting(key, what, k):
			delete(out, k)
			r.memory.yielded.add(key, what, k, currentValue(obj, what, k))
			telemetry.OwnershipFights.WithLabelValues(o.Rule, kindLabel(r.GVK)).Inc()
			occur(r.wiring.Events, kindLabel(r.GVK), key, ReasonOwnershipFight, "Apply", o.Rule, takeoverFightMessage(o.Rule),
				fmt.Sprintf("%s %s=%q%s", what, k, o.Value, r.theirValue(obj, what, k, ", now %q")))
		case o.Force || reclaimed(k):
			force = true
		default:
			delete(out, k)
			r.memory.yielded.add(key, what, k, currentValue(obj, what, k))
			telemetry.RuleConflicts.WithLabelValues(o.Rule, kindLabel(r.GVK)).Inc()
			telemetry.RuleWrites.WithLabelValues(o.Rule, kindLabel(r.GVK), telemetry.ResultConflict).Inc()
			occur(r.wiring.Events, kindLabel(r.GVK), key, ReasonConflict, "Apply", o.Rule, conflictMessage(o.Rule),
				fmt.Sprintf("%s %s=%q, owned by %s%s", what, k, o.Value, holderName(holders, what, k), r.theirValue(obj, what, k, " with value %q")))
		}
	}
	return out, force
}

// theirValue is format with another manager's value of key, for an Event,
// when Events may carry it (settings.Settings.EventValues), never for an annotation of
// a Secret (it may hold the Secret's data, as last-applied-configuration
// does); "" otherwise: an Event is readable by whoever may list Events.
func (r *ruleReconciler) theirValue(obj *metav1.PartialObjectMetadata, what config.MetadataMap, key, format string) string {
	secret := r.GVK.Group == "" && r.GVK.Kind == "Secret" && what == config.Annotations
	if !r.settings.EventValues || secret {
		return ""
	}
	return fmt.Sprintf(format, currentValue(obj, what, key))
}

// holderName names the field manager holding key in a conflict, as the API server said it.
func holderName(holders map[string]string, what config.MetadataMap, key string) string {
	if m, ok := holders[what.Plural()+"/"+key]; ok {
		return fmt.Sprintf("field manager %q", m)
	}
	return "another field manager"
}

func currentValue(obj *metav1.PartialObjectMetadata, what config.MetadataMap, key string) string {
	return what.Of(obj.Labels, obj.Annotations)[key]
}

// applyManifest server-side applies a metadata-only manifest: exactly the
// keys metawatch owns, on the object's version rv (empty: any).
func (r *ruleReconciler) applyManifest(ctx context.Context, obj *metav1.PartialObjectMetadata, rv string, labels, annotations map[string]rules.Owned, force bool) error {
	_, err := r.applyAs(ctx, asInstallation, obj, rv, labels, annotations, force)
	return err
}

// applier is the field manager an apply is sent as.
type applier bool

const (
	// asInstallation: the identity's field manager, which the writer names.
	asInstallation applier = false
	// asAdopted: the name the identity adopts from, whose keys adoption
	// releases (adopt.go).
	asAdopted applier = true
)

// applyAs is applyManifest as the field manager as names; it returns the
// resourceVersion the object has after it.
func (r *ruleReconciler) applyAs(ctx context.Context, as applier, obj *metav1.PartialObjectMetadata, rv string, labels, annotations map[string]rules.Owned, force bool) (string, error) {
	// The UID makes the apply fail, instead of landing on another object, when
	// the cached object is gone or its name now belongs to a new object; the
	// resourceVersion, when anyone wrote it since this decision was made on it.
	metadata := map[string]any{"name": obj.Name, "uid": obj.UID}
	if rv != "" {
		metadata["resourceVersion"] = rv
	}
	if obj.Namespace != "" {
		metadata["namespace"] = obj.Namespace
	}
	if len(labels) > 0 {
		metadata["labels"] = values(labels)
	}
	if len(annotations) > 0 {
		metadata["annotations"] = values(annotations)
	}
	manifest, err := json.Marshal(map[string]any{"apiVersion": r.GVK.GroupVersion().String(), "kind": r.GVK.Kind, "metadata": metadata})
	if err != nil {
		return "", err
	}
	var opts []client.PatchOption
	if as == asAdopted {
		opts = append(opts, client.FieldOwner(r.settings.Identity.Adopted))
	}
	if force {
		opts = append(opts, client.ForceOwnership)
	}
	target := metacache.NewObject(r.GVK)
	target.Namespace, target.Name, target.UID = obj.Namespace, obj.Name, obj.UID // the UID for the shard gate
	err = r.Writer.Patch(ctx, target, client.RawPatch(types.ApplyPatchType, manifest), opts...)
	return target.ResourceVersion, err
}

func values(owned map[string]rules.Owned) map[string]string {
	out := make(map[string]string, len(owned))
	for k, o := range owned {
		out[k] = o.Value
	}
	return out
}

func (r *ruleReconciler) count(involved sets.Set[string], result string) {
	for rule := range involved {
		telemetry.RuleWrites.WithLabelValues(rule, kindLabel(r.GVK), result).Inc()
	}
}

func (c change) logValues() []any {
	return []any{"setLabels", c.setLabels, "setAnnotations", sortedKeys(c.setAnnotations),
		"releasedLabels", c.releaseLabels, "releasedAnnotations", c.releaseAnnotations, "rules", sets.List(c.rules)}
}
