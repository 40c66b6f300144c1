package metamanager

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/metawatch/metawatch/pkg/access"
	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/authority/pace"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/wire"
)

// Options are the process-level settings of the Manager.
type Options struct {
	MetricsBindAddress string
	// MetricsSecure serves metrics over HTTPS to callers the API server
	// authenticates (TokenReview) and authorizes (SubjectAccessReview, get on
	// the /metrics non-resource URL), as a kubebuilder scaffold does.
	MetricsSecure bool
	// MetricsCertDir, with MetricsSecure, holds the serving certificate
	// (MetricsCertFile, MetricsKeyFile), which controller-runtime's
	// certwatcher reloads when the files change (a Secret's rotation); empty,
	// a self-signed certificate is generated at start, which no scraper can
	// verify. The caller checks the files: without them controller-runtime
	// falls back to the self-signed one without a word.
	MetricsCertDir          string
	LeaderElection          bool
	LeaderElectionNamespace string
	// LeaderElectionID names the Lease replicas compete for; defaults to DefaultLeaderElectionID.
	LeaderElectionID string
	// LeaseDuration, RenewDeadline and RetryPeriod are the Lease's timings;
	// zero takes controller-runtime's (15s, 10s, 2s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// GracefulShutdownTimeout bounds how long runnables get to stop; zero takes
	// controller-runtime's default (30s), not "do not wait": a manager that
	// returns while its workers still reconcile leaves writes behind it.
	GracefulShutdownTimeout time.Duration
	// LeaseLock is the leader-election Lease (NewLeaseLock); the caller
	// releases it (ReleaseLease) once writes have stopped. Nil with
	// LeaderElection: controller-runtime's own Lease, released on cancel.
	LeaseLock resourcelock.Interface
	// AccessLoss, if not nil, learns of every kind whose list or watch becomes forbidden.
	AccessLoss *access.AccessLoss
	// ShardFilter, if not nil, restricts the cache to this replica's share of
	// the namespaced objects (sharding).
	ShardFilter *metacache.ShardFilter
	// Wire is how the cache fetches: status-only updates left out or not,
	// bookmarks, connections (wire.Options, as the flags say).
	Wire wire.Options
	// StockInformers makes the cache's informers client-go's, which buffer
	// each list whole, instead of the streaming ones (package informer),
	// which store each listed object as it comes and bound their handlers'
	// queues (--stream-lists=false).
	StockInformers bool
	// Relists, if not nil, learns the cache's streaming informers, to say
	// which kinds relist (metacache.Relists).
	Relists *metacache.Relists
	// Versions, if not nil, learns the newest resourceVersion of the cached
	// objects whose watch events were left out (wire.ResourceVersions).
	Versions *wire.ResourceVersions
	// Identity is the installation's write identity: the managedFields
	// entries of its field manager, and of the name it adopts from, are the
	// ones the wire and the cache keep. Nil: the default field manager's,
	// adopting nothing (a Manager whose cache watches nothing).
	Identity *authority.Identity
	// Writes, if not nil, paces the writes of the manager's client (package
	// pace); its reads keep the config's rate limit. Nil: client-go's rate
	// limit for all its requests.
	Writes *pace.Pacer
}

// MetricsCertFile and MetricsKeyFile are the names in MetricsCertDir, those
// of a kubernetes.io/tls Secret's keys.
const (
	MetricsCertFile = "tls.crt"
	MetricsKeyFile  = "tls.key"
)

// DefaultLeaderElectionID is the default name of the leader-election Lease.
const DefaultLeaderElectionID = "metawatch-leader"

// New builds a Manager whose cache watches exactly the given kinds, as metadata.
func New(cfg *rest.Config, watches []config.ResolvedWatch, opts Options) (manager.Manager, error) {
	// Lease renewal keeps cfg as given; everything else gets metadata without
	// other managers' managedFields, stripped before decoding, and writes
	// admitted under a claim leave only while it holds (authority.Wrap).
	id := opts.Identity
	if id == nil {
		id = authority.NewIdentity(authority.DefaultFieldManager, "")
	}
	stripped := wire.StripManagedFields(authority.Wrap(cfg), id.Names(), opts.Wire, opts.Versions)
	cacheOpts := metacache.CacheOptions(watches, metacache.Options{Identity: id, AccessLoss: opts.AccessLoss, ShardFilter: opts.ShardFilter,
		StockInformers: opts.StockInformers, Relists: opts.Relists})
	var err error
	if cacheOpts.HTTPClient, err = cacheHTTPClient(stripped, opts.Wire); err != nil {
		return nil, fmt.Errorf("creating the cache's HTTP client: %w", err)
	}
	mgr, err := manager.New(stripped, manager.Options{
		Cache:                               cacheOpts,
		Client:                              client.Options{Cache: &client.CacheOptions{Unstructured: false}},
		Metrics:                             metricsOptions(opts),
		HealthProbeBindAddress:              "0", // ServeProbes serves them
		LeaderElection:                      opts.LeaderElection,
		LeaderElectionID:                    cmp.Or(opts.LeaderElectionID, DefaultLeaderElectionID),
		LeaderElectionNamespace:             opts.LeaderElectionNamespace,
		LeaderElectionConfig:                ownLeaderElectionConfig(cfg, opts),
		LeaderElectionReleaseOnCancel:       opts.LeaseLock == nil,
		LeaderElectionResourceLockInterface: opts.LeaseLock,
		LeaseDuration:                       nonZero(opts.LeaseDuration),
		RenewDeadline:                       nonZero(opts.RenewDeadline),
		RetryPeriod:                         nonZero(opts.RetryPeriod),
		GracefulShutdownTimeout:             nonZero(opts.GracefulShutdownTimeout),
		NewClient:                           pacedClient(opts.Writes),
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	// The index needs no context: it is registered on informers not started.
	if err := metacache.IndexControllers(context.Background(), mgr.GetCache(), watches); err != nil {
		return nil, fmt.Errorf("indexing owners: %w", err)
	}
	return mgr, nil
}

// metricsOptions is the metrics endpoint: plain HTTP, or HTTPS with
// controller-runtime's authentication and authorization filter and the
// certificate in MetricsCertDir, if given.
func metricsOptions(opts Options) metricsserver.Options {
	m := metricsserver.Options{BindAddress: opts.MetricsBindAddress}
	if opts.MetricsSecure {
		m.SecureServing = true
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
		m.CertDir, m.CertName, m.KeyName = opts.MetricsCertDir, MetricsCertFile, MetricsKeyFile
	}
	return m
}

// nonZero is d, or nil (the default) for zero.
func nonZero(d time.Duration) *time.Duration {
	if d == 0 {
		return nil
	}
	return &d
}

// ownLeaderElectionConfig is the Lease client's config when controller-runtime
// builds the Lease lock itself, else nil: given one, manager.New adds core
// types to the global client-go scheme, a write that races with every client
// decoding with it (a new generation's manager is built while the previous
// generation runs). Generations do not elect, and metawatch's own lock
// (NewLeaseLock) has its own client.
func ownLeaderElectionConfig(cfg *rest.Config, opts Options) *rest.Config {
	if !opts.LeaderElection || opts.LeaseLock != nil {
		return nil
	}
	return leaderElectionConfig(cfg)
}

// leaderElectionConfig gives Lease renewal its own client rate limiter, so a
// burst of reconciles can never starve it and cost the lease. Its budget
// lets a sharding ring write every bucket Lease in one round.
func leaderElectionConfig(cfg *rest.Config) *rest.Config {
	le := rest.CopyConfig(cfg)
	le.RateLimiter = nil
	le.QPS, le.Burst = 20, 80
	return le
}
