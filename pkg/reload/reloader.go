package reload

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/controller"
	"github.com/metawatch/metawatch/pkg/metrics"
)

// Event reasons on the selectors ConfigMap.
const (
	ReasonInvalidConfig = "InvalidConfig"
	ReasonReloaded      = "ConfigReloaded"
	ReasonForbidden     = "WatchForbidden"
)

// SyncTimeout bounds how long a new generation may take to sync before the
// reload is given up and the running generation kept.
var SyncTimeout = 10 * time.Minute

// Reloader runs the configuration as generations and swaps them when the
// selectors ConfigMap changes: parse and validate; if valid, build the new
// generation, start it, wait for its sync, stop the old one, then let the new
// one write. A bad edit, or a deleted ConfigMap, keeps the running generation,
// with an Event, a log line and metrics that say so.
//
// It is a leader-election Runnable: only the leader runs generations.
type Reloader struct {
	Config     *rest.Config
	Source     Source
	Recorder   events.EventRecorder
	Controller controller.Options
	Log        logr.Logger
	// Initial is the configuration validated at start-up; nil waits for one (--wait-for-config).
	Initial *config.Config

	mu      sync.Mutex
	started bool
	current *generation
	waiting string // why there is no generation yet
}

// NeedLeaderElection: generations write, so only the leader runs them.
func (r *Reloader) NeedLeaderElection() bool { return true }

// Start runs the initial configuration, then follows the ConfigMap until ctx ends.
func (r *Reloader) Start(ctx context.Context) error {
	r.mu.Lock()
	r.started, r.waiting = true, "waiting for a valid configuration in "+r.Source.String()
	r.mu.Unlock()
	defer r.stopCurrent()
	if r.Initial != nil {
		if err := r.apply(ctx, r.Initial); err != nil {
			return fmt.Errorf("starting the configuration: %w", err)
		}
	}
	if r.Source.ConfigMap == "" {
		<-ctx.Done()
		return nil
	}
	return r.follow(ctx)
}

// apply resolves conf and swaps to a generation running it.
func (r *Reloader) apply(ctx context.Context, conf *config.Config) error {
	res, warnings, err := resolve(ctx, r.Config, conf)
	for _, w := range warnings {
		r.Log.Info("warning: " + w)
	}
	if err != nil {
		return err
	}
	return r.swap(ctx, res)
}

func (r *Reloader) swap(ctx context.Context, res resolved) error {
	old := r.running()
	number := int64(1)
	if old != nil {
		number = old.number + 1
	}
	next, err := newGeneration(ctx, r.Config, number, res, r.Controller)
	if err != nil {
		return err
	}
	next.start(ctx)
	if err := next.waitSynced(ctx, SyncTimeout); err != nil {
		_ = next.stop()
		return err
	}
	if old != nil {
		if err := old.stop(); err != nil {
			r.Log.Error(err, "stopping the previous generation", "generation", old.number)
		}
	}
	r.setCurrent(next)
	next.open()
	metrics.ConfigLastReloadSuccessful.Set(1)
	r.reportForbidden(next)
	r.Log.Info("configuration running", "generation", next.number, "hash", next.hash[:12], "watches", len(next.watches), "forbidden", len(next.forbidden))
	return nil
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
	if g := r.running(); g != nil {
		if err := g.stop(); err != nil {
			r.Log.Error(err, "stopping generation", "generation", g.number)
		}
	}
}

// Ready is the readiness check: a standby (not the leader) is ready; the
// leader is ready once a generation runs, every watch is served and synced.
func (r *Reloader) Ready(req *http.Request) error {
	r.mu.Lock()
	started, g, waiting := r.started, r.current, r.waiting
	r.mu.Unlock()
	switch {
	case !started:
		return nil
	case g == nil:
		return fmt.Errorf("no configuration running: %s", waiting)
	}
	return g.ready(req)
}

// reject reports a configuration that was not applied.
func (r *Reloader) reject(cm *corev1.ConfigMap, err error) {
	metrics.ConfigLastReloadSuccessful.Set(0)
	keeping := "no configuration is running"
	if g := r.running(); g != nil {
		keeping = fmt.Sprintf("generation %d keeps running", g.number)
	} else {
		r.mu.Lock()
		r.waiting = "the configuration in " + r.Source.String() + " is invalid: " + err.Error()
		r.mu.Unlock()
	}
	r.Log.Error(err, "configuration rejected; "+keeping, "configMap", r.Source.ConfigMap)
	if cm != nil {
		r.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, ReasonInvalidConfig, "Reload", "%s", truncate(keeping+": "+Describe(err), 1000))
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
