package rulecontroller

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/metawatch/metawatch/pkg/sharding"
)

// Holder says whether this replica holds the bucket of the object with uid
// (sharding.Ring): sharded, the holder of an object's bucket is the one
// replica that audits it, as it is the one that writes it.
//
// Every replica caches some kinds whole (Namespaces, Nodes, the owner
// kinds), and a bucket's objects of the kinds cached by share reach the
// replica it is coming to before it holds the bucket: audited wherever they
// are cached, an object would be counted in metawatch_rule_violations and
// reported by an Event on every replica that caches it.
type Holder interface {
	Holds(uid types.UID) bool
}

// holds reports whether this audit counts the object with uid: always
// unsharded.
func (a *audit) holds(uid types.UID) bool {
	return a.holder == nil || a.holder.Holds(uid)
}

// trackLocked keeps key's uid while key counts for or was reported for
// anything, and forgets it after.
func (a *audit) trackLocked(key types.NamespacedName, uid types.UID) {
	_, failing := a.failing[key]
	_, inherited := a.inherited[key]
	_, held := a.off.held[key]
	if failing || inherited || held {
		a.uids[key] = uid
		return
	}
	delete(a.uids, key)
}

// dropUnheld forgets every object whose bucket this replica no longer holds:
// the gauges stop counting it at once, and its new holder counts it. What
// was reported of it is forgotten too, so that if the bucket comes back, the
// object is reported again: meanwhile another replica may have seen it end
// and start violating again.
func (a *audit) dropUnheld() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for key, uid := range a.uids {
		if !a.holds(uid) {
			a.forgetLocked(key)
		}
	}
}

// dropUnheld forgets, in every kind's audit, the objects of the buckets this
// replica no longer holds.
func (a *Audits) dropUnheld() {
	a.mu.Lock()
	kinds := make([]*audit, 0, len(a.kinds))
	for _, au := range a.kinds {
		kinds = append(kinds, au)
	}
	a.mu.Unlock()
	for _, au := range kinds {
		au.dropUnheld()
		au.dropUnheldLeft()
	}
}

// dropWhenLost makes the generation's audits drop the objects of the
// buckets this replica stops holding, as it stops, for as long as mgr runs.
//
// The check is made under each audit's lock, as is the one observe makes:
// the Ring forgets a bucket before it tells of it, so an observation either
// comes before the bucket went and is dropped here, or after and is refused.
func dropWhenLost(mgr manager.Manager, audits *Audits, lost func(func([]sharding.Bucket)) (remove func())) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		remove := lost(func([]sharding.Bucket) { audits.dropUnheld() })
		<-ctx.Done()
		remove()
		return nil
	}))
}

// auditHeldBy makes these audits count only the objects holder says this
// replica holds; nil: every object. Called before the audits of the kinds
// are made (Setup), which take it.
func (a *Audits) auditHeldBy(holder Holder) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.holder = holder
}
