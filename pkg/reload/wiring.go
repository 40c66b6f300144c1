package reload

import (
	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/rulecontroller"
	"github.com/metawatch/metawatch/pkg/sharding"
)

// wiring is what the generation hands its controllers: one guard, built
// here for the run mode and shared with the admission policies' Syncer.
func (g *generation) wiring(rl *Reloader, r resolved, versions rulecontroller.ResourceVersions) (rulecontroller.Wiring, error) {
	guard, err := rl.guard(g.fence)
	if err != nil {
		return rulecontroller.Wiring{}, err
	}
	guard.Identity = rl.Settings.Identity
	scope := &rl.Settings.Guardrails.WriteScope
	w := rulecontroller.Wiring{Guard: guard, Gate: g.gate, Leading: rl.notLeadingYet(), Audits: g.audits,
		WritesFrozen: g.writesFrozen, Versions: versions, Brake: g.brake, CachedObjects: g.brakeCount(rl, r), Relists: g.relists,
		NamespacesUnreadable: g.forbiddenAtStart(namespaceKind) != nil, Events: rl.Events,
		InScope: func(ns string) bool { return scope.Allows(ns) && r.conf.WriteScope.Allows(ns) }}
	if rl.Settings.Mode == authority.Sharded {
		w.Share = rl.Sharding
	}
	return w, nil
}

// brakeCount is how many objects of a kind the removal brake's share is of:
// the cached ones; sharded, the whole kind's, reckoned from this replica's
// part of a namespaced kind (its cache covers its buckets of the 64), so
// that every replica counts against one cluster-wide bound in the record.
func (g *generation) brakeCount(rl *Reloader, r resolved) func(kind string) int {
	if rl.Settings.Mode != authority.Sharded || rl.Sharding == nil {
		return g.counts.Count
	}
	shared := map[string]bool{}
	for _, w := range r.watches {
		shared[w.GVK.GroupKind().String()] = w.Namespaced && !w.Owner
	}
	return func(kind string) int {
		n := g.counts.Count(kind)
		if covered := len(rl.Sharding.Ring.Desired()); shared[kind] && covered > 0 {
			return n * sharding.Buckets / covered
		}
		return n
	}
}
