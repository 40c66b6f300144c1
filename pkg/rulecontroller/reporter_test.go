package rulecontroller_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/settings"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// Status churn is most of a big cluster's events; it must never reach the
// queue (the transport leaves most of it out before decoding, predicates filter
// the rest), while each label or annotation change is reconciled exactly once.
func TestOnlyLabelAndAnnotationChangesAreReconciled(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	ctx := t.Context()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "churn"}}); err != nil {
		t.Fatal(err)
	}
	p1, p2 := testkit.Pod(t, c, "churn", "p1", map[string]string{"app": "web"}), testkit.Pod(t, c, "churn", "p2", map[string]string{"app": "web"})
	initial, creates := reconciles(t), events(t, "passed") // other tests' instances count under the same names
	// The annotation a change is made to must be cached: annotations nothing reads are dropped.
	startInstance(t, "watches:\n- kind: Pod\n  namespaces: [churn]\ncache: {keepAnnotations: [example.com/note]}\n", tuned(func(s *settings.Settings) { s.MaxConcurrentReconciles = 1 }))
	// The controller has seen the initial list once its predicate passed both
	// creates (the cache alone can be synced before the controller's handler is added).
	testkit.WaitFor(t, "the initial list's 2 creates", testkit.Timeout, func() bool { return events(t, "passed") >= creates+2 })
	// Without rules a new object needs nothing: the initial list is not reconciled.
	base, filtered := reconciles(t), statusOnly(t)
	if base != initial {
		t.Errorf("%v reconciles of the initial list of 2 pods without rules, want 0", base-initial)
	}

	updateStatusTimes(t, c, p1, 10)
	patchLabel(t, c, p1, "color", "blue")
	testkit.WaitFor(t, "the label change's reconcile", testkit.Timeout, func() bool { return reconciles(t) >= base+1 })
	if got := statusOnly(t) - filtered; got < 10 {
		t.Errorf("%v status-only updates were filtered or recognised as unchanged, want all 10", got)
	}
	patchAnnotation(t, c, p1, "example.com/note", "hello")
	testkit.WaitFor(t, "the annotation change's reconcile", testkit.Timeout, func() bool { return reconciles(t) >= base+2 })
	updateStatusTimes(t, c, p1, 10)
	patchAnnotation(t, c, p1, "example.com/unread", "dropped") // not cached, so no event at all
	// p2's change is a barrier: with one worker and a FIFO queue, once it is
	// reconciled everything p1's events queued before it has been too.
	patchLabel(t, c, p2, "color", "green")
	testkit.WaitFor(t, "the barrier's reconcile", testkit.Timeout, func() bool { return reconciles(t) >= base+3 })
	if got := reconciles(t) - base; got != 3 {
		t.Errorf("%v reconciles for 3 label/annotation changes, 20 status updates and 1 unread annotation change, want exactly 3", got)
	}
	assertLogged(t, `"name":"p1"`, `"msg":"metadata changed"`, `"labels":{"added":{"color":"blue"}}`)
	assertLogged(t, `"name":"p1"`, `"msg":"metadata changed"`, `"annotations":{"added":["example.com/note"]}`)
}

func assertLogged(t *testing.T, parts ...string) {
	t.Helper()
	if got := logs.matching(parts...); len(got) != 1 {
		t.Errorf("%d log lines with %q, want exactly 1", len(got), parts)
	}
}

// updateStatusTimes changes p's status n times: resourceVersion bumps with the same metadata.
func updateStatusTimes(t *testing.T, c client.Client, p *corev1.Pod, n int) {
	t.Helper()
	for i := range n {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Message: fmt.Sprint("probe ", i)}}
		if err := c.Status().Update(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
}

func patchLabel(t *testing.T, c client.Client, p *corev1.Pod, key, value string) {
	t.Helper()
	testkit.MergePatch(t, c, p, "kubectl-label", fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value))
}

func patchAnnotation(t *testing.T, c client.Client, p *corev1.Pod, key, value string) {
	t.Helper()
	testkit.MergePatch(t, c, p, "kubectl-label", fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value))
}

// reconciles is controller-runtime's reconcile count for the pod rulecontroller.
func reconciles(t *testing.T) float64 {
	return testkit.Metric(t, "controller_runtime_reconcile_total", map[string]string{"controller": "pod"})
}

// statusOnly is the pod events the predicates filtered or the transport
// left out as unchanged before decoding.
func statusOnly(t *testing.T) float64 {
	return events(t, "filtered") + testkit.Metric(t, "metawatch_watch_events_unchanged_total", map[string]string{"resource": "pods"})
}

func events(t *testing.T, verdict string) float64 {
	return testkit.Metric(t, "metawatch_events_total", map[string]string{"kind": "Pod", "verdict": verdict})
}
