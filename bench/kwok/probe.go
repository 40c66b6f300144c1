package kwok

import (
	"context"
	"fmt"
	"time"
)

// probeStage is a kubelet's probe results, as kwok plays them: each Running
// pod of namespace gets its Ready condition's message rewritten (still True:
// a status-only update, nothing a metadata rule cares about) at a random
// moment within every period, so the pods together see about pods/period
// updates a second. The pod-ready stage leaves these pods alone (it matches
// only pods not yet Ready).
func probeStage(namespace string, period time.Duration) string {
	return fmt.Sprintf(`---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: metawatch-bench-probe
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.namespace'
      operator: 'In'
      values:
      - %q
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
  delay:
    durationMilliseconds: 0
    jitterDurationMilliseconds: %d
  next:
    statusTemplate: |
      conditions:
      - type: Ready
        status: "True"
        message: {{ printf "probe %%s" Now | Quote }}
`, namespace, period.Milliseconds())
}

// Probe restarts kwok with the probe stage on namespace's pods, at about
// perSecond updates a second, and returns what restarts it without: call it
// when the churn ends. Each pod's next update comes at a uniformly random
// moment within pods/perSecond of its last one, so the rate starts at
// perSecond and drifts up over a period; the churn counts what it sees
// rather than trust the set rate.
func (k *Kwok) Probe(ctx context.Context, namespace string, pods int, perSecond float64) (stop func() error, err error) {
	if pods == 0 || perSecond <= 0 {
		return func() error { return nil }, nil
	}
	period := time.Duration(float64(pods) / perSecond * float64(time.Second))
	if err := k.restart(ctx, defaultStages+probeStage(namespace, period)); err != nil {
		return nil, err
	}
	return func() error { return k.restart(context.WithoutCancel(ctx), defaultStages) }, nil
}
