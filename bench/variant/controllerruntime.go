package variant

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/metawatch/metawatch/pkg/metacache"
)

// objects makes the objects a controller-runtime variant reads: typed, or metadata-only.
type objects struct {
	pod, namespace func() client.Object
	podList        func() client.ObjectList
	// The builder is given typed objects, as in controller-runtime's docs.
	forOptions   []builder.ForOption
	watchOptions []builder.WatchesOption
}

func typed() Variant {
	objs := objects{
		pod:       func() client.Object { return &corev1.Pod{} },
		namespace: func() client.Object { return &corev1.Namespace{} },
		podList:   func() client.ObjectList { return &corev1.PodList{} },
	}
	return Variant{Name: "typed", Description: "controller-runtime controller on typed corev1.Pod, no predicates (what most teams write)",
		Start: startControllerRuntime(objs)}
}

// typedCache is the reference for what a typed cache holds: controller-runtime's
// cache of corev1.Pod as a stock user gets it, and nothing else.
func typedCache() Variant {
	return Variant{Name: "typed-cache", CacheOnly: true,
		Description: "cache only: stock controller-runtime typed corev1.Pod cache, no controller (what a typed informer holds)",
		Start: func(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters) (*Running, error) {
			return startCache(ctx, cfg, spec, counters, cache.Options{}, &corev1.Pod{})
		}}
}

func metadataOnly() Variant {
	objs := objects{
		pod:          func() client.Object { return metacache.NewObject(podGVK) },
		namespace:    func() client.Object { return metacache.NewObject(namespaceGVK) },
		podList:      func() client.ObjectList { return metacache.NewList(podGVK) },
		forOptions:   []builder.ForOption{builder.OnlyMetadata},
		watchOptions: []builder.WatchesOption{builder.OnlyMetadata},
	}
	return Variant{Name: "metadata", Description: "stock controller-runtime metadata-only (builder.OnlyMetadata), no transforms, no predicates",
		Start: startControllerRuntime(objs)}
}

func startControllerRuntime(objs objects) func(context.Context, *rest.Config, Spec, *Counters) (*Running, error) {
	return func(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters) (*Running, error) {
		mgr, err := newManager(cfg, spec)
		if err != nil {
			return nil, err
		}
		r := &crReconciler{client: mgr.GetClient(), objs: objs, spec: spec, counters: counters}
		err = builder.ControllerManagedBy(mgr).For(&corev1.Pod{}, objs.forOptions...).
			Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.podsOf), objs.watchOptions...).
			WithOptions(controller.Options{MaxConcurrentReconciles: spec.Concurrency}).Complete(r)
		if err != nil {
			return nil, err
		}
		return startCounted(ctx, mgr.GetCache(), mgr.Start, counters, objs.pod(), objs.namespace())
	}
}

func newManager(cfg *rest.Config, spec Spec) (manager.Manager, error) {
	selector, err := labels.Parse(spec.Selector)
	if err != nil {
		return nil, err
	}
	return manager.New(cfg, manager.Options{
		Cache:   cache.Options{DefaultLabelSelector: selector},
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
}

type crReconciler struct {
	client   client.Client
	objs     objects
	spec     Spec
	counters *Counters
}

func (r *crReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.counters.reconciles.Add(1)
	pod, namespace := r.objs.pod(), r.objs.namespace()
	if err := r.client.Get(ctx, req.NamespacedName, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if err := r.client.Get(ctx, client.ObjectKey{Name: req.Namespace}, namespace); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	value, write := needsWrite(r.spec, pod.GetLabels(), namespace.GetLabels())
	if !write {
		return reconcile.Result{}, nil
	}
	patch := client.RawPatch(types.ApplyPatchType, ApplyBody(r.spec.Label, pod.GetNamespace(), pod.GetName(), value))
	return reconcile.Result{}, r.client.Patch(ctx, pod, patch, client.FieldOwner(fieldManager))
}

// podsOf is every cached pod of a namespace, as the usual map function writes it.
func (r *crReconciler) podsOf(ctx context.Context, namespace client.Object) []reconcile.Request {
	list := r.objs.podList()
	if err := r.client.List(ctx, list, client.InNamespace(namespace.GetName())); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	_ = metaEach(list, func(obj metav1.Object) {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}})
	})
	return reqs
}

func countEvents(counters *Counters) toolscache.ResourceEventHandler {
	count := func() { counters.Events.Add(1) }
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { count() },
		UpdateFunc: func(any, any) { count() },
		DeleteFunc: func(any) { count() },
	}
}
