package scenario

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
)

// Observer watches the pods of one namespace (or of every namespace) and
// the value of one label on them.
type Observer struct {
	label string
	// everyNamespace: pods are keyed namespace/name, not by name alone.
	everyNamespace bool

	mu        sync.Mutex
	values    map[string]string    // pod key → its label value
	want      string               // the value the rule should write
	wanted    int                  // pods whose value is want
	arrivals  []time.Time          // when each pod came to carry want, since expect
	pending   map[string]time.Time // pod name → when its label change was sent
	latencies []time.Duration

	// statusUpdates counts updates that changed neither labels nor
	// annotations: status writes, whoever made them (the churn, kwok).
	statusUpdates atomic.Int64
	// stallAfter is how long waitAll waits with no pod coming to carry the
	// value before it gives up: far less than its timeout, which is sized
	// for the slowest writer at the largest size.
	stallAfter time.Duration
}

// stallAfter is the Observer's: no writer measured here goes five minutes
// without one pod changing, while it still has pods to change.
const stallAfter = 5 * time.Minute

// Observe starts an Observer of label on the pods of namespace matching
// selector; namespace "" (metav1.NamespaceAll) observes every namespace, and
// keys the pods namespace/name.
func Observe(ctx context.Context, cfg *rest.Config, namespace, selector, label string) (*Observer, error) {
	client, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	o := newObserver(label, namespace == metav1.NamespaceAll)
	factory := metadatainformer.NewFilteredSharedInformerFactory(client, 0, namespace, func(lo *metav1.ListOptions) { lo.LabelSelector = selector })
	informer := factory.ForResource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Informer()
	// The harness holds every observed pod: without the managedFields (most
	// of a pod's metadata) 100k of them are tens of MiB, not hundreds.
	if err := informer.SetTransform(dropManagedFields); err != nil {
		return nil, err
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: o.see, UpdateFunc: o.update, DeleteFunc: o.forget,
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil, fmt.Errorf("observer of %s did not sync", namespace)
	}
	return o, nil
}

func newObserver(label string, everyNamespace bool) *Observer {
	return &Observer{label: label, everyNamespace: everyNamespace, values: map[string]string{}, pending: map[string]time.Time{}, stallAfter: stallAfter}
}

func (o *Observer) update(old, obj any) {
	o.see(obj)
	before, ok1 := old.(*metav1.PartialObjectMetadata)
	after, ok2 := obj.(*metav1.PartialObjectMetadata)
	if ok1 && ok2 && before.ResourceVersion != after.ResourceVersion &&
		maps.Equal(before.Labels, after.Labels) && maps.Equal(before.Annotations, after.Annotations) {
		o.statusUpdates.Add(1)
	}
}

// dropManagedFields is the observer's informer transform.
func dropManagedFields(obj any) (any, error) {
	if pod, ok := obj.(*metav1.PartialObjectMetadata); ok {
		pod.ManagedFields, pod.OwnerReferences = nil, nil
	}
	return obj, nil
}

// key is how the Observer names pod.
func (o *Observer) key(pod *metav1.PartialObjectMetadata) string {
	if o.everyNamespace {
		return pod.Namespace + "/" + pod.Name
	}
	return pod.Name
}

// forget drops a deleted pod: a pod that is gone is not waited for.
func (o *Observer) forget(obj any) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	pod, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	key := o.key(pod)
	o.mu.Lock()
	defer o.mu.Unlock()
	if value, known := o.values[key]; known && value == o.want {
		o.wanted--
	}
	delete(o.values, key)
	delete(o.pending, key)
}

func (o *Observer) see(obj any) {
	pod, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	key := o.key(pod)
	o.mu.Lock()
	defer o.mu.Unlock()
	value := pod.Labels[o.label]
	before, known := o.values[key]
	o.values[key] = value
	if value == o.want && (!known || before != o.want) {
		o.wanted++
		o.arrivals = append(o.arrivals, time.Now())
	} else if known && before == o.want && value != o.want {
		o.wanted--
	}
	if sent, ok := o.pending[key]; ok && value == o.want {
		o.latencies = append(o.latencies, time.Since(sent))
		delete(o.pending, key)
	}
}

