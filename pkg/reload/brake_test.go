package reload_test

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/brake"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// brakePods is how many pods the brake's tests run on: 1,000 in make test
// (the bound is still 100: the share of 1% is 10), METAWATCH_BRAKE_PODS for
// the figures at 10,000, which the CHANGELOG gives.
func brakePods(*testing.T) int {
	if n, err := strconv.Atoi(os.Getenv("METAWATCH_BRAKE_PODS")); err == nil && n > 0 {
		return n
	}
	return 1000
}

// brakeWait bounds the waits for thousands of pods to converge.
const brakeWait = 10 * time.Minute

// brakeCase is one brake test's pods, as a table over labels and annotations.
type brakeCase struct {
	t    *testing.T
	kt   testkit.KeyType
	c    client.Client
	ns   string
	pods int
}

func newBrakeCase(t *testing.T, kt testkit.KeyType, ns string, nsLabels map[string]string) *brakeCase {
	n := brakePods(t)
	return &brakeCase{t: t, kt: kt, c: testkit.Populated(t, cp, ns, nsLabels, n), ns: ns, pods: n}
}

// with is how many pods carry key=value ("": any value).
func (b *brakeCase) with(key, value string) int { return b.kt.CountPods(b.t, b.c, b.ns, key, value) }

// held is metawatch_removals_held for Pods.
func (b *brakeCase) held() float64 {
	return testkit.Metric(b.t, "metawatch_removals_held", map[string]string{"kind": "Pod"})
}

// approveLine is the kubectl line of the newest RemovalsHeld Event naming a
// change other than those in seen.
func (b *brakeCase) approveLine(seen ...string) (line, token string) {
	b.t.Helper()
	approve := regexp.MustCompile(`kubectl annotate configmap -n \S+ \S+ --overwrite ` + regexp.QuoteMeta(brake.AllowRemovals) + `=(\S+)`)
	waitEvery(b.t, "a RemovalsHeld Event with the kubectl line of a new change", testkit.Timeout, func() bool {
		for _, e := range testkit.Events(b.t, b.c, b.ns, "ConfigMap", "selectors", "RemovalsHeld") {
			if m := approve.FindStringSubmatch(e.Note); m != nil && !contains(strings.Join(seen, " "), m[1]) {
				line, token = m[0], m[1]
			}
		}
		return line != ""
	})
	return line, token
}

// A rule removed from the ConfigMap releases its key on at most the
// brake's bound of pods; the others keep it, said by an Event on the
// ConfigMap, /readyz/configuration (ready still) and the metric, until the
// ConfigMap carries the approval the Event names: then every pod converges.
// Annotations were not in the cache's view before (it kept only those the
// configuration reads), and a removed setAnnotations rule stripped them from
// every pod.
func TestARemovedRuleReleasesAtMostTheBoundUntilApproved(t *testing.T) {
	for name, kt := range testkit.KeyTypes {
		t.Run(name, func(t *testing.T) {
			b := newBrakeCase(t, kt, "brake-"+name, nil)
			bound := brake.DefaultBound().Of(b.pods)
			kept := fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: brake-tier, kinds: [Pod], %s: {tier: gold}}\n", b.ns, kt.Set)
			kubectlApply(t, selectors(b.ns, kept+fmt.Sprintf("- {name: brake-mark, kinds: [Pod], %s: {example.com/marked: \"yes\"}}\n", kt.Set)))
			inst := startInstance(t, cp.Config, b.ns+"/selectors")
			start := time.Now()
			waitEvery(t, "the rule to mark every pod", brakeWait, func() bool { return b.with("example.com/marked", "yes") == b.pods })
			t.Logf("%d pods marked (%ss) in %s", b.pods, kt.Name, time.Since(start).Round(time.Second))

			kubectlApply(t, selectors(b.ns, kept)) // the rule removed
			waitEvery(t, "the brake to hold every pod beyond the bound", brakeWait, func() bool { return b.held() == float64(b.pods-bound) })
			released := b.pods - b.with("example.com/marked", "yes")
			if released > bound {
				t.Fatalf("%d pods lost the %s before approval, want at most the bound %d", released, kt.Name, bound)
			}
			line, token := b.approveLine()
			if body, detail := inst.readiness(), inst.describe(); body != "ok" || !strings.Contains(detail, fmt.Sprintf("removal brake holding (Pod %d objects) under change %s", b.pods-bound, token)) {
				t.Errorf("/readyz/configuration = %q with detail %q, want ok with what the brake holds", body, detail)
			}
			if released = b.pods - b.with("example.com/marked", "yes"); released > bound {
				t.Fatalf("%d pods lost the %s before approval, want at most the bound %d", released, kt.Name, bound)
			}

			start = time.Now()
			kubectl(t, strings.Fields(line)[1:]...)
			waitEvery(t, "every pod to lose the "+kt.Name+" once approved", brakeWait, func() bool { return b.with("example.com/marked", "") == 0 })
			t.Logf("%ss: %d pods released before approval (bound %d); after approval the other %d converged in %s",
				kt.Name, released, bound, b.pods-released, time.Since(start).Round(time.Second))
			if b.held() != 0 {
				t.Errorf("metawatch_removals_held = %g after approval, want 0", b.held())
			}
			if n := b.with("tier", "gold"); n != b.pods {
				t.Errorf("%d pods keep the rule that stayed, want all %d: sets are never held", n, b.pods)
			}
			if !eventWith(t, b.c, b.ns, "RemovalsApproved", token+" used") {
				t.Errorf("no RemovalsApproved Event saying %s was used", token)
			}
		})
	}
}

