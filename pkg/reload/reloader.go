package reload

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/metawatch/metawatch/pkg/admission"
	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/brake"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/eventdigest"
	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/rulecontroller"
	"github.com/metawatch/metawatch/pkg/settings"
	"github.com/metawatch/metawatch/pkg/telemetry"
)

// Event reasons on the selectors ConfigMap.
const (
	ReasonInvalidConfig = "InvalidConfig"
	ReasonReloaded      = "ConfigReloaded"
	ReasonForbidden     = "WatchForbidden"
	// ReasonRetrying: a valid configuration could not start for a reason that
	// is not its own (the API server unreachable, a sync too slow); retried.
	ReasonRetrying = "ReloadRetrying"
	// ReasonAtCreationUnavailable: a rule with atCreation runs without it
	// (the API server does not serve admission policies, RBAC forbids them,
	// or the server refused one).
	ReasonAtCreationUnavailable = "AtCreationUnavailable"
)

// SyncTimeout bounds how long a new generation may take to sync before the
// attempt is given up (and retried) and the running generation kept.
var SyncTimeout = 10 * time.Minute

// Reloader runs the configuration as generations and swaps them when the
// selectors ConfigMap changes: parse and validate; if valid, build the new
// generation, start it, wait for its sync, stop the old one, then let the new
// one write. A bad edit, or a deleted ConfigMap, keeps the running generation,
// with an Event, a log line and metrics that say so; a failure that is not
// the configuration's fault is retried with backoff.
//
// It is a Runnable that runs on the leader only, or on every replica when
// sharded or warm (NeedLeaderElection). Add it with AddTo, which also adds
// the follower every replica runs.
type Reloader struct {
	// Config reaches the API server; required (AddTo says so).
	Config *rest.Config
	Source Source
	// Settings are the operator's, handed whole to every generation and
	// its controllers; nil: settings.Defaults (AddTo).
	Settings *settings.Settings
	// Recorder records the Events on the selectors ConfigMap; nil: the
	// Manager's recorder for rulecontroller.EventSource (AddTo).
	Recorder events.EventRecorder
	Log      logr.Logger
	// Initial is the configuration of a --config-file, validated at start-up.
	// A ConfigMap is read when this replica starts leading, not at start-up.
	Initial *config.Config
	// Leader is the leader Lease's claim (authority.LeaderClaim) in the modes
	// that elect a leader; nil in the others.
	Leader authority.Claim
	// Sharding is this replica's share of the objects in the sharded mode
	// (see Sharding); nil in the others.
	Sharding *Sharding
	// BrakeRecord is the ConfigMap where the removal brake keeps its count;
	// zero: BrakeRecordFor the Source (for a file: this process's memory only).
	BrakeRecord types.NamespacedName
	elected     <-chan struct{} // the Manager's: closed once this replica leads

	// Events folds what the controllers of every generation report per
	// object into aggregate Events, within one bound on Event writes for the
	// process (package eventdigest); nil: one made by AddTo, whose Events
	// about cluster-scoped objects regard the selectors ConfigMap.
	Events       *eventdigest.Digest
	reportsFence *authority.WriteFence // the OpenReports writer's writes

	// ledger is the removal brake's count, shared by every generation.
	ledger *brake.Ledger

	follower      *follower
	pruner        *admission.Pruner
	leftovers     *admission.Leftovers // of the pruner and the generations' Syncers
	lastTransient *corev1.ConfigMap    // the ConfigMap whose valid version is being retried
	accessLost    chan struct{}        // wakes the loop to recheck forbidden watches

	mu            sync.Mutex
	started       bool
	current       *generation
	waiting       string // why there is no generation yet
	writesStopped bool   // at shutdown, every write of the last generation finished
	// admissionReported is the last reason reported per rule with
	// atCreation ("" once in place).
	admissionReported map[string]string
	// approvalProblem is why the ConfigMap's approval approvalValue cannot
	// apply ("" if it can, or there is none).
	approvalProblem, approvalValue string
}

