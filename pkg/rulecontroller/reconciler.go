package rulecontroller

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/metacache"
)

// step is one thing a kind's controller does with an object.
type step interface {
	// reconcileObject acts on obj, read once from the cache for every step; nil means gone.
	reconcileObject(ctx context.Context, key types.NamespacedName, obj *metav1.PartialObjectMetadata) error
}

// kindReconciler reads each object once (a cache read is a deep copy) and
// hands it to every step in order, stopping at the first error. With a gate,
// it waits until the gate is closed: a new generation's controllers fill their
// queues from its synced cache, but act only once the previous generation has
// stopped; a generation stopped before its gate opened acts on nothing. No step
// asks for a timed requeue: they are level-triggered and retried on error.
type kindReconciler struct {
	reader client.Reader
	gvk    schema.GroupVersionKind
	gate   <-chan struct{}
	steps  []step
}

// Reconcile brings one object, named by req, to what metawatch wants of it:
//
//  1. Wait for the generation's gate (Wiring.Gate): a new generation fills its
//     queue while the previous one still runs, and writes only after it stopped.
//  2. Read the object from the cache once (nil if it is gone) and hand it to
//     each step in order, stopping at the first error (retried with backoff):
//  3. the reporter (reporter.go) logs which labels and annotations changed
//     since the snapshot the event handler took (memory.go);
//  4. for a kind with rules, the rule reconciler (rule_reconciler.go): forget a
//     deleted object; skip a kind whose writes are frozen or an object outside
//     the write scope; wait for the object's Namespace if a copy rule needs it;
//     evaluate the rules (package rules); audit require rules (audit.go);
//     remove keys by merge patch with a resourceVersion precondition
//     (remove.go); apply owned keys by server-side apply, yielding, reclaiming
//     or forcing keys another manager holds (apply.go, managed_keys.go).
//
// It never asks for a timed requeue: every step is level-triggered.
func (k *kindReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if k.gate != nil {
		select {
		case <-k.gate:
		case <-ctx.Done():
			return reconcile.Result{}, nil
		}
	}
	obj, err := readObject(ctx, k.reader, k.gvk, req.NamespacedName)
	if err != nil {
		return reconcile.Result{}, err
	}
	for _, s := range k.steps {
		err := s.reconcileObject(ctx, req.NamespacedName, obj)
		if later, ok := err.(*triedLater); ok { //nolint:errorlint // only a step's own answer, never one joined to a failure
			// Written but for keys left to a fight: look again when the
			// round ends, as no event will come for them.
			return reconcile.Result{RequeueAfter: later.in}, nil
		}
		if authority.Classify(err) == authority.SendSoon {
			// Its bucket is coming to this replica, its claim lapsed, or the
			// write pace would have held it past its deadline: try again
			// once that may have passed, not with the error backoff (a dead
			// holder's Lease takes its duration; a 429's pause, its
			// Retry-After), which would retry a paused write within
			// milliseconds, and count it failed.
			retry := authority.RetryIn(err)
			logr.FromContextOrDiscard(ctx).V(1).Info("not written for now: tried again later", "in", retry.String(), "why", err.Error())
			return reconcile.Result{RequeueAfter: retry}, nil
		} else if err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}

// readObject reads the object named key of kind gvk from reader (the cache,
// or the API server); nil if it is not there.
func readObject(ctx context.Context, reader client.Reader, gvk schema.GroupVersionKind, key types.NamespacedName) (*metav1.PartialObjectMetadata, error) {
	obj := metacache.NewObject(gvk)
	switch err := reader.Get(ctx, key, obj); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	obj.SetGroupVersionKind(gvk) // Events need the kind of what they regard
	return obj, nil
}

// triedLater is a step's answer when it wrote what it could and left keys
// that it tries again in in (a fight's round): not a failure.
type triedLater struct{ in time.Duration }

func (t *triedLater) Error() string {
	return "keys left to a fight are tried again in " + t.in.String()
}
