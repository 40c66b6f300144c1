package controller

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/brake"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/rules"
	"github.com/metawatch/metawatch/pkg/sharding"
)

// Options tune every controller.
type Options struct {
	MaxConcurrentReconciles int
	// DryRun computes and reports every write, and makes none.
	DryRun bool
	// Gate, when set, holds every reconcile until it is closed: a new
	// generation's controllers fill their queues from its synced cache, but
	// write only once the previous generation has stopped.
	Gate <-chan struct{}
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
	// Guard is what every write of these controllers passes: the
	// generation's write fence, and the shard gate and claim of its run
	// mode (package authority). The manager's client must be built with
	// authority.Wrap when it has a claim.
	Guard authority.Guard
	// BucketsGained, when set (sharding), registers a function told of the
	// buckets that come to this replica; see requeueGained.
	BucketsGained func(func([]sharding.Bucket)) (remove func())
	// Holder, when set (sharding), says which objects this replica audits:
	// those of the buckets it holds (see Holder). HeldGained and HeldLost
	// register functions told of the buckets it comes to hold and stops
	// holding: the audited kinds' objects of the first are queued to be
	// audited, the audits forget those of the others.
	Holder               Holder
	HeldGained, HeldLost func(func([]sharding.Bucket)) (remove func())
	// Versions, when set, gives the newest resourceVersion of a cached
	// object, for the precondition of every write (see wire.ResourceVersions).
	Versions ResourceVersions
	// Audits are the generation's require-rule audits; nil: a live set of its own.
	Audits *Audits
	// NamespacesUnreadable: Namespaces may not be listed, so copy rules get no
	// Namespace watch (their kinds are frozen, see WritesFrozen).
	NamespacesUnreadable bool
	// EventValues lets conflict Events carry the value another field manager
	// wrote (never for annotations of Secrets). Off, they name the manager
	// only: anyone who may list Events reads them.
	EventValues bool
	// FieldManager is the server-side apply field manager the rules write
	// as; the manager's cache must keep its managedFields entry
	// (manager.Options.FieldManager). Empty: FieldManager.
	FieldManager string
	// AdoptFieldManager, if set, is the field manager this installation
	// wrote as before: the keys it owns are taken over (see adopt.go). The
	// manager's cache must keep its entry (manager.Options.AdoptFieldManager).
	AdoptFieldManager string
	// Limits are the operator's guardrails: every write (set, copy, remove,
	// release) is checked against them again as it is decided. Nil:
	// config.DefaultLimits.
	Limits *config.Limits
	// Leading, when set, closes once this replica leads (a warm standby's
	// generation). Until then the controllers watch nothing, though their
	// informers are made and kept synced: a standby's queues would only grow
	// with every change the leader makes, and the keys of objects deleted
	// meanwhile would stay in them. Once it leads, the watches start and
	// hand the controllers every cached object, as at a start.
	Leading <-chan struct{}
	// Brake, when set, bounds how many objects of each kind lose keys
	// (removed or released) before the configuration is approved; see
	// package brake. Sets and copies are never held. CachedObjects says how
	// many objects of a kind the cache holds, for the bound's share.
	Brake         *brake.Brake
	CachedObjects func(kind string) int
}

// EventSource is the reportingController of metawatch's Events.
const EventSource = "metawatch"

// Setup adds one controller per watch to mgr: it reports label and annotation
// changes and, for a kind that has rules, keeps them. Each controller is named
// after its kind (e.g. "pod", "deployment.apps"), the controller label of
// controller-runtime's reconcile and workqueue metrics.
func Setup(mgr manager.Manager, watches []config.ResolvedWatch, rulesByKind map[string][]rules.Rule, opts Options) error {
	if opts.Audits == nil {
		opts.Audits = NewAudits(true)
	}
	opts.Audits.auditHeldBy(opts.Holder)
	if opts.HeldLost != nil {
		if err := dropWhenLost(mgr, opts.Audits, opts.HeldLost); err != nil {
			return err
		}
	}
	owners := ownerKindsOf(watches)
	for _, w := range watches {
		if w.OwnersOnly {
			continue // cached for the owner chains only: the kinds copying from them watch it
		}
		if err := setupKind(mgr, w, rulesByKind[w.GVK.Kind], owners, opts); err != nil {
			return fmt.Errorf("%s: setting up controller for %s: %w", w.Path, w.GVK.Kind, err)
		}
	}
	return nil
}

