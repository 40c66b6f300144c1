package main_test

import (
	"fmt"
	"testing"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// Sharded replicas count in one record: a rule removed from the selectors
// releases its key on at most one bound of pods across both replicas. Each
// counted in its own memory before, so the cluster-wide bound was the bound
// times the replicas.
func TestShardedReplicasShareOneRemovalBound(t *testing.T) {
	controlplane.SkipIfShort(t)
	const ns, pods, bound = "sharded-brake", 300, 50
	c := testkit.Populated(t, cp, ns, nil, pods)
	kept := fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: tier, kinds: [Pod], setLabels: {tier: gold}}\n", ns)
	applySelectors(t, c, ns, kept+"- {name: mark, kinds: [Pod], setLabels: {marked: \"yes\"}}\n")
	brake := []string{fmt.Sprintf("--removal-brake-objects=%d", bound), "--removal-brake-share=0"}
	replicas := []*shardedReplica{startShardedReplica(t, ns, "replica-a", brake...), startShardedReplica(t, ns, "replica-b", brake...)}
	for _, r := range replicas {
		waitHTTP200(t, "http://"+r.probe+"/readyz", r.stderr)
	}
	marked := func() int { return testkit.KeyTypes["labels"].CountPods(t, c, ns, "marked", "yes") }
	testkit.WaitFor(t, "every pod marked", 2*testkit.Timeout, func() bool { return marked() == pods })

	applySelectors(t, c, ns, kept) // the rule removed
	held := func() float64 {
		var sum float64
		for _, r := range replicas {
			sum += max(0, r.metric(`metawatch_removals_held{kind="Pod"}`))
		}
		return sum
	}
	testkit.WaitFor(t, "every pod released or held", 2*testkit.Timeout, func() bool {
		return held() > 0 && int(held())+pods-marked() == pods
	})
	released := pods - marked()
	t.Logf("two sharded replicas released %d of %d pods (bound %d), and hold %g", released, pods, bound, held())
	if released > bound {
		t.Errorf("two sharded replicas released %d pods, want at most one bound, %d, across both", released, bound)
	}
}
