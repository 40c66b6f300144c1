package rulecontroller_test

import (
	"fmt"
	"testing"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/settings"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// An installation renamed from metawatch to metawatch-team-a, told to adopt
// the old name, takes over its keys, labels and annotations alike: the key a
// rule still wants is owned by the new name alone, the one no rule wants any
// more is released, a protected key stays as it is with the old name, and a
// restart writes nothing. Without adoption the released key stayed for ever,
// owned by a name nobody runs. The cache kept only the annotations the new
// configuration reads before: adoption did not see the old name's others,
// and its apply as the old name deleted them, the protected one included.
func TestARenamedFieldManagerAdoptsTheOldNamesKeys(t *testing.T) {
	controlplane.SkipIfShort(t)
	for name, kt := range testkit.KeyTypes {
		t.Run(name, func(t *testing.T) {
			ns := "adoption-" + name
			c := testkit.Populated(t, cp, ns, nil, 20)
			watch := fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\n", ns)
			old := startInstance(t, watch+fmt.Sprintf(`rules:
- {name: team, kinds: [Pod], %[1]s: {team: a}}
- {name: tier, kinds: [Pod], %[1]s: {tier: web}}
- {name: guarded, kinds: [Pod], %[1]s: {guarded: "1"}}
`, kt.Set), tuning{})
			waitAllPodKeys(t, c, kt, "the old name's three "+kt.Name+"s on every pod", []string{ns}, func(_ string, m map[string]string) bool {
				return m["team"] == "a" && m["tier"] == "web" && m["guarded"] == "1"
			})
			old.stop()

			renamed := tuned(func(s *settings.Settings) {
				s.Identity = authority.NewIdentity("metawatch-team-a", authority.DefaultFieldManager)
				s.Guardrails.ProtectedKeys = []string{"guarded"}
			})
			// The new configuration reads team only: tier and guarded are in
			// view only as keys an adopted name owns.
			config := watch + fmt.Sprintf("rules:\n- {name: team, kinds: [Pod], %s: {team: a}}\n", kt.Set)
			adopted := func(_ string, m map[string]string) bool {
				_, tier := m["tier"]
				return !tier && m["team"] == "a" && m["guarded"] == "1"
			}
			inst := startInstance(t, config, renamed)
			waitAllPodKeys(t, c, kt, "tier released, team and guarded kept", []string{ns}, adopted)
			testkit.WaitFor(t, "team owned by the new name alone", testkit.Timeout, func() bool {
				for _, p := range podsIn(t, c, ns) {
					if owners := keyManagers(kt, p, "team", "guarded"); owners["team"] != "metawatch-team-a" || owners["guarded"] != authority.DefaultFieldManager {
						return false
					}
				}
				return true
			})
			inst.stop()

			inst = startInstance(t, config, renamed)
			waitCached(t, inst, []string{ns}, 20)
			waitAllPodKeys(t, c, kt, "the "+kt.Name+"s as adoption left them", []string{ns}, adopted)
			if n := inst.writes.Load(); n != 0 {
				t.Errorf("the adopted installation wrote %d times after a restart, want 0", n)
			}
		})
	}
}