func setupKind(mgr manager.Manager, w config.ResolvedWatch, rs []rules.Rule, owners ownerKinds, opts Options) error {
	mem := newMemory()
	report := newReporter(mem)
	var ruler *ruleReconciler
	kr := &kindReconciler{reader: mgr.GetCache(), gvk: w.GVK, gate: opts.Gate, steps: []step{report}}
	if len(rs) > 0 {
		writer := authority.NewWriter(mgr.GetClient(), opts.Guard)
		ruler = newRuleReconciler(mgr.GetCache(), writer, mgr.GetEventRecorder(EventSource), w.GVK, rs, opts.DryRun, mem)
		ruler.writesFrozen, ruler.inScope = opts.WritesFrozen, opts.InScope
		ruler.live, ruler.versions, ruler.eventValues = mgr.GetAPIReader(), opts.Versions, opts.EventValues
		ruler.audit = opts.Audits.forKind(kindLabel(w.GVK), mgr.GetEventRecorder(EventSource))
		ruler.ownerKinds, ruler.copiesFromOwners, ruler.watchedNamespaces = owners, rules.CopiesFromOwners(rs), w.Namespaces
		ruler.packed = metacache.Packed(w)
		ruler.fieldManager = cmp.Or(opts.FieldManager, authority.DefaultFieldManager)
		ruler.adoptFrom = opts.AdoptFieldManager
		ruler.brake, ruler.cachedCount = opts.Brake, opts.CachedObjects
		if opts.Limits != nil {
			ruler.limits = opts.Limits
		}
		ruler.kindWritable = ruler.limits.AllowsKind(w.GVK.GroupKind(), w.Namespaced)
		kr.steps = append(kr.steps, ruler)
	}
	c, err := controller.New(controllerName(w), mgr, controller.Options{
		Reconciler: kr, MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
		// One process runs one controller per kind at a time, but a new generation
		// of controllers (a restart in tests, a reload later) reuses the names.
		SkipNameValidation: ptr.To(true),
	})
	if err != nil {
		return err
	}
	if ruler != nil {
		if err := requeueOnMoves(mgr, c, w, rs, opts); err != nil {
			return err
		}
		if opts.Brake != nil {
			if err := requeueApproved(mgr, c, w.GVK, opts.Brake); err != nil {
				return err
			}
		}
	}
	sources := kindSources(mgr, w, rs, owners, opts, mem, ruler)
	if opts.Leading == nil {
		return watchAll(c, sources)
	}
	return watchOnceLeading(mgr, c, sources, opts.Leading)
}

// kindSources are what the kind's controller watches: its objects, and for
// its rules the owners and Namespaces they copy from.
func kindSources(mgr manager.Manager, w config.ResolvedWatch, rs []rules.Rule, owners ownerKinds, opts Options, mem *memory, ruler *ruleReconciler) []source.Source {
	reader := mgr.GetCache()
	sources := []source.Source{source.Kind[client.Object](reader, metacache.NewObject(w.GVK), enqueueWithSnapshot(mem, ruler), metadataChanged(w.GVK.GroupKind().String()))}
	if ruler != nil && ruler.copiesFromOwners {
		for _, gvk := range owners {
			sources = append(sources, source.Kind[client.Object](reader, metacache.NewObject(gvk), ownerFanout(reader, ruler), ownerMetadataChanged()))
		}
	}
	if ruler != nil && rules.Copies(rs) && !opts.NamespacesUnreadable {
		sources = append(sources, source.Kind[client.Object](reader, metacache.NewObject(namespaceGVK), namespaceFanout(reader, w.GVK, ruler), namespaceMetadataChanged()))
	}
	return sources
}

func watchAll(c controller.Controller, sources []source.Source) error {
	for _, s := range sources {
		if err := c.Watch(s); err != nil {
			return err
		}
	}
	return nil
}

// watchOnceLeading starts the sources once leading closes. Their informers
// are made now, so that the generation's cache syncs them before it opens
// and a new leader lists nothing: starting a source on a synced informer
// hands the controller every cached object at once.
func watchOnceLeading(mgr manager.Manager, c controller.Controller, sources []source.Source, leading <-chan struct{}) error {
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		select {
		case <-leading:
			return watchAll(c, sources)
		case <-ctx.Done():
			return nil
		}
	})); err != nil {
		return err
	}
	return nil
}

// controllerName is the name of the controller for w's kind.
func controllerName(w config.ResolvedWatch) string {
	return strings.ToLower(w.GVK.GroupKind().String())
}