// AddTo adds the Reloader to mgr and, for a ConfigMap source, the follower
// that every replica runs from its start.
func (r *Reloader) AddTo(mgr manager.Manager) error {
	r.accessLost = make(chan struct{}, 1)
	if r.Settings == nil {
		defaults := settings.Defaults()
		r.Settings = &defaults
	}
	if r.Settings.Identity == nil {
		return errors.New("reload: Reloader.Settings has no Identity: start from settings.Defaults, which makes one")
	}
	if r.Config == nil {
		// Not the Manager's: that one strips managedFields already, and each
		// generation's Manager adds its own stripping transport.
		return errors.New("reload: Reloader.Config is not set: give it the rest.Config the Manager was built from")
	}
	if err := r.modeValid(); err != nil {
		return err
	}
	r.elected = mgr.Elected()
	r.Settings.Identity.OnRefused(r.reportSharedName)
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(rulecontroller.EventSource)
	}
	if r.Settings.Mode == authority.WarmStandby {
		r.Recorder = leaderEvents{EventRecorder: r.Recorder, elected: r.elected}
	}
	if err := r.addEvents(mgr); err != nil {
		return err
	}
	if r.Source.ConfigMap != "" {
		key, err := r.Source.configMapKey()
		if err != nil {
			return err
		}
		r.follower = newFollower(r.Config, key)
		if err := mgr.Add(r.follower); err != nil {
			return err
		}
	}
	// The writes outside generations (the pruner's deletes, the brake's
	// record) leave through one client: paced, and checked against the
	// claim as they are sent.
	fenced, err := metamanager.WriteClient(r.Config, r.Settings.Pacer, client.Options{})
	if err != nil {
		return err
	}
	r.addLedger(fenced)
	if err := r.addPruner(mgr, fenced); err != nil {
		return err
	}
	if err := r.addReports(mgr); err != nil {
		return err
	}
	telemetry.SetShardingMode(r.shardingMode())
	if r.Settings.Mode == authority.Sharded {
		r.Sharding.watch()
	}
	return mgr.Add(r)
}

// NeedLeaderElection is true unless sharded or warm: generations write, so
// only the leader runs them; sharded, every replica does, on its own share;
// warm, every replica does, and only the leader's open (openWhenLeading).
func (r *Reloader) NeedLeaderElection() bool { return !r.Settings.Mode.EveryReplicaRuns() }

// Start runs the configuration until ctx ends: the file's, or the ConfigMap's
// as it is now and as it changes.
func (r *Reloader) Start(ctx context.Context) error {
	if r.accessLost == nil {
		return errors.New("reload: the Reloader was added to the Manager without AddTo, which sets up its follower and defaults")
	}
	if r.Settings.Mode == authority.Sharded && !r.Sharding.awaitAssignment(ctx, r.setWaiting) {
		return nil
	}
	r.setWaiting("waiting for a valid configuration in " + r.Source.String())
	defer r.stopCurrent()
	if r.follower == nil {
		if r.Initial != nil {
			if err := r.apply(ctx, r.Initial, 0, nil); err != nil {
				return fmt.Errorf("starting the configuration: %w", err)
			}
		}
		r.followFile(ctx)
		return nil
	}
	r.followConfigMap(ctx)
	return nil
}

// apply resolves conf and swaps to a generation running it. superseded, if
// not nil, is asked before the new generation opens: a generation built from
// a version older than the newest valid one is never opened.
func (r *Reloader) apply(ctx context.Context, conf *config.Config, order uint64, superseded func() bool) error {
	res, warnings, err := resolve(ctx, r.Config, conf, &r.Settings.Guardrails)
	for _, w := range warnings {
		r.Log.Info("warning: " + w)
	}
	if err != nil {
		return err
	}
	return r.swap(ctx, res, order, superseded)
}

