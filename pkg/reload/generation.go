package reload

import (
	"context"
	"slices"

	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/controller"
	"github.com/metawatch/metawatch/pkg/engine"
	"github.com/metawatch/metawatch/pkg/metrics"
	"github.com/metawatch/metawatch/pkg/rules"
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
	forbidden []engine.Forbidden
	mgr       manager.Manager
	counts    *engine.ObjectCounts
	gate      chan struct{}
	cancel    context.CancelFunc
	done      chan error
}

// resolved is a configuration checked against the cluster, ready to run.
type resolved struct {
	conf      *config.Config
	watches   []config.ResolvedWatch // the identity may list these
	forbidden []engine.Forbidden     // and not these
}

// resolve maps conf's kinds and lists one object of each watch; a forbidden
// watch is set aside, any other failure rejects the configuration.
func resolve(ctx context.Context, cfg *rest.Config, conf *config.Config) (resolved, []string, error) {
	watches, warnings, err := engine.Resolve(cfg, conf)
	if err != nil {
		return resolved{}, warnings, err
	}
	allowed, forbidden, err := engine.Check(ctx, cfg, watches)
	return resolved{conf: conf, watches: allowed, forbidden: forbidden}, warnings, err
}

// CheckAgainstCluster is the check a configuration passes before it runs, for
// start-up: a selector the server rejects or an unknown kind fails; a
// forbidden kind does not (the running generation reports it and serves the
// others). The Reloader checks again when it starts the configuration: a
// standby replica may lead hours later, when RBAC may have changed.
func CheckAgainstCluster(ctx context.Context, cfg *rest.Config, conf *config.Config) error {
	_, _, err := resolve(ctx, cfg, conf)
	return err
}

func newGeneration(ctx context.Context, cfg *rest.Config, number int64, r resolved, opts controller.Options) (*generation, error) {
	g := &generation{number: number, watches: r.watches, forbidden: r.forbidden, gate: make(chan struct{}), done: make(chan error, 1)}
	g.hash, g.hashValue = config.Hash(r.conf)
	mgr, err := engine.NewManager(cfg, r.watches, engine.Options{MetricsBindAddress: "0", HealthProbeBindAddress: "0", GracefulShutdownTimeout: 30 * time.Second})
	if err != nil {
		return nil, err
	}
	if g.counts, err = engine.TrackCachedObjects(ctx, mgr.GetCache(), r.watches); err != nil {
		return nil, err
	}
	rulesByKind, err := rules.Compile(r.conf)
	if err != nil {
		return nil, err
	}
	opts.Gate = g.gate
	if err := controller.Setup(mgr, r.watches, withoutUnservedCopies(rulesByKind, r.forbidden), opts); err != nil {
		return nil, err
	}
	g.mgr = mgr
	return g, nil
}

// withoutUnservedCopies drops copyFromNamespace rules when Namespaces may not be listed.
func withoutUnservedCopies(byKind map[string][]rules.Rule, forbidden []engine.Forbidden) map[string][]rules.Rule {
	namespacesForbidden := slices.ContainsFunc(forbidden, func(f engine.Forbidden) bool {
		return f.Watch.GVK == corev1.SchemeGroupVersion.WithKind("Namespace")
	})
	if namespacesForbidden {
		for kind, rs := range byKind {
			byKind[kind] = slices.DeleteFunc(rs, rules.Rule.CopiesFromNamespace)
		}
	}
	return byKind
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
	metrics.WatchReady.Reset()
	for _, w := range g.watches {
		metrics.WatchReady.WithLabelValues(w.GVK.GroupKind().String()).Set(1)
	}
	for _, f := range g.forbidden {
		metrics.WatchReady.WithLabelValues(f.Watch.GVK.GroupKind().String()).Set(0)
	}
	metrics.ConfigGeneration.Set(float64(g.number))
	metrics.ConfigHash.Set(g.hashValue)
	close(g.gate)
}

// stop stops the controllers, then the cache, and waits for both.
func (g *generation) stop() error {
	g.counts.Retire()
	g.cancel()
	err := <-g.done
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// ready fails while an informer has not synced or a watch is forbidden, naming why.
func (g *generation) ready(req *http.Request) error {
	var problems []string
	for _, f := range g.forbidden {
		problems = append(problems, f.Err.Error())
	}
	if err := engine.SyncedCheck(g.mgr.GetCache(), g.watches)(req); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}
