package rulecontroller_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/rulecontroller"
	"github.com/metawatch/metawatch/pkg/settings"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// fightRound is how long the tests' fights leave a key, instead of minutes.
const fightRound = 5 * time.Second

// maxTakeovers is the undos past which metawatch leaves a key (memory_takeovers.go).
const maxTakeovers = 3

// A key metawatch sets that another controller keeps removing is a fight:
// after a few undos metawatch stops writing it there (an OwnershipFight
// Event), and once the other side has stopped, it sets it again. Before,
// the two wrote for ever, and nothing said so.
func TestAKeySomethingKeepsRemovingIsLeftThenSetAgain(t *testing.T) {
	defer rulecontroller.SetFightBackoff(fightRound)()
	for name, kt := range testkit.KeyTypes {
		t.Run(name, func(t *testing.T) {
			ns := "fight-removed-" + name
			c := testkit.Populated(t, cp, ns, nil, 1)
			inst := startInstance(t, fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: mark, kinds: [Pod], %s: {example.com/mark: \"yes\"}}\n", ns, kt.Set), tuning{})
			has := func() bool { _, ok := kt.Of(getPod(t, c, ns, "pod-0"))["example.com/mark"]; return ok }
			testkit.WaitFor(t, "the "+kt.Name, testkit.Timeout, has)

			strips := undoUntilFight(t, c, ns, func() bool { return has() }, kt.Patch("example.com/mark", nil))
			if n := inst.writes.Load(); n > 1+maxTakeovers+1 {
				t.Errorf("metawatch wrote %d times over %d strips, want it to stop after %d", n, strips, maxTakeovers+1)
			}
			t.Logf("%ss: metawatch wrote %d times (the first set included) while another writer stripped the key %d times, then left it", kt.Name, inst.writes.Load(), strips)
			testkit.WaitFor(t, "the "+kt.Name+" set again once the other side stopped", testkit.Timeout, has)
		})
	}
}

// The reverse: a key a rule removes that another controller keeps putting
// back is left after a few undos, and removed again once it stops.
func TestAKeySomethingKeepsPuttingBackIsLeftThenRemovedAgain(t *testing.T) {
	defer rulecontroller.SetFightBackoff(fightRound)()
	yes := "yes"
	for name, kt := range testkit.KeyTypes {
		t.Run(name, func(t *testing.T) {
			ns := "fight-added-" + name
			c := testkit.Populated(t, cp, ns, nil, 1)
			inst := startInstance(t, fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: strip, kinds: [Pod], %s: [example.com/debug]}\n", ns, kt.Remove), tuning{})
			waitCached(t, inst, []string{ns}, 1)
			has := func() bool { _, ok := kt.Of(getPod(t, c, ns, "pod-0"))["example.com/debug"]; return ok }
			adds := undoUntilFight(t, c, ns, func() bool { return !has() }, kt.Patch("example.com/debug", &yes))
			if n := inst.writes.Load(); n > maxTakeovers+1 {
				t.Errorf("metawatch wrote %d times over %d adds, want it to stop after %d", n, adds, maxTakeovers+1)
			}
			t.Logf("%ss: metawatch removed the key %d times while another writer put it back %d times, then left it", kt.Name, inst.writes.Load(), adds)
			testkit.WaitFor(t, "the "+kt.Name+" removed again once the other side stopped", testkit.Timeout, func() bool { return !has() })
		})
	}
}

// undoUntilFight plays the other controller: whenever metawatch's write is
// in place (done), it undoes it with patch, until metawatch says it leaves
// the key (the aggregate OwnershipFight Event of ns names pod-0); it
// returns how often it undid.
func undoUntilFight(t *testing.T, c client.Client, ns string, done func() bool, patch string) int {
	t.Helper()
	undos := 0
	testkit.WaitFor(t, "an OwnershipFight Event", 2*testkit.Timeout, func() bool {
		if done() {
			testkit.MergePatch(t, c, podObject(ns, "pod-0"), "other-controller", patch)
			undos++
		}
		for _, e := range testkit.AggregateEvents(t, c, ns, rulecontroller.ReasonOwnershipFight, "") {
			if strings.Contains(e.Note, "pod-0") {
				return true
			}
		}
		return false
	})
	return undos
}

