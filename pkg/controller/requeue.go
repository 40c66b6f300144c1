package controller

import (
	"context"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/sharding"
)

// requeueGained queues, when buckets come to this replica, the cached
// objects of kind gvk in them. A sharded replica caches some kinds whole
// (cluster-scoped kinds, and the kinds on copyFromOwner's chains) where it
// caches the others by share: a bucket that comes lists the objects of the
// others again, which queues them, but not these. A write to one of them
// that the bucket's former holder had not made yet (it died, or left) would
// otherwise wait for the object's next change; writes refused before the
// bucket came are dropped, not retried (errNotOurs), so nothing else queues
// them. Most are settled and cost a cache read.
func requeueGained(mgr manager.Manager, c ctrlcontroller.Controller, gvk schema.GroupVersionKind, packed bool, gained func(func([]sharding.Bucket)) func()) error {
	events := make(chan event.GenericEvent)
	if err := c.Watch(source.Channel(events, &handler.EnqueueRequestForObject{})); err != nil {
		return err
	}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		remove := gained(func(buckets []sharding.Bucket) {
			go queueBuckets(ctx, mgr.GetCache(), gvk, packed, buckets, events) // the Ring's goroutine must not wait for the queue
		})
		<-ctx.Done()
		remove()
		return nil
	}))
}

// queueBuckets queues the objects of buckets. The list is not copied where
// the cache stores objects as they are; a packed kind's list is (see
// ruleReconciler.noCopy).
func queueBuckets(ctx context.Context, reader client.Reader, gvk schema.GroupVersionKind, packed bool, buckets []sharding.Bucket, events chan<- event.GenericEvent) {
	in := map[sharding.Bucket]bool{}
	for _, b := range buckets {
		in[b] = true
	}
	list := metacache.NewList(gvk)
	if err := reader.List(ctx, list, listOptions(noCopyUnless(packed))...); err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "listing the objects of the buckets that came", "kind", gvk.Kind)
		return
	}
	for i := range list.Items {
		obj := &list.Items[i]
		if !in[sharding.BucketOf(obj.UID)] {
			continue
		}
		key := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: obj.Namespace, Name: obj.Name}} // the handler reads only the key
		select {
		case events <- event.GenericEvent{Object: key}:
		case <-ctx.Done():
			return
		}
	}
}
