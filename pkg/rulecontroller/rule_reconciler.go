package rulecontroller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/ownership"
	"github.com/metawatch/metawatch/pkg/rules"
	"github.com/metawatch/metawatch/pkg/settings"
)

// ruleReconciler keeps the labels and annotations of one kind's objects the
// way its rules want: given the object read from the cache (and its namespace, read here),
// asks the pure rules core what it should look like, and writes only what
// differs. Set and copy actions are server-side applied by field manager
// "metawatch"; remove actions are merge patches with a resourceVersion
// precondition; require actions are audited.
type ruleReconciler struct {
	Reader client.Reader     // the cache
	Writer authority.Patcher // the API server, through the fence (authority.Writer)
	GVK    schema.GroupVersionKind
	Rules  []rules.Rule

	// settings are the operator's, wiring the generation's: kept whole.
	settings *settings.Settings
	wiring   Wiring

	audit  *audit
	memory *memory
	// kindWritable: the guardrails let rules write the kind at all.
	kindWritable bool
	// adoptionBegan is when this reconciler first adopted (see liveWriterSlack).
	adoptionBegan func() time.Time
	live          client.Reader // the API server, uncached: the object as it is now, after a stale write
	// ownerKinds are the kinds cached for copyFromOwner; copiesFromOwners:
	// some rule of this kind copies from an owner (see ownersOf).
	ownerKinds       ownerKinds
	copiesFromOwners bool
	// watchedNamespaces are the namespaces the kind's watch lists; empty: all.
	watchedNamespaces []string
	// packed: the cache stores the kind's objects packed (metacache.Packed),
	// and reads of them cannot skip the copy (see noCopy).
	packed bool
	// relistHeld are queued again at the end of the kind's relist (relist.go).
	relistHeld *relistHolds
	// removes are the keys some rule of the kind removes: one coming back
	// is an undo of metawatch's write (noteUndone); writes, those the rules
	// set or copy (noteForeignApply).
	removes ownership.Keys
	writes  ruleWrites
	// holder, sharded, says whether this replica holds an object's bucket;
	// nil otherwise.
	holder Holder
}

// noCopy is client.UnsafeDisableDeepCopy for reads of the kind's objects
// where the cache stores them as they are, nothing where it packs them:
// controller-runtime hands an uncopied read the stored object itself, which
// must then be the type asked for, and a packed object is not.
func (r *ruleReconciler) noCopy() []client.UnsafeDisableDeepCopyOption { return noCopyUnless(r.packed) }

// noCopyUnless is client.UnsafeDisableDeepCopy unless packed (see ruleReconciler.noCopy).
func noCopyUnless(packed bool) []client.UnsafeDisableDeepCopyOption {
	if packed {
		return nil
	}
	return []client.UnsafeDisableDeepCopyOption{client.UnsafeDisableDeepCopy}
}

// cachesNamespace reports whether the kind's cache holds namespace's objects:
// a watch that lists namespaces has a cache for each, and a List in any
// other is an error, not an empty list.
func (r *ruleReconciler) cachesNamespace(namespace string) bool {
	return len(r.watchedNamespaces) == 0 || slices.Contains(r.watchedNamespaces, namespace)
}

// ResourceVersions gives the newest resourceVersion of a cached object: the
// API server may have sent newer versions of it that were unchanged but for
// their resourceVersion, and left out before decoding (wire.ResourceVersions).
type ResourceVersions interface {
	// Newest is the newest resourceVersion known of the object with uid
	// whose cached version is cached, or cached itself.
	Newest(uid types.UID, cached string) string
}

// ruleReconciler is the reconciler of the rules rs of the kind w watches,
// writing through the wiring's guard.
func (s setup) ruleReconciler(w config.ResolvedWatch, rs []rules.Rule, mem *memory) *ruleReconciler {
	return &ruleReconciler{
		Reader: s.mgr.GetCache(), Writer: authority.NewWriter(s.mgr.GetClient(), s.wiring.Guard),
		GVK: w.GVK, Rules: rs, settings: s.settings, wiring: s.wiring,
		audit: s.wiring.Audits.forKind(w.GVK, rs, s.wiring.Events), memory: mem,
		kindWritable:  s.settings.Guardrails.AllowsKind(w.GVK.GroupKind(), w.Namespaced),
		adoptionBegan: sync.OnceValue(time.Now), live: s.mgr.GetAPIReader(),
		ownerKinds: s.owners, copiesFromOwners: rules.CopiesFromOwners(rs), watchedNamespaces: w.Namespaces,
		packed: metacache.Packed(w), relistHeld: newRelistHolds(),
		removes: removedKeys(rs), writes: writesOf(rs), holder: s.wiring.holder(s.settings.Mode),
	}
}

// removedKeys are the keys some rule of rs removes.
func removedKeys(rs []rules.Rule) ownership.Keys {
	k := ownership.NewKeys()
	for _, r := range rs {
		k.Labels.Insert(r.RemoveLabels...)
		k.Annotations.Insert(r.RemoveAnnotations...)
	}
	return k
}