// Two installations on default flags, each setting its own key on the same
// pods, write as one field manager: each apply erased the other's key, and
// they wrote without end. Now one that sees changes under its name that it
// did not make stops writing and says why (whichever sees them first: the
// other may see none once it stopped), and the writes end.
func TestTwoInstallationsUnderOneNameStopWriting(t *testing.T) {
	for name, kt := range testkit.KeyTypes {
		t.Run(name, func(t *testing.T) {
			ns, n := "one-name-"+name, fightPods()
			c := testkit.Populated(t, cp, ns, nil, n)
			configOf := func(key string) string {
				return fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: mark, kinds: [Pod], %s: {%s: \"yes\"}}\n", ns, kt.Set, key)
			}
			a, b := authority.NewIdentity("", ""), authority.NewIdentity("", "")
			ia := startInstance(t, configOf("example.com/team-a"), tuned(func(s *settings.Settings) { s.Identity = a }))
			ib := startInstance(t, configOf("example.com/team-b"), tuned(func(s *settings.Settings) { s.Identity = b }))
			testkit.WaitFor(t, "an installation to stop writing under the shared name", 10*time.Minute, func() bool {
				return a.Refused() != nil || b.Refused() != nil
			})
			testkit.WaitFor(t, "the writes to end", 10*time.Minute, func() bool {
				before := ia.writes.Load() + ib.writes.Load()
				r := reconciles(t)
				touchAll(t, c, ns, n)
				testkit.WaitFor(t, "both installations to decide on every pod again", 10*time.Minute, func() bool { return reconciles(t)-r >= float64(2*n) })
				return ia.writes.Load()+ib.writes.Load() == before
			})
			refused := a.Refused()
			if refused == nil {
				refused = b.Refused()
			}
			t.Logf("%ss, %d pods: two installations under one name wrote %d times in all, then the writes ended: %v", kt.Name, n, ia.writes.Load()+ib.writes.Load(), refused)
		})
	}
}

// podObject names a pod, for a patch.
func podObject(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// touchAll changes every pod of ns (another manager's label): whoever
// watches them decides on each again.
func touchAll(t *testing.T, c client.Client, ns string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			testkit.MergePatch(t, c, podObject(ns, fmt.Sprintf("pod-%d", i)), "kubectl-label", fmt.Sprintf(`{"metadata":{"labels":{"touched":"%d"}}}`, time.Now().UnixNano()))
		})
	}
	wg.Wait()
}

// fightPods is how many pods the stripper's test runs on: a few in make
// test, METAWATCH_FIGHT_PODS for the figures (10,000).
func fightPods() int {
	if n, err := strconv.Atoi(os.Getenv("METAWATCH_FIGHT_PODS")); err == nil && n > 0 {
		return n
	}
	return 30
}

// Another writer strips the key metawatch sets from every pod, round after
// round: metawatch's writes stop within the fight threshold on each pod
// (the first set, then maxTakeovers puts back), instead of going on as
// long as the stripper does.
func TestAStripperOnEveryPodStopsTheWritesWithinTheThreshold(t *testing.T) {
	for name, kt := range testkit.KeyTypes {
		t.Run(name, func(t *testing.T) {
			ns, n := "fight-every-"+name, fightPods()
			c := testkit.Populated(t, cp, ns, nil, n)
			inst := startInstance(t, fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: mark, kinds: [Pod], %s: {example.com/mark: \"yes\"}}\n", ns, kt.Set), tuning{})
			testkit.WaitFor(t, "every pod marked", 10*time.Minute, func() bool { return kt.CountPods(t, c, ns, "example.com/mark", "") == n })
			rounds, strips := 0, 0
			fights := func() float64 {
				return testkit.Metric(t, "metawatch_ownership_fights_total", map[string]string{"rule": "mark", "kind": "Pod"})
			}
			before := fights()
			testkit.WaitFor(t, "metawatch to leave the key on every pod", 30*time.Minute, func() bool {
				stripped := stripAll(t, c, ns, kt, "example.com/mark")
				rounds, strips = rounds+1, strips+stripped
				return stripped == 0 && fights()-before >= float64(n)
			})
			perPod := float64(inst.writes.Load()) / float64(n)
			t.Logf("%ss, %d pods: the stripper removed the key %d times in %d rounds; metawatch wrote %d times (%.1f per pod, the first set included), then left it",
				kt.Name, n, strips, rounds, inst.writes.Load(), perPod)
			if perPod > 1+maxTakeovers+1 {
				t.Errorf("metawatch wrote %.1f times per pod, want at most %d: the first set and %d puts back", perPod, 1+maxTakeovers, maxTakeovers)
			}
		})
	}
}

// stripAll removes key from every pod of ns that has it, 8 at a time, and
// returns how many it stripped.
func stripAll(t *testing.T, c client.Client, ns string, kt testkit.KeyType, key string) int {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var stripped atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range pods.Items {
		if _, has := kt.Of(&pods.Items[i])[key]; !has {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			testkit.MergePatch(t, c, podObject(ns, pods.Items[i].Name), "stripper", kt.Patch(key, nil))
			stripped.Add(1)
		})
	}
	wg.Wait()
	return int(stripped.Load())
}
