package reload

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/metawatch/metawatch/pkg/acceptance"
	"github.com/metawatch/metawatch/pkg/access"
	"github.com/metawatch/metawatch/pkg/admission"
	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/brake"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/reports"
	"github.com/metawatch/metawatch/pkg/rulecontroller"
	"github.com/metawatch/metawatch/pkg/rules"
	"github.com/metawatch/metawatch/pkg/telemetry"
	"github.com/metawatch/metawatch/pkg/wire"
)

// generation is one configuration running: its own cache, informers and
// controllers (a Manager without servers or leader election; the process's
// Manager has those). Controllers start gated: they fill their queues from the
// synced cache but write only after open, once the previous generation stopped.
type generation struct {
	number    int64
	hash      string
	hashValue float64
	watches   []config.ResolvedWatch
	forbidden []access.Forbidden // at build time
	lost      *access.AccessLoss // since then
	// relists says which of the cache's kinds relist (their removals wait).
	relists *metacache.Relists
	copiers sets.Set[schema.GroupKind]
	// ownerCopiers are the kinds whose rules copy from owners, ownerKinds
	// the kinds of the owner chains they read.
	ownerCopiers, ownerKinds sets.Set[schema.GroupKind]
	audits                   *rulecontroller.Audits
	policies                 *admission.Syncer // of the rules with atCreation
	fence                    *authority.WriteFence
	mgr                      manager.Manager
	counts                   *metacache.ObjectCounts
	reportCounts             *reports.NamespaceCounts // with --open-reports: the rule kinds' objects per namespace
	brake                    *brake.Brake             // bounds the objects losing keys, until approved
	gate                     chan struct{}
	// stopping closes when stop begins: a standby's generation waiting to
	// open never opens after it (openUnlessStopping, under openMu).
	stopping     chan struct{}
	stoppingOnce sync.Once
	openMu       sync.Mutex
	cancel       context.CancelFunc
	done         chan error
	// rebuild: a forbidden watch became allowed; run the same configuration anew.
	rebuild bool
}

// resolved is a configuration checked against the cluster, ready to run.
type resolved struct {
	conf      *config.Config
	watches   []config.ResolvedWatch // the identity may list these
	forbidden []access.Forbidden     // and not these
}

// resolve accepts conf as the controller runs it (acceptance.Accept): a
// forbidden watch is set aside, any other failure rejects the configuration.
func resolve(ctx context.Context, cfg *rest.Config, conf *config.Config, limits *config.Guardrails) (resolved, []string, error) {
	a, warnings, err := acceptance.Accept(ctx, cfg, conf, limits)
	return resolved{conf: conf, watches: a.Allowed, forbidden: a.Forbidden}, warnings, err
}

// CheckAgainstCluster is the check a configuration passes before it runs, for
// start-up: a selector the server rejects or an unknown kind fails; a
// forbidden kind does not (the running generation reports it and serves the
// others). The Reloader checks again when it starts the configuration: a
// standby replica may lead hours later, when RBAC may have changed.
func CheckAgainstCluster(ctx context.Context, cfg *rest.Config, conf *config.Config, limits *config.Guardrails) error {
	_, _, err := resolve(ctx, cfg, conf, limits)
	return err
}

// newGeneration builds generation number, running the configuration r
// resolved (of version order): the settings and the parts of the process
// (the ledger, the Events, the sharding) it takes from rl.
func (rl *Reloader) newGeneration(ctx context.Context, number int64, r resolved, order uint64) (*generation, error) {
	s, cfg := rl.Settings, rl.Config
	g := &generation{number: number, watches: r.watches, forbidden: r.forbidden, gate: make(chan struct{}), stopping: make(chan struct{}), done: make(chan error, 1),
		audits: rulecontroller.NewAudits(false), fence: authority.NewWriteFence(), relists: metacache.NewRelists()}
	g.hash, g.hashValue = config.Hash(r.conf)
	g.lost = access.NewAccessLoss(func(kind schema.GroupKind, err error) {
		rl.reportLoss(g, kind, err)
	})
	versions := wire.NewResourceVersions()
	mopts := metamanager.Options{MetricsBindAddress: "0",
		GracefulShutdownTimeout: s.ShutdownTimeout, AccessLoss: g.lost, Wire: s.Wire, Versions: versions, Identity: s.Identity,
		Writes: s.Pacer, StockInformers: s.StockInformers, Relists: g.relists}
	if s.Mode == authority.Sharded {
		mopts.ShardFilter = rl.Sharding.cacheFilter()
	}
	mgr, err := metamanager.New(cfg, r.watches, mopts)
	if err != nil {
		return nil, err
	}
	if g.counts, err = metacache.TrackCachedObjects(ctx, mgr.GetCache(), r.watches); err != nil {
		return nil, err
	}
	rulesByKind, err := rules.Compile(r.conf)
	if err != nil {
		return nil, config.Invalid(err)
	}
	if s.OpenReports {
		var ruled []schema.GroupVersionKind
		for _, w := range r.watches {
			if !w.OwnersOnly && len(rulesByKind[w.GVK.Kind]) > 0 {
				ruled = append(ruled, w.GVK)
			}
		}
		if g.reportCounts, err = reports.CountByNamespace(ctx, mgr.GetCache(), ruled); err != nil {
			return nil, err
		}
	}
	g.copiers = kindsWhoseRules(r.watches, rulesByKind, rules.Copies)
	g.ownerCopiers = kindsWhoseRules(r.watches, rulesByKind, rules.CopiesFromOwners)
	g.ownerKinds = ownerChainKinds(r.watches, r.forbidden)
	g.brake = brake.New(s.RemovalBrake, g.hash, order, rl.ledger)
	// While it holds, the generation keeps the record saying so: no
	// replica, and no restart, begins the count again meanwhile.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error { g.brake.KeepHolding(ctx); return nil })); err != nil {
		return nil, err
	}
	wiring, err := g.wiring(rl, r, versions)
	if err != nil {
		return nil, err
	}
	if err := rulecontroller.Setup(mgr, r.watches, rulesByKind, s, wiring); err != nil {
		return nil, err
	}
	if err := g.addPolicies(rl, mgr, r, wiring.Guard); err != nil {
		return nil, err
	}
	g.mgr = mgr
	return g, nil
}