// reconcileObject brings obj to the state its rules want; nil means it is
// gone, and what is remembered of it is dropped.
func (r *ruleReconciler) reconcileObject(ctx context.Context, key types.NamespacedName, obj *metav1.PartialObjectMetadata) error {
	if obj == nil {
		r.wiring.Brake.Forget(kindLabel(r.GVK), key)
		r.audit.forget(key)
		r.memory.forget(key)
		return nil
	}
	if err := r.frozen(); err != nil {
		logr.FromContextOrDiscard(ctx).V(1).Info("writes frozen: not reconciled", "reason", err.Error())
		return nil // the generation that replaces this one evaluates every object
	}
	if !r.writable(obj) {
		logr.FromContextOrDiscard(ctx).V(1).Info("out of the write scope: not reconciled")
		r.leaveAll(ctx, key, obj, r.mine(obj), config.RefusedNamespace)
		return nil
	}
	src, waits, err := r.awaitSources(ctx, key, obj)
	if err != nil || waits {
		return err
	}
	stale, err := r.decideAndWrite(ctx, key, obj, src)
	if !stale {
		return err
	}
	// The object changed on the server since the version this decision was
	// made on (the precondition failed): decide again on the object as it is
	// now, read from the API server. The cache may never bring a newer
	// version: one that changed only the status is left out before decoding.
	fresh, err := r.readLive(ctx, key)
	if err != nil || fresh == nil || fresh.UID != obj.UID {
		return err // gone or replaced: the watch brings the deletion or the new object
	}
	if src, waits, err = r.awaitSources(ctx, key, fresh); err != nil || waits {
		return err // its owner may have changed with it
	}
	_, err = r.decideAndWrite(ctx, key, fresh, src)
	return err
}

// sourcesOf reads from the cache what obj's copy rules copy from: its
// Namespace and its chain of owners. missing names the source that is not
// cached yet (see waiters), "" when none is.
func (r *ruleReconciler) sourcesOf(ctx context.Context, obj *metav1.PartialObjectMetadata) (src rules.Sources, missing string, err error) {
	ns, cached, err := r.namespaceOf(ctx, obj)
	if err != nil || !cached {
		return src, namespaceSource(obj.Namespace), err
	}
	owners, uid, err := r.ownersOf(ctx, obj)
	if err != nil || uid != "" {
		return src, ownerSource(uid), err
	}
	return rules.Sources{Namespace: ns, Owners: owners}, "", nil
}

// awaitSources returns obj's sources, or reports that obj waits, unqueued,
// for one that is not cached yet: its arrival judges obj (reevaluate).
func (r *ruleReconciler) awaitSources(ctx context.Context, key types.NamespacedName, obj *metav1.PartialObjectMetadata) (src rules.Sources, waits bool, err error) {
	// Each round either finds every source or waits for the one missing; a
	// source that arrives between the two reads moves on to the next one
	// (the Namespace, then each owner up the chain).
	for range maxOwnerDepth + 2 {
		src, missing, err := r.sourcesOf(ctx, obj)
		if err != nil {
			return src, false, err
		}
		if missing == "" {
			r.memory.waiting.forget(key) // it may have waited for a source it no longer has (orphaned)
			return src, false, nil
		}
		moved := false
		waits := r.memory.waiting.waitUnless(missing, key, func() bool {
			var now string
			src, now, err = r.sourcesOf(ctx, obj)
			moved = now != missing
			return moved || err != nil
		})
		switch {
		case waits:
			logr.FromContextOrDiscard(ctx).V(1).Info("waiting for a source to reach the cache", "source", missing)
			return src, true, nil
		case err != nil:
			return src, false, err
		}
	}
	return src, false, fmt.Errorf("the sources of %s kept changing while read; retrying", key)
}

// readLive reads the object named key from the API server, nil if it is
// gone: a metadata LIST of its namespace with a metadata.name field
// selector, not a GET, because metawatch's RBAC grants list and watch on the
// kinds it watches (the chart's ClusterRole), not get.
func (r *ruleReconciler) readLive(ctx context.Context, key types.NamespacedName) (*metav1.PartialObjectMetadata, error) {
	list := metacache.NewList(r.GVK)
	if err := r.live.List(ctx, list, client.InNamespace(key.Namespace), client.MatchingFields{"metadata.name": key.Name}); err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	obj := &list.Items[0]
	obj.SetGroupVersionKind(r.GVK) // Events need the kind of what they regard
	return obj, nil
}

