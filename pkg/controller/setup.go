package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/engine"
	"github.com/metawatch/metawatch/pkg/rules"
)

// Options tune every controller.
type Options struct {
	MaxConcurrentReconciles int
	// DryRun computes and reports every write, and makes none.
	DryRun bool
	// Gate, when set, holds every reconcile until it is closed: a new
	// generation's controllers fill their queues from its synced cache, but
	// write only once the previous generation has stopped.
	Gate <-chan struct{}
}

// EventSource is the reportingController of metawatch's Events.
const EventSource = "metawatch"

// Setup adds one controller per watch to mgr: it reports label and annotation
// changes and, for a kind that has rules, keeps them. Each controller is named
// after its kind (e.g. "pod", "deployment.apps"), the controller label of
// controller-runtime's reconcile and workqueue metrics.
func Setup(mgr manager.Manager, watches []config.ResolvedWatch, rulesByKind map[string][]rules.Rule, opts Options) error {
	for _, w := range watches {
		if err := setupKind(mgr, w, rulesByKind[w.GVK.Kind], opts); err != nil {
			return fmt.Errorf("%s: setting up controller for %s: %w", w.Path, w.GVK.Kind, err)
		}
	}
	return nil
}

func setupKind(mgr manager.Manager, w config.ResolvedWatch, rs []rules.Rule, opts Options) error {
	reporter := NewReporter(mgr.GetCache(), w.GVK)
	var ruler *RuleReconciler
	steps := chain{gate(opts.Gate), reporter}
	if len(rs) > 0 {
		ruler = NewRuleReconciler(mgr.GetCache(), mgr.GetClient(), mgr.GetEventRecorder(EventSource), w.GVK, rs, opts.DryRun)
		steps = append(steps, ruler)
	}
	c, err := controller.New(ControllerName(w), mgr, controller.Options{
		Reconciler: steps, MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
		// One process runs one controller per kind at a time, but a new generation
		// of controllers (a restart in tests, a reload later) reuses the names.
		SkipNameValidation: ptr.To(true),
	})
	if err != nil {
		return err
	}
	kind := w.GVK.GroupKind().String()
	if err := c.Watch(source.Kind[client.Object](mgr.GetCache(), engine.NewObject(w.GVK), enqueueWithSnapshot(reporter.pending, ruler), MetadataChanged(kind))); err != nil {
		return err
	}
	if ruler == nil || !rules.Copies(rs) {
		return nil
	}
	return c.Watch(source.Kind[client.Object](mgr.GetCache(), engine.NewObject(namespaceGVK), namespaceFanout(mgr.GetCache(), w.GVK, rs), namespaceMetadataChanged()))
}

// ControllerName is the name of the controller for w's kind.
func ControllerName(w config.ResolvedWatch) string {
	return strings.ToLower(w.GVK.GroupKind().String())
}

// gate is a reconcile step that waits until open is closed; a generation being
// shut down before it opened reconciles nothing.
type gate <-chan struct{}

func (g gate) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	if g == nil {
		return reconcile.Result{}, nil
	}
	select {
	case <-g:
		return reconcile.Result{}, nil
	case <-ctx.Done():
		return reconcile.Result{}, errGateClosed
	}
}

// errGateClosed stops the chain of a generation that never opened.
var errGateClosed = errors.New("generation stopped before it was allowed to write")

// chain runs reconcilers in order and stops at the first error.
type chain []reconcile.Reconciler

// No step asks for a timed requeue: they are level-triggered and retried on
// error, so only the error is passed on.
func (c chain) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	for _, r := range c {
		_, err := r.Reconcile(ctx, req)
		if errors.Is(err, errGateClosed) {
			return reconcile.Result{}, nil
		}
		if err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}