// An approval lets one change go on, once: after it, a key removed by
// mistake from the Namespace is braked again (under a new change, with a
// new token), where before the standing approval let every pod lose it.
func TestAfterAnApprovalALaterMistakeIsBrakedAgain(t *testing.T) {
	for name, kt := range testkit.KeyTypes {
		t.Run(name, func(t *testing.T) {
			b := newBrakeCase(t, kt, "again-"+name, nil)
			bound := brake.DefaultBound().Of(b.pods)
			setNamespaceKey(t, b, "team", "red")
			copyRule := fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- name: team\n  kinds: [Pod]\n  copyFromNamespace: {%s: [team]}\n", b.ns, kt.Copy)
			kubectlApply(t, selectors(b.ns, copyRule+fmt.Sprintf("- {name: mark, kinds: [Pod], %s: {example.com/marked: \"yes\"}}\n", kt.Set)))
			startInstance(t, cp.Config, b.ns+"/selectors")
			waitEvery(t, "every pod marked and on team red", brakeWait, func() bool {
				return b.with("example.com/marked", "yes") == b.pods && b.with("team", "red") == b.pods
			})

			kubectlApply(t, selectors(b.ns, copyRule)) // the first change: a rule removed, and approved
			waitEvery(t, "the brake to hold every pod beyond the bound", brakeWait, func() bool { return b.held() == float64(b.pods-bound) })
			line, first := b.approveLine()
			kubectl(t, strings.Fields(line)[1:]...)
			waitEvery(t, "every pod unmarked once approved", brakeWait, func() bool { return b.with("example.com/marked", "") == 0 })

			setNamespaceKey(t, b, "team", "") // the mistake: team removed from the Namespace
			_, second := b.approveLine(first)
			waitEvery(t, "the brake to hold the mistake", brakeWait, func() bool { return b.held() > 0 })
			if lost := b.pods - b.with("team", "red"); lost > bound {
				t.Errorf("%d pods lost team after the approval of another change, want at most the bound %d", lost, bound)
			}
			if second == first {
				t.Errorf("the mistake is held under the approved change %s, want a new one", first)
			}
			t.Logf("%ss: after approving %s, the Namespace's mistake held under %s with %d of %d pods released (bound %d)",
				kt.Name, first, second, b.pods-b.with("team", "red"), b.pods, bound)
		})
	}
}

// setNamespaceKey sets key on b's Namespace, or removes it for "".
func setNamespaceKey(t *testing.T, b *brakeCase, key, value string) {
	t.Helper()
	var v *string
	if value != "" {
		v = &value
	}
	testkit.MergePatch(t, b.c, namespaceObject(b.ns), "kubectl-edit", b.kt.Patch(key, v))
}

