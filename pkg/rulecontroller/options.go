package rulecontroller

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/brake"
	"github.com/metawatch/metawatch/pkg/eventdigest"
	"github.com/metawatch/metawatch/pkg/sharding"
)

// Wiring is what a generation hands its controllers: the guard built for
// it, its gates, its view of the configuration and of the cluster. Each
// generation wires its own; see reload. What the operator set, the same for
// every generation, comes apart, whole (settings.Settings).
type Wiring struct {
	// Guard is what every write of these controllers passes: the
	// generation's write fence, and the shard gate and claim of its run
	// mode (authority.Mode.Guard); its Identity is the settings'. The manager's client must be built with
	// authority.Wrap when it has a claim.
	Guard authority.Guard
	// Share is this replica's part of the objects, sharded (sharding.Ring
	// through reload.Sharding): required then, unused in the other modes.
	Share Share
	// Gate, when set, holds every reconcile until it is closed: a new
	// generation's controllers fill their queues from its synced cache, but
	// write only once the previous generation has stopped.
	Gate <-chan struct{}
	// Leading, when set, closes once this replica leads (a warm standby's
	// generation that does not lead yet). Until then the controllers watch
	// nothing, though their informers are made and kept synced: a standby's
	// queues would only grow with every change the leader makes, and the
	// keys of objects deleted meanwhile would stay in them. Once it leads,
	// the watches start and hand the controllers every cached object, as at
	// a start.
	Leading <-chan struct{}
	// WritesFrozen, when set, says why a kind's rules may not write now (its
	// own list or watch, or that of the Namespaces it copies from, is
	// forbidden: the cache no longer follows the cluster), or nil. A frozen
	// kind's objects are neither written nor released.
	WritesFrozen func(schema.GroupKind) error
	// InScope, when set, says whether rules may write in a namespace (the
	// write scope); a Namespace object is in its own namespace, other
	// cluster-scoped objects in "". Objects out of scope are left alone:
	// neither written nor released, nor audited.
	InScope func(namespace string) bool
	// Versions, when set, gives the newest resourceVersion of a cached
	// object, for the precondition of every write (see wire.ResourceVersions).
	Versions ResourceVersions
	// Audits are the generation's require-rule audits; nil: a live set of its own.
	Audits *Audits
	// NamespacesUnreadable: Namespaces may not be listed, so copy rules get no
	// Namespace watch (their kinds are frozen, see WritesFrozen).
	NamespacesUnreadable bool
	// Brake, when set, bounds how many objects of each kind lose keys
	// (removed or released) before the configuration is approved; see
	// package brake. Sets and copies are never held. CachedObjects says how
	// many objects of a kind the cache holds, for the bound's share.
	Brake         *brake.Brake
	CachedObjects func(kind string) int
	// Events folds what the controllers report per object (an object
	// starting to violate a rule, a conflict, a fight, keys a guardrail
	// leaves) into aggregate Events, one per reason, rule, kind and
	// namespace (package eventdigest): the process's one, so that one bound
	// holds for its Event writes. Nil: Setup makes one for mgr.
	Events *eventdigest.Digest
	// Relists, when set, says which kinds relist: their removals and
	// releases wait for the relist's end (relist.go).
	Relists Relists
}

// holder is the sharded replica's share as a Holder, nil unsharded.
func (w Wiring) holder(mode authority.Mode) Holder {
	if mode != authority.Sharded || w.Share == nil {
		return nil
	}
	return w.Share
}

// Share is a sharded replica's part of the objects: the objects it audits
// (Holder: those of the buckets it holds), and the buckets as they come and
// go. Each On function registers fn and returns its removal.
type Share interface {
	Holder
	// OnGained: buckets coming to this replica (see requeueGained).
	OnGained(fn func([]sharding.Bucket)) (remove func())
	// OnHeldGained, OnHeldLost: buckets it comes to hold, and stops
	// holding: the audited kinds' objects of the first are queued to be
	// audited, the audits forget those of the others.
	OnHeldGained(fn func([]sharding.Bucket)) (remove func())
	OnHeldLost(fn func([]sharding.Bucket)) (remove func())
}
