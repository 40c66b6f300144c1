package rulecontroller

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/rules"
)

// maxOwnerDepth bounds a walk up the controlling owners; the preview stops
// where the controller does (config.MaxOwnerDepth says why 4).
const maxOwnerDepth = config.MaxOwnerDepth

// ownerKinds are the kinds cached for copyFromOwner (config.ResolvedWatch.Owner),
// by group and kind, as an ownerReference names them.
type ownerKinds map[schema.GroupKind]schema.GroupVersionKind

func ownerKindsOf(watches []config.ResolvedWatch) ownerKinds {
	kinds := ownerKinds{}
	for _, w := range watches {
		if w.Owner {
			kinds[w.GVK.GroupKind()] = w.GVK
		}
	}
	return kinds
}

// of is the cached kind ref names, if it is one.
func (k ownerKinds) of(ref *metav1.OwnerReference) (schema.GroupVersionKind, bool) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return schema.GroupVersionKind{}, false
	}
	gvk, ok := k[schema.GroupKind{Group: gv.Group, Kind: ref.Kind}]
	return gvk, ok
}

// ownersOf walks obj's controlling owners up through the cache, nearest
// first, while they are of the cached owner kinds. missing is the uid of an
// owner on the way that is not cached (yet): the walk stops there, and obj
// waits for it.
func (r *ruleReconciler) ownersOf(ctx context.Context, obj metav1.Object) (owners []rules.Owner, missing types.UID, err error) {
	if !r.copiesFromOwners {
		return nil, "", nil
	}
	ref := metav1.GetControllerOfNoCopy(obj)
	for depth := 0; ref != nil && depth < maxOwnerDepth; depth++ {
		gvk, ok := r.ownerKinds.of(ref)
		if !ok {
			break // an owner metawatch does not follow: the chain ends here
		}
		owner := metacache.NewObject(gvk)
		err := r.Reader.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}, owner, client.UnsafeDisableDeepCopy)
		if notCached := (&cache.ErrResourceNotCached{}); apierrors.IsNotFound(err) || errors.As(err, &notCached) || err == nil && owner.UID != ref.UID {
			return nil, ref.UID, nil // not here yet, or the name is another's now: wait for ours
		}
		if err != nil {
			return nil, "", fmt.Errorf("reading the owner %s %s: %w", ref.Kind, ref.Name, err)
		}
		owners = append(owners, rules.Owner{Kind: ref.Kind, Metadata: rules.Metadata{Labels: owner.Labels, Annotations: owner.Annotations}})
		ref = metav1.GetControllerOfNoCopy(owner)
	}
	return owners, "", nil
}

// ownerFanout enqueues, when an owner's copied keys or its own controlling
// owner change, the objects of kind gvk below it (through the controller
// index, from the cache), at fanoutPriority; and when an owner reaches the
// cache, the objects that waited for it and are not settled.
func ownerFanout(reader client.Reader, ruler *ruleReconciler) handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			ruler.wake(ctx, ownerSource(e.Object.GetUID()), q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			// A relist delivers an owner deleted and created again under its
			// name as an update: its waiters wait for the new uid.
			if e.ObjectOld.GetUID() != e.ObjectNew.GetUID() {
				ruler.wake(ctx, ownerSource(e.ObjectNew.GetUID()), q)
			}
			err := ruler.descendants(ctx, reader, e.ObjectNew.GetNamespace(), e.ObjectNew.GetUID(), maxOwnerDepth, func(obj *metav1.PartialObjectMetadata) {
				addFanout(q, requestFor(obj))
			})
			if err != nil {
				logr.FromContextOrDiscard(ctx).Error(err, "listing objects to re-evaluate after an owner's change", "owner", client.ObjectKeyFromObject(e.ObjectNew))
			}
		},
	}
}

// descendants calls found for every object of the ruler's kind controlled,
// directly or through owners of the cached kinds, by the owner uid.
func (r *ruleReconciler) descendants(ctx context.Context, reader client.Reader, namespace string, uid types.UID, depth int, found func(*metav1.PartialObjectMetadata)) error {
	if depth == 0 || !r.cachesNamespace(namespace) {
		return nil // none of the kind's objects is cached there
	}
	controlled := func(gvk schema.GroupVersionKind) ([]metav1.PartialObjectMetadata, error) {
		list := metacache.NewList(gvk)
		noCopy := noCopyUnless(false) // owner kinds are never packed
		if gvk == r.GVK {
			noCopy = r.noCopy()
		}
		err := reader.List(ctx, list, listOptions(noCopy, client.InNamespace(namespace), client.MatchingFields{metacache.ControllerIndex: string(uid)})...)
		return list.Items, err
	}
	objs, err := controlled(r.GVK)
	if err != nil {
		return err
	}
	for i := range objs {
		found(&objs[i])
	}
	for _, gvk := range r.ownerKinds {
		if gvk == r.GVK {
			continue // found above
		}
		between, err := controlled(gvk)
		if err != nil {
			return err
		}
		for i := range between {
			if err := r.descendants(ctx, reader, namespace, between[i].UID, depth-1, found); err != nil {
				return err
			}
		}
	}
	return nil
}

// ownerMetadataChanged passes creates (objects may wait for them) and
// updates that change an owner's kept labels or annotations, or its own
// controlling owner; a deleted owner's objects are deleted or orphaned by
// the garbage collector, whose writes bring their own events.
func ownerMetadataChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return true },
		DeleteFunc: func(event.DeleteEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return labelsOrAnnotationsChanged.Update(e) || controllerChanged(e) || e.ObjectOld.GetUID() != e.ObjectNew.GetUID()
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// controllerChanged: the object's controlling owner is another (adopted,
// orphaned, released).
func controllerChanged(e event.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return false
	}
	oldRef, newRef := metav1.GetControllerOfNoCopy(e.ObjectOld), metav1.GetControllerOfNoCopy(e.ObjectNew)
	return (oldRef == nil) != (newRef == nil) || oldRef != nil && oldRef.UID != newRef.UID
}
