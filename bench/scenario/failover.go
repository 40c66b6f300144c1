package scenario

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Label sets the namespace's label to value and waits until every observed
// pod carries it, as the running controller writes it: the state a
// failover starts from.
func Label(ctx context.Context, c client.Client, o *Observer, namespace, value string, timeout time.Duration) error {
	o.expect(value)
	if err := labelNamespace(ctx, c, namespace, o.label, value); err != nil {
		return err
	}
	return o.waitAll(ctx, value, timeout)
}

// Mended removes the rule's label from pod and returns how long after since
// it was back, waiting up to timeout: a failover's first write, timed from
// the leader's death.
func Mended(ctx context.Context, c client.Client, o *Observer, namespace, pod string, since time.Time, timeout time.Duration) (time.Duration, error) {
	if !o.track(pod) {
		return 0, fmt.Errorf("pod %s already has a change pending", pod)
	}
	removed := time.Now()
	if err := o.untrackOnError(pod, removeLabel(ctx, c, namespace, pod, o.label)); err != nil {
		return 0, fmt.Errorf("removing %s from pod %s: %w", o.label, pod, err)
	}
	latencies, missed := o.drain(ctx, timeout)
	if missed > 0 || len(latencies) == 0 {
		return 0, fmt.Errorf("pod %s's %s was not written back within %s", pod, o.label, timeout)
	}
	return removed.Sub(since) + latencies[0], nil
}
