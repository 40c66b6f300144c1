package reload_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// A valid selector change: newly selected objects enter the cache and the
// rules act on them; deselected ones leave the cache.
func TestSelectorChangeMovesObjectsInAndOut(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "sel", nil)
	for i := range 3 {
		testkit.Pod(t, c, "sel", fmt.Sprintf("a-%d", i), map[string]string{"app": "a"})
	}
	for i := range 2 {
		testkit.Pod(t, c, "sel", fmt.Sprintf("b-%d", i), map[string]string{"app": "b"})
	}
	config := "watches:\n- kind: Pod\n  namespaces: [sel]\n  labelSelector: app=%s\nrules:\n- {name: sel-tier, kinds: [Pod], setLabels: {tier: gold}}\n"
	kubectlApply(t, selectors("sel", fmt.Sprintf(config, "a")))
	startInstance(t, cp.Config, "sel/selectors")
	cached := func() float64 { return testkit.Metric(t, "metawatch_cached_objects", map[string]string{"kind": "Pod"}) }
	testkit.WaitFor(t, "the 3 app=a pods in the cache", testkit.Timeout, func() bool { return cached() == 3 })
	testkit.WaitFor(t, "the app=a pods labelled", testkit.Timeout, func() bool { return podLabel(t, c, "sel", "a-2", "tier") == "gold" })

	kubectlApply(t, selectors("sel", fmt.Sprintf(config, "b")))
	testkit.WaitFor(t, "the cache to hold the 2 app=b pods only", testkit.Timeout, func() bool { return cached() == 2 })
	testkit.WaitFor(t, "the rule to follow to app=b", testkit.Timeout, func() bool {
		return podLabel(t, c, "sel", "b-0", "tier") == "gold" && podLabel(t, c, "sel", "b-1", "tier") == "gold"
	})
}

// A reload while labels churn (50 changes a second for 20 seconds): once it
// settles, every pod is in the state the final rules want and keeps every
// churned label: nothing is lost across the swap.
func TestReloadUnderChurnLosesNothing(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "churn", nil)
	const pods = 20
	for i := range pods {
		testkit.Pod(t, c, "churn", fmt.Sprintf("p-%d", i), nil)
	}
	config := "watches:\n- kind: Pod\n  namespaces: [churn]\nrules:\n- {name: churn-tier, kinds: [Pod], setLabels: {tier: gold}}\n"
	kubectlApply(t, selectors("churn", config))
	startInstance(t, cp.Config, "churn/selectors")
	testkit.WaitFor(t, "the first rule everywhere", testkit.Timeout, func() bool { return podLabel(t, c, "churn", "p-0", "tier") == "gold" })

	reloaded := make(chan error, 1)
	last, changes := churn(t, c, pods, 20*time.Second, 50, func() {
		reloaded <- applyManifest(selectors("churn", config+"- {name: churn-zone, kinds: [Pod], setLabels: {zone: west}}\n"))
	})
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
	lost := 0
	testkit.WaitFor(t, "every pod to converge", testkit.Timeout, func() bool {
		lost = 0
		for i := range pods {
			name := fmt.Sprintf("p-%d", i)
			if podLabel(t, c, "churn", name, "tier") != "gold" || podLabel(t, c, "churn", name, "zone") != "west" ||
				podLabel(t, c, "churn", name, "color") != last[name] {
				lost++
			}
		}
		return lost == 0
	})
	t.Logf("%d pods converged after %d label changes in 20s (%.0f/s) with a reload in the middle; 0 lost", pods, changes, float64(changes)/20)
}

// churn changes a random pod's color label rate times a second for d, and
// with it removes the pod's tier label (a hand edit the rules must undo) the
// first tierRemovals times it picks the pod: more on one pod would be a
// fight, which metawatch leaves to the other side (its own tests);
// halfway it calls reload. It returns the last color each pod was given,
// and how many changes it made.
func churn(t *testing.T, c client.Client, pods int, d time.Duration, rate int, reload func()) (map[string]string, int) {
	t.Helper()
	const tierRemovals = 2
	last, removals := map[string]string{}, map[string]int{}
	var once sync.Once
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	start := time.Now()
	n := 0
	for ; time.Since(start) < d; n++ {
		<-tick.C
		name := fmt.Sprintf("p-%d", rand.IntN(pods))
		color := fmt.Sprintf("c%d", n)
		patch := fmt.Sprintf(`{"metadata":{"labels":{"color":%q}}}`, color)
		if removals[name] < tierRemovals {
			removals[name]++
			patch = fmt.Sprintf(`{"metadata":{"labels":{"color":%q,"tier":null}}}`, color)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "churn", Name: name}}
		testkit.MergePatch(t, c, pod, "kubectl-label", patch)
		last[name] = color
		if time.Since(start) > d/2 {
			once.Do(func() { go reload() }) // the churn goes on while the generations swap
		}
	}
	return last, n
}
