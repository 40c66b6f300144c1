package reload

import (
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/metawatch/metawatch/pkg/admission"
	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/authority/pace"
	"github.com/metawatch/metawatch/pkg/brake"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/eventdigest"
	"github.com/metawatch/metawatch/pkg/rulecontroller"
	"github.com/metawatch/metawatch/pkg/sharding"
	"github.com/metawatch/metawatch/pkg/wire"
)

// generationOptions are what a generation takes from the process.
type generationOptions struct {
	controller rulecontroller.Options
	// limits are the operator's guardrails (flags), checked again as each
	// write is decided; the configuration's own write scope narrows theirs.
	limits *config.Guardrails
	// shutdownTimeout bounds the generation's stop (--graceful-shutdown-timeout, less a margin).
	shutdownTimeout time.Duration
	// onLoss reports a kind whose list or watch became forbidden while running.
	onLoss func(*generation, schema.GroupKind, error)
	// mode is the replicas' run mode, and sharding this replica's share
	// when sharded; guard builds the guard of writes behind a fence in
	// that mode (Reloader.guard).
	mode     authority.Mode
	sharding *Sharding
	guard    func(*authority.WriteFence) (authority.Guard, error)
	// wire is how the cache fetches (status-only updates, connections).
	wire wire.Options
	// stockInformers: client-go's informers, not the streaming ones.
	stockInformers bool
	// writes paces the generation's writes (nil: client-go's rate limit).
	writes *pace.Pacer
	// installation names the configuration's source on the admission
	// policies the generation makes.
	installation string
	// policyOwner is the ClusterRole that owns the admission policies.
	policyOwner string
	// leftovers collects why pairs to delete remain (RBAC).
	leftovers *admission.Leftovers
	// onAdmissionProblem reports each change of the reason a rule runs
	// without atCreation ("" once its policy is in place).
	onAdmissionProblem func(rule, problem string)
	log                logr.Logger
	// leading, when set, closes once this warm standby leads: the
	// controllers watch nothing until then (rulecontroller.Wiring.Leading).
	leading <-chan struct{}
	// brake is the operator's bound on mass removals (package brake), and
	// ledger the count every generation keeps in; order orders the
	// configuration's version (the ConfigMap's resourceVersion, 0: a file).
	brake  brake.Bound
	ledger *brake.Ledger
	order  uint64
	// identity is the installation's write identity: every write of the
	// generation passes it (it refuses while another writer shares the name).
	identity *authority.Identity
	// events folds what the controllers report per object (the process's).
	events *eventdigest.Digest
	// reports: the OpenReports writer reads this generation (the cached
	// objects per namespace, for the passes).
	reports bool
}

// wiring is what the generation hands its controllers: one guard, built
// here for the run mode and shared with the admission policies' Syncer.
func (g *generation) wiring(r resolved, opts generationOptions, versions rulecontroller.ResourceVersions) (rulecontroller.Wiring, error) {
	guard, err := opts.guard(g.fence)
	if err != nil {
		return rulecontroller.Wiring{}, err
	}
	guard.Identity = opts.identity
	w := rulecontroller.Wiring{Mode: opts.mode, Guard: guard, Gate: g.gate, Leading: opts.leading, Audits: g.audits,
		WritesFrozen: g.writesFrozen, Versions: versions, Brake: g.brake, CachedObjects: g.brakeCount(r, opts), Guardrails: opts.limits, Relists: g.relists,
		NamespacesUnreadable: g.forbiddenAtStart(namespaceKind) != nil, Events: opts.events,
		InScope: func(ns string) bool { return opts.limits.WriteScope.Allows(ns) && r.conf.WriteScope.Allows(ns) }}
	if opts.mode == authority.Sharded {
		w.Share = opts.sharding
	}
	return w, nil
}

// brakeCount is how many objects of a kind the removal brake's share is of:
// the cached ones; sharded, the whole kind's, reckoned from this replica's
// part of a namespaced kind (its cache covers its buckets of the 64), so
// that every replica counts against one cluster-wide bound in the record.
func (g *generation) brakeCount(r resolved, opts generationOptions) func(kind string) int {
	if opts.mode != authority.Sharded || opts.sharding == nil {
		return g.counts.Count
	}
	shared := map[string]bool{}
	for _, w := range r.watches {
		shared[w.GVK.GroupKind().String()] = w.Namespaced && !w.Owner
	}
	return func(kind string) int {
		n := g.counts.Count(kind)
		if covered := len(opts.sharding.Ring.Desired()); shared[kind] && covered > 0 {
			return n * sharding.Buckets / covered
		}
		return n
	}
}