// decideAndWrite evaluates the rules on obj and writes what differs: removes
// first, then the keys metawatch owns, each with obj's newest resourceVersion
// as a precondition (the apply with the one the remove left). A remove that
// fails does not keep the other keys from being written. stale reports that a
// precondition failed: obj is not the object as it is now.
func (r *ruleReconciler) decideAndWrite(ctx context.Context, key types.NamespacedName, obj *metav1.PartialObjectMetadata, src rules.Sources) (stale bool, err error) {
	result := rules.Evaluate(r.Rules, rules.Metadata{Labels: obj.Labels, Annotations: obj.Annotations}, src)
	r.audit.observe(key, obj.UID, result.Violations)
	mine := r.mine(obj) // once: every step below decides on the same keys
	if !r.kindWritable {
		// Audit rules alone: nothing is written, not even a release of a
		// key metawatch set while the kind was writable.
		r.leaveAll(ctx, key, obj, mine, config.RefusedKind)
		return false, nil
	}
	// Keys the old field manager owns are taken over first, values unchanged;
	// then the rules decide on the object as it is after that.
	if adopted, err := r.adopt(ctx, obj, mine, r.newestVersion(obj)); adopted || err != nil {
		return adopted || authority.Classify(err) == authority.Stale, err
	}
	result, fightsUntil := r.withoutFights(obj, mine, result)
	result = r.guard(ctx, key, obj, mine, result)
	result = r.braked(ctx, key, obj, mine, result)
	rv, removeErr := r.remove(ctx, obj, r.newestVersion(obj), result)
	if authority.Classify(removeErr) == authority.Stale {
		return true, removeErr
	}
	held, applyErr := r.apply(ctx, obj, mine, rv, result)
	if applyErr == nil {
		r.audit.observeHeld(key, obj.UID, held)
	}
	if err := errors.Join(removeErr, applyErr); err != nil || fightsUntil.IsZero() {
		return authority.Classify(applyErr) == authority.Stale, err
	}
	return false, &triedLater{in: time.Until(fightsUntil)}
}

// newestVersion is the resourceVersion of obj's precondition: the newest the
// API server sent of it (see ResourceVersions).
func (r *ruleReconciler) newestVersion(obj *metav1.PartialObjectMetadata) string {
	if r.wiring.Versions == nil {
		return obj.ResourceVersion
	}
	return r.wiring.Versions.Newest(obj.UID, obj.ResourceVersion)
}

// namespaceOf returns the object's namespace metadata from the cache, when a
// rule copies from it (nil otherwise, and for cluster-scoped objects): read
// without a copy (the rules only read it), so that event handlers can call it
// too (ruleReconciler.settled). cached is false when a rule needs the
// Namespace and the cache does not hold it (yet): see waiters.
func (r *ruleReconciler) namespaceOf(ctx context.Context, obj *metav1.PartialObjectMetadata) (ns *rules.Metadata, cached bool, err error) {
	if obj.Namespace == "" || !rules.Copies(r.Rules) {
		return nil, true, nil
	}
	nsObj := metacache.NewObject(namespaceGVK)
	if err := r.Reader.Get(ctx, types.NamespacedName{Name: obj.Namespace}, nsObj, client.UnsafeDisableDeepCopy); err != nil {
		// Not found, or the Namespace informer not started yet (a controller
		// starts its sources in parallel): not cached yet, either way.
		if notCached := (&cache.ErrResourceNotCached{}); apierrors.IsNotFound(err) || errors.As(err, &notCached) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return &rules.Metadata{Labels: nsObj.Labels, Annotations: nsObj.Annotations}, true, nil
}

// noteTakenKeys is called on every update event: keys another manager took
// from metawatch (a hand edit: kubectl label --overwrite, kubectl edit; or
// another controller) are put back, unless that keeps happening (takeovers).
func (r *ruleReconciler) noteTakenKeys(oldObj, newObj metav1.Object) {
	taken := takenBy(oldObj, newObj, r.settings.Identity.FieldManager)
	if taken.Empty() {
		return
	}
	key := types.NamespacedName{Namespace: newObj.GetNamespace(), Name: newObj.GetName()}
	r.memory.reclaims.add(key, taken)
	for k := range taken.Labels {
		r.memory.takeovers.add(key, config.Labels, k)
	}
	for k := range taken.Annotations {
		r.memory.takeovers.add(key, config.Annotations, k)
	}
}

// frozen says why this kind's writes are frozen, or nil (see Wiring.WritesFrozen).
func (r *ruleReconciler) frozen() error {
	if r.wiring.WritesFrozen == nil {
		return nil
	}
	return r.wiring.WritesFrozen(r.GVK.GroupKind())
}

// writable reports whether obj is in the write scope.
func (r *ruleReconciler) writable(obj metav1.Object) bool {
	if r.wiring.InScope == nil {
		return true
	}
	if r.GVK == namespaceGVK {
		return r.wiring.InScope(obj.GetName())
	}
	return r.wiring.InScope(obj.GetNamespace())
}

func kindLabel(gvk schema.GroupVersionKind) string { return gvk.GroupKind().String() }

// listOptions is opts and noCopy as list options.
func listOptions(noCopy []client.UnsafeDisableDeepCopyOption, opts ...client.ListOption) []client.ListOption {
	for _, o := range noCopy {
		opts = append(opts, o)
	}
	return opts
}

// getOptions is noCopy as get options.
func getOptions(noCopy []client.UnsafeDisableDeepCopyOption) []client.GetOption {
	var opts []client.GetOption
	for _, o := range noCopy {
		opts = append(opts, o)
	}
	return opts
}