// Restarts during a held removal grant no second bound: the count is kept
// in the ConfigMap beside the selectors, and each new process goes on from it.
func TestRestartsDuringAHeldRemovalGrantNoSecondBound(t *testing.T) {
	for name, kt := range testkit.KeyTypes {
		t.Run(name, func(t *testing.T) {
			b := newBrakeCase(t, kt, "restarts-"+name, nil)
			bound := brake.DefaultBound().Of(b.pods)
			kept := fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: tier, kinds: [Pod], %s: {tier: gold}}\n", b.ns, kt.Set)
			kubectlApply(t, selectors(b.ns, kept+fmt.Sprintf("- {name: mark, kinds: [Pod], %s: {example.com/marked: \"yes\"}}\n", kt.Set)))
			inst := startInstance(t, cp.Config, b.ns+"/selectors")
			waitEvery(t, "every pod marked", brakeWait, func() bool { return b.with("example.com/marked", "yes") == b.pods })
			kubectlApply(t, selectors(b.ns, kept))
			waitEvery(t, "the brake to hold", brakeWait, func() bool { return b.held() == float64(b.pods-bound) })
			for i := range 5 {
				inst.stop()
				inst = startInstance(t, cp.Config, b.ns+"/selectors")
				// This process's own brake (not the metric, which the last one
				// set) holds every pod still marked: it decided on each.
				waitEvery(t, fmt.Sprintf("restart %d to decide on every pod", i+1), brakeWait, func() bool {
					return strings.Contains(inst.describe(), fmt.Sprintf("removal brake holding (Pod %d objects)", b.with("example.com/marked", "yes")))
				})
			}
			if released := b.pods - b.with("example.com/marked", "yes"); released > bound {
				t.Errorf("%d pods lost the %s over five restarts, want at most one bound, %d", released, kt.Name, bound)
			} else {
				t.Logf("%ss: after 5 restarts during the held removal, %d of %d pods released (bound %d)", kt.Name, released, b.pods, bound)
			}
		})
	}
}

// An approval given while a newer, invalid edit of the ConfigMap is pending
// is not ignored: it lets the running configuration's held change go on,
// and says so.
func TestAnApprovalBesideAnInvalidEditIsUsedAndSaid(t *testing.T) {
	for name, kt := range testkit.KeyTypes {
		t.Run(name, func(t *testing.T) {
			ns := "approve-invalid-" + name
			b := &brakeCase{t: t, kt: kt, c: testkit.Populated(t, cp, ns, nil, 300), ns: ns, pods: 300}
			kept := fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: tier, kinds: [Pod], %s: {tier: gold}}\n", b.ns, kt.Set)
			kubectlApply(t, selectors(b.ns, kept+fmt.Sprintf("- {name: mark, kinds: [Pod], %s: {example.com/marked: \"yes\"}}\n", kt.Set)))
			startInstance(t, cp.Config, b.ns+"/selectors")
			waitEvery(t, "every pod marked", brakeWait, func() bool { return b.with("example.com/marked", "yes") == b.pods })
			kubectlApply(t, selectors(b.ns, kept))
			waitEvery(t, "the brake to hold every pod beyond the bound", brakeWait, func() bool { return b.held() == float64(b.pods-100) })
			_, token := b.approveLine()
			invalid := strings.Replace(selectors(b.ns, kept+"- {name: broken, kinds: [Pod], setLabels: {\"bad key!\": x}}\n"), "metadata: {name: selectors,",
				fmt.Sprintf("metadata: {annotations: {%s: %s}, name: selectors,", brake.AllowRemovals, token), 1)
			kubectlApply(t, invalid)
			waitEvery(t, "every pod unmarked", brakeWait, func() bool { return b.with("example.com/marked", "") == 0 })
			if !eventWith(t, b.c, b.ns, "RemovalsApproved", "newer edit is invalid") {
				t.Errorf("no RemovalsApproved Event saying the approval was used beside the invalid edit")
			}
		})
	}
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