// Pods are the names of the observed pods (namespace/name when the observer
// watches every namespace).
func (o *Observer) Pods() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	names := make([]string, 0, len(o.values))
	for name := range o.values {
		names = append(names, name)
	}
	return names
}

// StatusUpdates is the number of updates seen so far that changed neither
// labels nor annotations: status writes, whoever made them.
func (o *Observer) StatusUpdates() int { return int(o.statusUpdates.Load()) }

// expect sets the value the rule writes from now on, and forgets the
// arrivals of the one before.
func (o *Observer) expect(value string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.want, o.wanted, o.arrivals = value, 0, nil
	for _, v := range o.values {
		if v == value {
			o.wanted++
		}
	}
}

// arrivalTimes are when each pod came to carry the expected value since expect.
func (o *Observer) arrivalTimes() []time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.arrivals)
}

// notCarrying are the keys of the pods whose label does not have value.
func (o *Observer) notCarrying(value string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var keys []string
	for key, v := range o.values {
		if v != value {
			keys = append(keys, key)
		}
	}
	return keys
}

// carryingLocked is the number of pods whose label has value, o.mu held:
// counted as events arrive for the expected value (a poll over 100k pods
// every 20 ms would be the harness's CPU taken from the API server), else
// counted now.
func (o *Observer) carryingLocked(value string) int {
	if value == o.want {
		return o.wanted
	}
	n := 0
	for _, v := range o.values {
		if v == value {
			n++
		}
	}
	return n
}

// count is the number of pods the Observer holds.
func (o *Observer) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.values)
}

// progress is how many pods carry value, and how many there are, read
// together: a pod deleted between two readings cannot make the wait end
// early, and no poll copies every key.
func (o *Observer) progress(value string) (carrying, total int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.carryingLocked(value), len(o.values)
}

// WaitPods waits until the Observer holds at least n pods, for up to
// timeout. Right after the etcd seeding, the informer is still being handed
// the new pods; a writer that took the Observer's list then would miss them.
func (o *Observer) WaitPods(ctx context.Context, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for o.count() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("the observer holds %d pods after %s, want %d", o.count(), timeout, n)
		}
		if err := Sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// waitAll polls until all observed pods carry value, for up to timeout, or
// until no pod has come to carry it for stallAfter. Its error names a few
// of the pods still without it.
func (o *Observer) waitAll(ctx context.Context, value string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last, progressed := -1, time.Now()
	for {
		now, total := o.progress(value)
		if now >= total {
			return nil
		}
		if now != last {
			last, progressed = now, time.Now()
		}
		switch {
		case time.Now().After(deadline):
			return o.notAll(value, fmt.Sprintf("after %s", timeout))
		case time.Since(progressed) > o.stallAfter:
			return o.notAll(value, fmt.Sprintf("and none came to carry it in the last %s", o.stallAfter))
		}
		if err := Sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

// notAll is waitAll's error: how many pods carry value, and some that do not.
func (o *Observer) notAll(value, why string) error {
	missing := o.notCarrying(value)
	slices.Sort(missing)
	carrying, total := o.progress(value)
	return fmt.Errorf("%d of %d pods carry %s=%s %s; without it: %s", carrying, total, o.label, value, why,
		strings.Join(missing[:min(len(missing), 5)], ", "))
}

// Sleep waits d, or until ctx is done (then its error).
func Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// track records that pod's label was changed now, unless a change of it is pending.
func (o *Observer) track(pod string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, busy := o.pending[pod]; busy {
		return false
	}
	o.pending[pod] = time.Now()
	return true
}

// untrackOnError forgets pod's pending change if sending it failed with err.
func (o *Observer) untrackOnError(pod string, err error) error {
	if err != nil {
		o.mu.Lock()
		delete(o.pending, pod)
		o.mu.Unlock()
	}
	return err
}

// drain waits up to timeout for pending changes to be undone, then returns
// the latencies and how many are still pending, and forgets both.
func (o *Observer) drain(ctx context.Context, timeout time.Duration) (latencies []time.Duration, missed int) {
	deadline := time.Now().Add(timeout)
	for o.pendingCount() > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	latencies, missed = o.latencies, len(o.pending)
	o.latencies, o.pending = nil, map[string]time.Time{}
	return latencies, missed
}

func (o *Observer) pendingCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.pending)
}
