package variant

import (
	"context"
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

func metadataInformer() Variant {
	return Variant{Name: "metadatainformer", Description: "hand-written client-go metadatainformer controller, workqueue, enqueues every changed resourceVersion",
		Start: startInformer}
}

// informerController is the sample-controller pattern on metadata informers.
type informerController struct {
	client    metadata.Interface
	pods, nss informers.GenericInformer
	queue     workqueue.TypedRateLimitingInterface[types.NamespacedName]
	spec      Spec
	counters  *Counters
}

func startInformer(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters) (*Running, error) {
	client, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	factory := metadatainformer.NewFilteredSharedInformerFactory(client, 0, metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.LabelSelector = spec.Selector })
	c := &informerController{
		client: client, pods: factory.ForResource(podsGVR), nss: factory.ForResource(namespaceGVR), spec: spec, counters: counters,
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]()),
	}
	if err := c.addHandlers(); err != nil {
		return nil, err
	}
	return &Running{
		Run:        func() { factory.Start(ctx.Done()); go c.run(ctx) },
		WaitSynced: func(ctx context.Context) error { return waitFactory(ctx, factory) },
		CachedPods: func(context.Context) (int, error) { return len(c.pods.Informer().GetStore().ListKeys()), nil },
	}, nil
}

func (c *informerController) addHandlers() error {
	_, err := c.pods.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.counters.Events.Add(1); c.enqueue(obj) },
		UpdateFunc: func(old, obj any) { c.counters.Events.Add(1); c.enqueueChanged(old, obj) },
		DeleteFunc: func(any) { c.counters.Events.Add(1) },
	})
	if err != nil {
		return err
	}
	_, err = c.nss.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.counters.Events.Add(1) },
		UpdateFunc: func(old, obj any) { c.counters.Events.Add(1); c.enqueueNamespace(old, obj) },
		DeleteFunc: func(any) { c.counters.Events.Add(1) },
	})
	return err
}

func (c *informerController) enqueue(obj any) {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		c.queue.Add(types.NamespacedName{Namespace: m.Namespace, Name: m.Name})
	}
}

// enqueueChanged skips resyncs (same resourceVersion), as sample-controller does.
func (c *informerController) enqueueChanged(old, obj any) {
	if old.(*metav1.PartialObjectMetadata).ResourceVersion != obj.(*metav1.PartialObjectMetadata).ResourceVersion {
		c.enqueue(obj)
	}
}

// enqueueNamespace enqueues a namespace's pods when its labels change.
func (c *informerController) enqueueNamespace(old, obj any) {
	ns := obj.(*metav1.PartialObjectMetadata)
	if maps.Equal(old.(*metav1.PartialObjectMetadata).Labels, ns.Labels) {
		return
	}
	pods, err := c.pods.Lister().ByNamespace(ns.Name).List(labels.Everything())
	if err != nil {
		return
	}
	for _, pod := range pods {
		c.enqueue(pod)
	}
}

func (c *informerController) run(ctx context.Context) {
	defer c.queue.ShutDown()
	if !toolscache.WaitForCacheSync(ctx.Done(), c.pods.Informer().HasSynced, c.nss.Informer().HasSynced) {
		return
	}
	for range c.spec.Concurrency {
		go func() {
			for c.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
}

func (c *informerController) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.reconcile(ctx, key); err != nil {
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

func (c *informerController) reconcile(ctx context.Context, key types.NamespacedName) error {
	c.counters.reconciles.Add(1)
	pod, err := c.pods.Lister().ByNamespace(key.Namespace).Get(key.Name)
	if err != nil {
		return nil //nolint:nilerr // deleted since it was queued
	}
	ns, err := c.nss.Lister().Get(key.Namespace)
	if err != nil {
		return nil //nolint:nilerr // deleted since it was queued
	}
	value, write := needsWrite(c.spec, pod.(*metav1.PartialObjectMetadata).Labels, ns.(*metav1.PartialObjectMetadata).Labels)
	if !write {
		return nil
	}
	_, err = c.client.Resource(podsGVR).Namespace(key.Namespace).Patch(ctx, key.Name, types.ApplyPatchType,
		ApplyBody(c.spec.Label, key.Namespace, key.Name, value), metav1.PatchOptions{FieldManager: fieldManager})
	return err
}

func waitFactory(ctx context.Context, factory metadatainformer.SharedInformerFactory) error {
	for gvr, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("%s did not sync: %w", gvr.Resource, context.Cause(ctx))
		}
	}
	return nil
}
