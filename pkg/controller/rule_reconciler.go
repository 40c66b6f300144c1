package controller

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/engine"
	"github.com/metawatch/metawatch/pkg/rules"
)

// RuleReconciler keeps the labels and annotations of one kind's objects the
// way its rules want: given the object read from the cache (and its namespace, read here),
// asks the pure rules core what it should look like, and writes only what
// differs. Set and copy actions are server-side applied by field manager
// "metawatch"; remove actions are merge patches with a resourceVersion
// precondition; require actions are audited.
type RuleReconciler struct {
	Reader   client.Reader // the cache
	Writer   client.Writer // the API server
	Recorder events.EventRecorder
	GVK      schema.GroupVersionKind
	Rules    []rules.Rule
	DryRun   bool

	audit    *audit
	reclaims *reclaims
	yielded  *yielded
}

// NewRuleReconciler returns a RuleReconciler for kind gvk.
func NewRuleReconciler(reader client.Reader, writer client.Writer, recorder events.EventRecorder, gvk schema.GroupVersionKind, rs []rules.Rule, dryRun bool) *RuleReconciler {
	return &RuleReconciler{
		Reader: reader, Writer: writer, Recorder: recorder, GVK: gvk, Rules: rs, DryRun: dryRun,
		audit: newAudit(kindLabel(gvk), recorder), reclaims: newReclaims(), yielded: newYielded(),
	}
}

// reconcileObject brings obj to the state its rules want; nil means it is
// gone, and what is remembered of it is dropped.
func (r *RuleReconciler) reconcileObject(ctx context.Context, key types.NamespacedName, obj *metav1.PartialObjectMetadata) error {
	if obj == nil {
		r.audit.forget(key)
		r.reclaims.clear(key)
		r.yielded.forget(key)
		return nil
	}
	ns, err := r.namespaceOf(ctx, obj)
	if err != nil {
		return err
	}
	result := rules.Evaluate(r.Rules, rules.Metadata{Labels: obj.Labels, Annotations: obj.Annotations}, ns)
	r.audit.observe(key, obj, result.Violations)
	// Remove first: its precondition is the cached resourceVersion, which an apply would change.
	if err := r.remove(ctx, obj, result); err != nil {
		return err
	}
	return r.apply(ctx, obj, result)
}

// namespaceOf returns the object's namespace metadata from the cache, when a
// rule copies from it: read without a copy (the rules only read it), so that
// event handlers can call it too (RuleReconciler.settled).
func (r *RuleReconciler) namespaceOf(ctx context.Context, obj *metav1.PartialObjectMetadata) (*rules.Metadata, error) {
	if obj.Namespace == "" || !rules.Copies(r.Rules) {
		return nil, nil
	}
	ns := engine.NewObject(namespaceGVK)
	if err := r.Reader.Get(ctx, types.NamespacedName{Name: obj.Namespace}, ns, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil // being deleted; its objects go with it
		}
		return nil, err
	}
	return &rules.Metadata{Labels: ns.Labels, Annotations: ns.Annotations}, nil
}

// noteLostOwnership is called on every update event: keys metawatch owned
// before and not after were taken by another manager's Update (a hand edit).
func (r *RuleReconciler) noteLostOwnership(oldObj, newObj metav1.Object) {
	lost := ownedKeys(oldObj).lost(ownedKeys(newObj))
	if !lost.empty() {
		r.reclaims.add(types.NamespacedName{Namespace: newObj.GetNamespace(), Name: newObj.GetName()}, lost)
	}
}

func kindLabel(gvk schema.GroupVersionKind) string { return gvk.GroupKind().String() }
