package controller

import (
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/engine"
)

// Options tune every controller.
type Options struct {
	MaxConcurrentReconciles int
}

// SetupReporters adds one Reporter controller per watch to mgr. Each is named
// after its kind (e.g. "pod", "deployment.apps"), the controller label of
// controller-runtime's reconcile and workqueue metrics.
func SetupReporters(mgr manager.Manager, watches []config.ResolvedWatch, opts Options) error {
	for _, w := range watches {
		if err := setupReporter(mgr, w, opts); err != nil {
			return fmt.Errorf("%s: setting up controller for %s: %w", w.Path, w.GVK.Kind, err)
		}
	}
	return nil
}

func setupReporter(mgr manager.Manager, w config.ResolvedWatch, opts Options) error {
	kind := w.GVK.GroupKind().String()
	reporter := NewReporter(mgr.GetCache(), w.GVK)
	c, err := controller.New(ControllerName(w), mgr, controller.Options{
		Reconciler:              reporter,
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
	})
	if err != nil {
		return err
	}
	return c.Watch(source.Kind[client.Object](mgr.GetCache(), engine.NewObject(w.GVK), enqueueWithSnapshot(reporter.pending), MetadataChanged(kind)))
}

// ControllerName is the name of the controller for w's kind.
func ControllerName(w config.ResolvedWatch) string {
	return strings.ToLower(w.GVK.GroupKind().String())
}