// AdmissionResync is how often a generation checks its admission policies
// again (admission.Syncer.Resync): zero is the Syncer's own period, a
// minute. Tests shorten it, as they do ForbiddenRecheckInterval.
var AdmissionResync time.Duration

// addPolicies adds the Syncer of the rules' admission policies (atCreation)
// to the generation: it writes as its controllers do, through their guard.
func (g *generation) addPolicies(rl *Reloader, mgr manager.Manager, r resolved, guard authority.Guard) error {
	dc, err := discovery.NewDiscoveryClientForConfig(rl.Config)
	if err != nil {
		return err
	}
	s := rl.Settings
	g.policies = &admission.Syncer{Rules: admission.Rules(r.conf, r.watches, &s.Guardrails.WriteScope, r.conf.WriteScope), Installation: rl.installation(),
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Discovery: dc, Guard: guard, Gate: g.gate,
		Log: rl.Log.WithName("admission-policies"), OnProblem: rl.reportAdmissionProblem, Leftovers: rl.leftovers, Owner: s.PolicyOwner,
		Resync: AdmissionResync}
	if s.DryRun {
		if len(g.policies.Rules) > 0 {
			rl.Log.Info("dry run: the admission policies of rules with atCreation are not written", "rules", len(g.policies.Rules))
		}
		return nil
	}
	return mgr.Add(g.policies)
}

var namespaceKind = corev1.SchemeGroupVersion.WithKind("Namespace").GroupKind()

// kindsWhoseRules are the watched kinds whose rules do what does says (copy
// from the Namespace, or from owners).
func kindsWhoseRules(watches []config.ResolvedWatch, byKind map[string][]rules.Rule, does func([]rules.Rule) bool) sets.Set[schema.GroupKind] {
	out := sets.New[schema.GroupKind]()
	for _, w := range watches {
		if !w.OwnersOnly && does(byKind[w.GVK.Kind]) { // no rule names an owner-only watch
			out.Insert(w.GVK.GroupKind())
		}
	}
	return out
}

// ownerChainKinds are the owner chains' kinds, forbidden ones included: a
// chain with a kind the cache cannot hold ends early, and its objects would
// look ownerless.
func ownerChainKinds(watches []config.ResolvedWatch, forbidden []access.Forbidden) sets.Set[schema.GroupKind] {
	owners := sets.New[schema.GroupKind]()
	for _, f := range forbidden {
		if f.Watch.Owner {
			owners.Insert(f.Watch.GVK.GroupKind())
		}
	}
	for _, w := range watches {
		if w.Owner {
			owners.Insert(w.GVK.GroupKind())
		}
	}
	return owners
}

// writesFrozen says why kind's rules may not write: its informer lost its
// access, or it copies from Namespaces that may not be read (forbidden at
// build time, or since). Writing then would act on a cache that no longer
// follows the cluster, and releasing copied keys would strip them everywhere.
func (g *generation) writesFrozen(kind schema.GroupKind) error {
	if err := g.lost.Forbidden(kind); err != nil {
		return fmt.Errorf("%s: writes frozen, its list or watch is now forbidden: %w", kind, err)
	}
	if g.ownerCopiers.Has(kind) {
		for owner := range g.ownerKinds {
			if err := errors.Join(g.forbiddenAtStart(owner), g.lost.Forbidden(owner)); err != nil {
				return fmt.Errorf("%s: writes frozen, its rules copy from owners, and the list or watch of %s is forbidden: %w", kind, owner, err)
			}
		}
	}
	if !g.copiers.Has(kind) {
		return nil
	}
	if err := g.forbiddenAtStart(namespaceKind); err != nil {
		return fmt.Errorf("%s: writes frozen, its rules copy from Namespaces: %w", kind, err)
	}
	if err := g.lost.Forbidden(namespaceKind); err != nil {
		return fmt.Errorf("%s: writes frozen, its rules copy from Namespaces, whose list or watch is now forbidden: %w", kind, err)
	}
	return nil
}

