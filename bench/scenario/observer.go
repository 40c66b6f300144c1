package scenario

import (
	"context"
	"fmt"
	"maps"
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

// Observer watches the pods of one namespace and the value of one label on them.
type Observer struct {
	label string

	mu        sync.Mutex
	values    map[string]string    // pod name → its label value
	want      string               // the value the rule should write
	pending   map[string]time.Time // pod name → when its label change was sent
	latencies []time.Duration

	// statusUpdates counts updates that changed neither labels nor
	// annotations: status writes, whoever made them (the churn, kwok).
	statusUpdates atomic.Int64
}

// Observe starts an Observer of label on the pods of namespace matching selector.
func Observe(ctx context.Context, cfg *rest.Config, namespace, selector, label string) (*Observer, error) {
	client, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	o := &Observer{label: label, values: map[string]string{}, pending: map[string]time.Time{}}
	factory := metadatainformer.NewFilteredSharedInformerFactory(client, 0, namespace, func(lo *metav1.ListOptions) { lo.LabelSelector = selector })
	informer := factory.ForResource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Informer()
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: o.see, UpdateFunc: o.update,
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil, fmt.Errorf("observer of %s did not sync", namespace)
	}
	return o, nil
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

func (o *Observer) see(obj any) {
	pod, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	value := pod.Labels[o.label]
	o.values[pod.Name] = value
	if sent, ok := o.pending[pod.Name]; ok && value == o.want {
		o.latencies = append(o.latencies, time.Since(sent))
		delete(o.pending, pod.Name)
	}
}

// Pods are the names of the observed pods.
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

// expect sets the value the rule writes from now on.
func (o *Observer) expect(value string) {
	o.mu.Lock()
	o.want = value
	o.mu.Unlock()
}

// carrying is the number of pods whose label has value.
func (o *Observer) carrying(value string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, v := range o.values {
		if v == value {
			n++
		}
	}
	return n
}

// waitAll polls until all observed pods carry value, for up to timeout.
func (o *Observer) waitAll(ctx context.Context, value string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for total := len(o.Pods()); o.carrying(value) < total; {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d pods carry %s=%s after %s", o.carrying(value), total, o.label, value, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
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
