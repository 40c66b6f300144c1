package reload_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/brake"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// brakePods is how many pods the brake's test runs on: the scale the issue
// promises (10k), measured as the CHANGELOG says.
const brakePods = 10000

// A rule removed from the ConfigMap releases its label on at most the
// brake's bound of pods; the others keep it, said by an Event on the
// ConfigMap, /readyz/configuration (ready still) and the metric, until the
// ConfigMap carries the approval the Event names: then every pod converges.
func TestRemovedRuleReleasesAtMostTheBoundUntilApproved(t *testing.T) {
	const ns = "brake"
	c := testkit.Populated(t, cp, ns, nil, brakePods)
	bound := brake.DefaultLimits().Bound(brakePods)
	kept := "watches:\n- kind: Pod\n  namespaces: [brake]\nrules:\n- {name: brake-tier, kinds: [Pod], setLabels: {tier: gold}}\n"
	kubectlApply(t, selectors(ns, kept+"- {name: brake-mark, kinds: [Pod], setLabels: {marked: \"yes\"}}\n"))
	inst := startInstance(t, cp.Config, ns+"/selectors")
	marked := func() int { return countPods(t, c, ns, "marked=yes") }
	start := time.Now()
	waitEvery(t, "the rule to mark every pod", 10*time.Minute, func() bool { return marked() == brakePods })
	t.Logf("%d pods marked in %s", brakePods, time.Since(start).Round(time.Second))

	kubectlApply(t, selectors(ns, kept)) // the rule removed
	held := func() float64 { return testkit.Metric(t, "metawatch_removals_held", map[string]string{"kind": "Pod"}) }
	waitEvery(t, "the brake to hold every pod beyond the bound", 10*time.Minute, func() bool { return held() == float64(brakePods-bound) })
	released := brakePods - marked()
	if released > bound {
		t.Fatalf("%d pods lost the label before approval, want at most the bound %d", released, bound)
	}
	if body, detail := inst.readiness(), inst.describe(); body != "ok" || !strings.Contains(detail, fmt.Sprintf("removal brake holding (Pod %d objects)", brakePods-bound)) {
		t.Errorf("/readyz/configuration = %q with detail %q, want ok with what the brake holds", body, detail)
	}
	var approve string
	waitEvery(t, "the RemovalsHeld Event with the kubectl line", testkit.Timeout, func() bool {
		for _, e := range testkit.Events(t, c, ns, "ConfigMap", "selectors", "RemovalsHeld") {
			approve = regexp.MustCompile(`kubectl annotate .*`).FindString(e.Note)
		}
		return approve != ""
	})
	if released = brakePods - marked(); released > bound {
		t.Fatalf("%d pods lost the label before approval, want at most the bound %d", released, bound)
	}

	start = time.Now()
	kubectl(t, strings.Fields(approve)[1:]...)
	waitEvery(t, "every pod to lose the label once approved", 10*time.Minute, func() bool { return marked() == 0 })
	t.Logf("%d pods released before approval (bound %d); after approval the other %d converged in %s", released, bound, brakePods-released, time.Since(start).Round(time.Second))
	if held() != 0 {
		t.Errorf("metawatch_removals_held = %g after approval, want 0", held())
	}
	if n := countPods(t, c, ns, "tier=gold"); n != brakePods {
		t.Errorf("%d pods keep the rule that stayed, want all %d: sets are never held", n, brakePods)
	}
}

// countPods is how many pods of ns match selector, listed as metadata.
func countPods(t *testing.T, c client.Client, ns, selector string) int {
	t.Helper()
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "PodList"})
	sel, err := labels.Parse(selector)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.List(t.Context(), list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// waitEvery is testkit.WaitFor polling once a second: each poll lists
// thousands of pods.
func waitEvery(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(time.Second)
	}
}