func (g *generation) forbiddenAtStart(kind schema.GroupKind) error {
	for _, f := range g.forbidden {
		if f.Watch.GVK.GroupKind() == kind {
			return f.Err
		}
	}
	return nil
}

// frozen lists why kinds are frozen, one line per kind.
func (g *generation) frozen() []string {
	var out []string
	for _, w := range g.watches {
		if err := g.writesFrozen(w.GVK.GroupKind()); err != nil {
			out = append(out, err.Error())
		}
	}
	return out
}

// publishFrozen sets metawatch_writes_frozen for every watched kind.
func (g *generation) publishFrozen() {
	for _, w := range g.watches {
		frozen := 0.0
		if g.writesFrozen(w.GVK.GroupKind()) != nil {
			frozen = 1
		}
		telemetry.WritesFrozen.WithLabelValues(w.GVK.GroupKind().String()).Set(frozen)
	}
}

// start runs the generation's cache and (gated) controllers until stop.
func (g *generation) start(ctx context.Context) {
	ctx, g.cancel = context.WithCancel(ctx)
	go func() { g.done <- g.mgr.Start(ctx) }()
}

// waitSynced waits for every informer of the generation, or its failure.
func (g *generation) waitSynced(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	synced := make(chan bool, 1)
	go func() { synced <- g.mgr.GetCache().WaitForCacheSync(ctx) }()
	select {
	case ok := <-synced:
		if !ok {
			return fmt.Errorf("generation %d: informers did not sync within %s", g.number, timeout)
		}
		return nil
	case err := <-g.done:
		g.done <- err // for stop
		return fmt.Errorf("generation %d stopped while syncing: %w", g.number, err)
	}
}

// open lets the controllers write and makes this generation's state the metrics'.
func (g *generation) open() {
	g.counts.Publish()
	g.audits.Publish()
	g.brake.Publish()
	telemetry.WritesFrozen.Reset()
	g.publishFrozen()
	telemetry.WatchReady.Reset()
	telemetry.AdmissionPolicyReady.Reset()
	for _, w := range g.watches {
		ready := 1.0
		if g.lost.Forbidden(w.GVK.GroupKind()) != nil {
			ready = 0
		}
		telemetry.WatchReady.WithLabelValues(w.GVK.GroupKind().String()).Set(ready)
	}
	for _, f := range g.forbidden {
		telemetry.WatchReady.WithLabelValues(f.Watch.GVK.GroupKind().String()).Set(0)
	}
	telemetry.ConfigGeneration.Set(float64(g.number))
	telemetry.ConfigHash.Set(g.hashValue)
	close(g.gate)
}

// isOpen reports whether g writes (its gate is open).
func (g *generation) isOpen() bool {
	select {
	case <-g.gate:
		return true
	default:
		return false
	}
}

// openUnlessStopping opens g unless its stop has begun, and reports whether it did.
func (g *generation) openUnlessStopping() bool {
	g.openMu.Lock()
	defer g.openMu.Unlock()
	select {
	case <-g.stopping:
		return false
	default:
		g.open()
		return true
	}
}

// stop closes the write fence (no new write; those in flight finish), then
// stops the controllers and the cache, all within timeout. It reports whether
// every write finished: only then may another writer start.
func (g *generation) stop(timeout time.Duration) (writesStopped bool, err error) {
	g.openMu.Lock()
	g.stoppingOnce.Do(func() { close(g.stopping) })
	g.openMu.Unlock()
	g.counts.Retire()
	g.audits.Retire()
	g.brake.Retire()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	writesStopped = g.fence.Close(ctx)
	g.cancel()
	select {
	case err = <-g.done:
	case <-ctx.Done():
		err = fmt.Errorf("generation %d did not stop within %s", g.number, timeout)
	}
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return writesStopped, err
}

// ready fails while an informer has not synced or a watch is forbidden, naming why.
func (g *generation) ready(req *http.Request) error {
	var problems []string
	for _, f := range g.forbidden {
		problems = append(problems, f.Err.Error())
	}
	for _, kind := range g.lost.Kinds() {
		problems = append(problems, g.lost.Forbidden(kind).Error())
	}
	problems = append(problems, g.frozen()...)
	problems = append(problems, g.policies.Problems()...)
	if err := metacache.SyncedCheck(g.mgr.GetCache(), g.watches)(req); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}
