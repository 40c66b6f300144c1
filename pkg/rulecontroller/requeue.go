package rulecontroller

import (
	"context"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/rules"
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
//
// Each of gained registers a function told of buckets that come: those
// desired (for writes), those held (for audits).
func requeueGained(mgr manager.Manager, c controller.Controller, gvk schema.GroupVersionKind, packed bool, gained ...func(func([]sharding.Bucket)) func()) error {
	events := make(chan event.GenericEvent)
	queueLow := handler.Funcs{GenericFunc: func(_ context.Context, e event.GenericEvent, q queue) { addFanout(q, requestFor(e.Object)) }}
	if err := c.Watch(source.Channel(events, queueLow)); err != nil {
		return err
	}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		removes := make([]func(), 0, len(gained))
		for _, g := range gained {
			removes = append(removes, g(func(buckets []sharding.Bucket) {
				go queueBuckets(ctx, mgr.GetCache(), gvk, packed, buckets, events) // the Ring's goroutine must not wait for the queue
			}))
		}
		<-ctx.Done()
		for _, remove := range removes {
			remove()
		}
		return nil
	}))
}

// requeueOnMoves queues the objects of w's kind, whose rules are rs, when
// buckets come to this replica: a kind cached whole when they become its
// own (see requeueGained), a kind with require rules when it holds them,
// for only a bucket's holder audits its objects (see Holder), and those of
// a kind cached by share reach the cache before their bucket is held.
func requeueOnMoves(mgr manager.Manager, c controller.Controller, w config.ResolvedWatch, rs []rules.Rule, share Share) error {
	var gained []func(func([]sharding.Bucket)) func()
	if w.Owner || !w.Namespaced {
		gained = append(gained, share.OnGained)
	}
	if rules.Requires(rs) {
		gained = append(gained, share.OnHeldGained)
	}
	if len(gained) == 0 {
		return nil
	}
	return requeueGained(mgr, c, w.GVK, metacache.Packed(w), gained...)
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
