package rulecontroller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/eventdigest"
	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/rules"
	"github.com/metawatch/metawatch/pkg/settings"
)

// EventSource is the reportingController of metawatch's Events.
const EventSource = "metawatch"

// Setup adds one controller per watch to mgr: it reports label and annotation
// changes and, for a kind that has rules, keeps them. Each controller is named
// after its kind (e.g. "pod", "deployment.apps"), the controller label of
// controller-runtime's reconcile and workqueue metrics. s are the
// operator's settings, w the generation's wiring (see Wiring).
func Setup(mgr manager.Manager, watches []config.ResolvedWatch, rulesByKind map[string][]rules.Rule, s *settings.Settings, w Wiring) error {
	if s == nil || s.Identity == nil {
		return errors.New("controller: Setup needs the settings, with the installation's identity (settings.Defaults)")
	}
	if s.Mode == authority.Sharded && w.Share == nil {
		return errors.New("controller: the sharded mode needs the replica's share (Wiring.Share)")
	}
	if w.Audits == nil {
		w.Audits = NewAudits(true)
	}
	if w.Events == nil {
		d, err := newDigest(mgr)
		if err != nil {
			return err
		}
		w.Events = d
	}
	w.Guard.Identity = s.Identity
	st := setup{mgr: mgr, settings: s, wiring: w, owners: ownerKindsOf(watches)}
	if s.Mode == authority.Sharded {
		w.Audits.auditHeldBy(w.Share)
		if err := dropWhenLost(mgr, w.Audits, w.Share.OnHeldLost); err != nil {
			return err
		}
	}
	for _, watch := range watches {
		if watch.OwnersOnly {
			continue // cached for the owner chains only: the kinds copying from them watch it
		}
		if err := st.kind(watch, rulesByKind[watch.GVK.Kind]); err != nil {
			return fmt.Errorf("%s: setting up controller for %s: %w", watch.Path, watch.GVK.Kind, err)
		}
	}
	return nil
}

// newDigest is a Digest of mgr's own, for a Setup not handed the process's
// (tests): it writes as mgr's client config, and runs with mgr.
func newDigest(mgr manager.Manager) (*eventdigest.Digest, error) {
	sink, err := eventdigest.NewSink(mgr.GetConfig())
	if err != nil {
		return nil, err
	}
	d := eventdigest.New(sink, eventdigest.DefaultInstance(), mgr.GetLogger().WithName("events"))
	return d, mgr.Add(d)
}

// setup is what every kind's controller of one Setup is made from.
type setup struct {
	mgr      manager.Manager
	settings *settings.Settings
	wiring   Wiring
	owners   ownerKinds
}

// kind adds the controller of the kind w watches, whose rules are rs.
func (s setup) kind(w config.ResolvedWatch, rs []rules.Rule) error {
	mem := newMemory()
	kr := &kindReconciler{reader: s.mgr.GetCache(), gvk: w.GVK, gate: s.wiring.Gate, steps: []step{newReporter(mem)}}
	var ruler *ruleReconciler
	if len(rs) > 0 {
		ruler = s.ruleReconciler(w, rs, mem)
		kr.steps = append(kr.steps, ruler)
	}
	c, err := controller.New(controllerName(w), s.mgr, controller.Options{
		Reconciler: kr, MaxConcurrentReconciles: s.settings.MaxConcurrentReconciles,
		// One process runs one controller per kind at a time, but a new generation
		// of controllers (a restart in tests, a reload later) reuses the names.
		SkipNameValidation: ptr.To(true),
	})
	if err != nil {
		return err
	}
	if ruler != nil {
		if err := s.requeues(c, w, rs, ruler); err != nil {
			return err
		}
	}
	sources := kindSources(s.mgr, w, rs, s.owners, s.wiring.NamespacesUnreadable, mem, ruler)
	if s.wiring.Leading == nil {
		return watchAll(c, sources)
	}
	return watchOnceLeading(s.mgr, c, sources, s.wiring.Leading)
}

// requeues adds what queues the kind's objects again besides their events:
// buckets moving to this replica (sharded), the end of a relist that held
// removals, and the removal brake's approval.
func (s setup) requeues(c controller.Controller, w config.ResolvedWatch, rs []rules.Rule, ruler *ruleReconciler) error {
	if s.settings.Mode == authority.Sharded {
		if err := requeueOnMoves(s.mgr, c, w, rs, s.wiring.Share); err != nil {
			return err
		}
	}
	if s.wiring.Relists != nil {
		if err := requeueAfterRelists(s.mgr, c, w.GVK, s.wiring.Relists, ruler.relistHeld); err != nil {
			return err
		}
	}
	if s.wiring.Brake != nil {
		return requeueApproved(s.mgr, c, w.GVK, s.wiring.Brake)
	}
	return nil
}

// kindSources are what the kind's controller watches: its objects, and for
// its rules the owners and Namespaces they copy from.
func kindSources(mgr manager.Manager, w config.ResolvedWatch, rs []rules.Rule, owners ownerKinds, namespacesUnreadable bool, mem *memory, ruler *ruleReconciler) []source.Source {
	reader := mgr.GetCache()
	sources := []source.Source{source.Kind[client.Object](reader, metacache.NewObject(w.GVK), enqueueWithSnapshot(mem, ruler), metadataChanged(w.GVK.GroupKind().String()))}
	if ruler != nil && ruler.copiesFromOwners {
		for _, gvk := range owners {
			sources = append(sources, source.Kind[client.Object](reader, metacache.NewObject(gvk), ownerFanout(reader, ruler), ownerMetadataChanged()))
		}
	}
	if ruler != nil && rules.Copies(rs) && !namespacesUnreadable {
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
