package rulecontroller

import (
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// fanoutPriority is the queue priority of the reconciles that one change
// queues for many objects at once: a Namespace or an owner whose copied keys
// changed, a source that reached the cache, buckets that came to this
// replica, and the initial list. It is below that of a new object or of a
// change to an object itself (0), so that a fan-out over 100k objects does
// not delay a new object's labels behind it: controller-runtime's priority
// queue (the default since v0.23) hands out higher priorities first. It is
// the priority controller-runtime gives such events itself
// (handler.WithLowPriorityWhenUnchanged).
const fanoutPriority = handler.LowPriority

// addFanout queues reqs at fanoutPriority (as they are where the queue has no
// priorities).
func addFanout(q queue, reqs ...reconcile.Request) {
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(fanoutPriority)}, reqs...)
		return
	}
	for _, req := range reqs {
		q.Add(req)
	}
}
