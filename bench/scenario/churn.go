package scenario

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ChurnOptions are the churn's rates and length.
type ChurnOptions struct {
	StatusPerSecond, LabelsPerSecond float64
	Duration                         time.Duration
}

// ChurnResult is what the churn sent and saw.
type ChurnResult struct {
	StatusUpdates, LabelChanges int
	// StatusUpdatesSeen are the status-only updates of the pods seen during
	// the churn: the churn's own, and those of their kubelet (kwok's) if any.
	StatusUpdatesSeen int
	Latencies         []time.Duration
	Missed            int
}

// drainTimeout is how long the churn waits, at its end, for the last label changes to be undone.
const drainTimeout = 30 * time.Second

// Churn sends, for opts.Duration, status-only updates (a kubelet's probe
// results: nothing a metadata rule cares about) and label changes (removing
// the rule's label from a pod, which the rule must put back) at fixed rates
// to the observed pods, round robin; a status rate of 0 sends none (kwok,
// playing the pods' kubelet, sends them). Requests that would exceed 64 in
// flight are skipped, so a slow API server lowers the rates rather than
// queueing.
func Churn(ctx context.Context, c client.Client, o *Observer, namespace string, opts ChurnOptions) (ChurnResult, error) {
	pods := o.Pods()
	if len(pods) == 0 {
		return ChurnResult{}, fmt.Errorf("no pods to churn in %s", namespace)
	}
	// The requests outlive the churn's duration: one cut off as it ends may
	// still have landed, and a label change the rule put back but the churn
	// did not count would be a latency without its change.
	requests, stop := context.WithTimeout(context.WithoutCancel(ctx), opts.Duration+drainTimeout)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, opts.Duration)
	defer cancel()
	var status, labels atomic.Int64
	seenBefore := o.StatusUpdates()
	var wg sync.WaitGroup
	inflight := make(chan struct{}, 64)
	wg.Go(func() {
		every(ctx, opts.StatusPerSecond, func(i int) {
			send(ctx, inflight, &wg, &status, func() error { return statusUpdate(requests, c, namespace, pods[i%len(pods)]) })
		})
	})
	wg.Go(func() {
		every(ctx, opts.LabelsPerSecond, func(i int) {
			pod := pods[(i*7919)%len(pods)] // a stride so label and status churn hit different pods
			if o.track(pod) {
				send(ctx, inflight, &wg, &labels, func() error { return o.untrackOnError(pod, removeLabel(requests, c, namespace, pod, o.label)) })
			}
		})
	})
	<-ctx.Done() // the whole duration, even when neither rate sends anything (kwok sends the status updates)
	wg.Wait()
	seen := o.StatusUpdates() - seenBefore
	latencies, missed := o.drain(context.WithoutCancel(ctx), drainTimeout)
	return ChurnResult{StatusUpdates: int(status.Load()), LabelChanges: int(labels.Load()), StatusUpdatesSeen: seen,
		Latencies: latencies, Missed: missed}, nil
}

// every calls f(0), f(1), ... perSecond times a second until ctx ends.
func every(ctx context.Context, perSecond float64, f func(int)) {
	if perSecond <= 0 {
		return
	}
	ticker := time.NewTicker(time.Duration(float64(time.Second) / perSecond))
	defer ticker.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			f(i)
		}
	}
}

// send runs request in the background if fewer than cap(inflight) are, and counts it if it succeeded.
func send(ctx context.Context, inflight chan struct{}, wg *sync.WaitGroup, sent *atomic.Int64, request func() error) {
	select {
	case inflight <- struct{}{}:
	default:
		return
	}
	wg.Go(func() {
		defer func() { <-inflight }()
		if err := request(); err == nil {
			sent.Add(1)
		} else if ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "churn: %v\n", err)
		}
	})
}

// statusUpdate changes a condition's message to one never sent before (a
// repeated one would be a no-op: no write, no event).
func statusUpdate(ctx context.Context, c client.Client, namespace, name string) error {
	patch := fmt.Appendf(nil, `{"status":{"conditions":[{"type":"Ready","status":"True","message":"probe %d"}]}}`, time.Now().UnixNano())
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	return c.Status().Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, patch), client.FieldOwner("kubelet"))
}

func removeLabel(ctx context.Context, c client.Client, namespace, name, label string) error {
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:null}}}`, label)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	return c.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("bench-churn"))
}
