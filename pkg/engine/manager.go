package engine

import (
	"cmp"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/metawatch/metawatch/pkg/config"
)

// Options are the process-level settings of the Manager.
type Options struct {
	MetricsBindAddress      string
	HealthProbeBindAddress  string
	LeaderElection          bool
	LeaderElectionNamespace string
	// LeaderElectionID names the Lease replicas compete for; defaults to DefaultLeaderElectionID.
	LeaderElectionID string
	// GracefulShutdownTimeout bounds how long runnables get to stop.
	GracefulShutdownTimeout time.Duration
}

// DefaultLeaderElectionID is the default name of the leader-election Lease.
const DefaultLeaderElectionID = "metawatch-leader"

// NewManager builds a Manager whose cache watches exactly the given kinds, as metadata.
func NewManager(cfg *rest.Config, watches []config.ResolvedWatch, opts Options) (manager.Manager, error) {
	// Lease renewal keeps cfg as given; everything else gets metadata without
	// other managers' managedFields, stripped before decoding.
	mgr, err := manager.New(StripManagedFields(cfg), manager.Options{
		Cache:                         CacheOptions(watches),
		Client:                        client.Options{Cache: &client.CacheOptions{Unstructured: false}},
		Metrics:                       metricsserver.Options{BindAddress: opts.MetricsBindAddress},
		HealthProbeBindAddress:        opts.HealthProbeBindAddress,
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              cmp.Or(opts.LeaderElectionID, DefaultLeaderElectionID),
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionConfig:          leaderElectionConfig(cfg),
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &opts.GracefulShutdownTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	return mgr, nil
}

// leaderElectionConfig gives Lease renewal its own client rate limiter, so a
// burst of reconciles can never starve it and cost the lease.
func leaderElectionConfig(cfg *rest.Config) *rest.Config {
	le := rest.CopyConfig(cfg)
	le.RateLimiter = nil
	le.QPS, le.Burst = 5, 10
	return le
}

// CacheOptions is one ByObject entry per watch, keyed by a metadata-only object
// of the watch's kind, with its server-side selectors and namespaces.
func CacheOptions(watches []config.ResolvedWatch) cache.Options {
	byObject := make(map[client.Object]cache.ByObject, len(watches))
	for _, w := range watches {
		byObject[NewObject(w.GVK)] = byObjectFor(w)
	}
	return cache.Options{
		ByObject:                    byObject,
		ReaderFailOnMissingInformer: true,
		DefaultTransform:            Transform(nil), // every watch sets its own; this covers any other informer
	}
}

func byObjectFor(w config.ResolvedWatch) cache.ByObject {
	entry := cache.ByObject{Label: w.Label, Field: w.Field, Transform: Transform(w.Annotations)}
	if len(w.Namespaces) > 0 {
		entry.Namespaces = make(map[string]cache.Config, len(w.Namespaces))
		for _, ns := range w.Namespaces {
			entry.Namespaces[ns] = cache.Config{}
		}
	}
	return entry
}
