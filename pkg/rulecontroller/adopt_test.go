package rulecontroller_test

import (
	"fmt"
	"testing"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/rulecontroller"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// An installation renamed from metawatch to metawatch-team-a, told to adopt
// the old name, takes over its keys: the key a rule still wants is owned by
// the new name alone, the one no rule wants any more is released, a
// protected key stays as it is with the old name, and a restart writes
// nothing. Without adoption the released key stayed for ever, owned by a
// name nobody runs.
func TestARenamedFieldManagerAdoptsTheOldNamesKeys(t *testing.T) {
	controlplane.SkipIfShort(t)
	ns := "adoption"
	c := testkit.Populated(t, cp, ns, nil, 20)
	watch := fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\n", ns)
	old := startInstance(t, watch+`rules:
- {name: team, kinds: [Pod], setLabels: {team: a}}
- {name: tier, kinds: [Pod], setLabels: {tier: web}}
- {name: guarded, kinds: [Pod], setLabels: {guarded: "1"}}
`, settings{})
	waitAllPods(t, c, "the old name's three keys on every pod", []string{ns}, func(_ string, l map[string]string) bool {
		return l["team"] == "a" && l["tier"] == "web" && l["guarded"] == "1"
	})
	old.stop()

	limits := everyKindWritable()
	limits.ProtectedKeys = []string{"guarded"}
	renamed := settings{Options: rulecontroller.Options{FieldManager: "metawatch-team-a", AdoptFieldManager: authority.DefaultFieldManager}, Wiring: rulecontroller.Wiring{Limits: limits}}
	config := watch + "rules:\n- {name: team, kinds: [Pod], setLabels: {team: a}}\n"
	inst := startInstance(t, config, renamed)
	waitAllPods(t, c, "tier released, team and guarded kept", []string{ns}, func(_ string, l map[string]string) bool {
		_, tier := l["tier"]
		return !tier && l["team"] == "a" && l["guarded"] == "1"
	})
	testkit.WaitFor(t, "team owned by the new name alone", testkit.Timeout, func() bool {
		for _, p := range podsIn(t, c, ns) {
			if owners := labelManagers(p, "team", "guarded"); owners["team"] != "metawatch-team-a" || owners["guarded"] != authority.DefaultFieldManager {
				return false
			}
		}
		return true
	})
	inst.stop()

	inst = startInstance(t, config, renamed)
	waitCached(t, inst, []string{ns}, 20)
	waitAllPods(t, c, "the keys as adoption left them", []string{ns}, func(_ string, l map[string]string) bool {
		_, tier := l["tier"]
		return !tier && l["team"] == "a" && l["guarded"] == "1"
	})
	if n := inst.writes.Load(); n != 0 {
		t.Errorf("the adopted installation wrote %d times after a restart, want 0", n)
	}
}