func (r *Reloader) swap(ctx context.Context, res resolved, order uint64, superseded func() bool) error {
	old := r.running()
	number := int64(1)
	if old != nil {
		number = old.number + 1
	}
	next, err := r.newGeneration(ctx, number, res, order)
	if err != nil {
		return err
	}
	r.watchBrake(next)
	next.start(ctx)
	if err := next.waitSynced(ctx, SyncTimeout); err != nil {
		_, _ = next.stop(r.Settings.ShutdownTimeout)
		return err
	}
	if superseded != nil && superseded() {
		_, _ = next.stop(r.Settings.ShutdownTimeout)
		return errSuperseded
	}
	if old != nil {
		stopped, err := old.stop(r.Settings.ShutdownTimeout)
		if err != nil {
			r.Log.Error(err, "stopping the previous generation", "generation", old.number)
		}
		if !stopped { // two generations must never write at once
			_, _ = next.stop(r.Settings.ShutdownTimeout)
			return fmt.Errorf("generation %d still had writes in flight after %s; not starting generation %d", old.number, r.Settings.ShutdownTimeout, next.number)
		}
	}
	if old != nil {
		next.audits.Inherit(old.audits) // violations old reported: no second Event
	}
	r.setCurrent(next)
	leading := r.openWhenLeading(ctx, next)
	telemetry.ConfigLastReloadSuccessful.Set(1)
	r.reportForbidden(next)
	r.Log.Info("configuration running", "generation", next.number, "hash", next.hash[:12], "watches", len(next.watches), "forbidden", len(next.forbidden),
		"writes", map[bool]string{true: "open", false: "held until this standby leads"}[leading])
	return nil
}

// openWhenLeading lets g write now if this replica leads (always, without
// leader election), and reports so; a warm standby's g opens once it leads,
// if g still runs then.
func (r *Reloader) openWhenLeading(ctx context.Context, g *generation) (leading bool) {
	select {
	case <-r.elected:
		g.open()
		return true
	default:
	}
	go func() {
		select {
		case <-r.elected:
		case <-g.stopping:
			return
		case <-ctx.Done():
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.current == g && g.openUnlessStopping() {
			r.Log.Info("leading: the warm generation writes", "generation", g.number)
		}
	}()
	return false
}

// notLeadingYet is the channel that closes once this replica leads, for a
// warm standby that does not lead yet; nil otherwise.
func (r *Reloader) notLeadingYet() <-chan struct{} {
	select {
	case <-r.elected:
		return nil
	default:
		return r.elected
	}
}

func (r *Reloader) reportForbidden(g *generation) {
	for _, f := range g.forbidden {
		r.Log.Error(f.Err, "watch not served: RBAC forbids it; the other kinds are served", "kind", f.Watch.GVK.GroupKind().String())
	}
}

func (r *Reloader) running() *generation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.current
}

func (r *Reloader) setCurrent(g *generation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.current, r.waiting = g, ""
}

func (r *Reloader) stopCurrent() {
	g := r.running()
	stopped := true
	if g != nil {
		var err error
		if stopped, err = g.stop(r.Settings.ShutdownTimeout); err != nil {
			r.Log.Error(err, "stopping generation", "generation", g.number)
		}
		if !stopped {
			r.Log.Error(nil, "writes still in flight at the end of the shutdown budget", "generation", g.number, "budget", r.Settings.ShutdownTimeout.String())
		}
	}
	if r.pruner != nil { // its deletes are writes too
		ctx, cancel := context.WithTimeout(context.Background(), r.Settings.ShutdownTimeout)
		stopped = r.pruner.Guard.Fence.Close(ctx) && stopped
		cancel()
	}
	if r.reportsFence != nil { // and the reports'
		ctx, cancel := context.WithTimeout(context.Background(), r.Settings.ShutdownTimeout)
		stopped = r.reportsFence.Close(ctx) && stopped
		cancel()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writesStopped = stopped
}

// WritesStopped reports, after Start returned, whether every write finished:
// only then may the Lease be released (metamanager.ReleaseLease). Otherwise the
// Lease must expire on its own before a standby writes.
func (r *Reloader) WritesStopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writesStopped || !r.started
}

// Ready is the readiness check: a standby (not the leader) is ready; the
// leader, and a warm standby, once a generation runs, every watch is served
// and synced.
func (r *Reloader) Ready(req *http.Request) error {
	r.mu.Lock()
	started, g, waiting := r.started, r.current, r.waiting
	r.mu.Unlock()
	switch {
	case !started:
		return nil
	case g == nil:
		return errors.Join(fmt.Errorf("no configuration running: %s", waiting), r.leftovers.Ready())
	}
	return errors.Join(g.ready(req), r.shardsReady(), r.leftovers.Ready(), r.Settings.Identity.Refused())
}

// setWaiting says why no generation runs (and that this replica leads).
func (r *Reloader) setWaiting(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started, r.waiting = true, why
}
