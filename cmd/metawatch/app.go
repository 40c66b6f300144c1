package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/metawatch/metawatch/pkg/apiserver"
	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/authority/pace"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/reload"
	"github.com/metawatch/metawatch/pkg/rulecontroller"
	"github.com/metawatch/metawatch/pkg/settings"
	"github.com/metawatch/metawatch/pkg/version"
)

var setupLog = ctrl.Log.WithName("setup")

// run is the whole story: configuration → manager → health checks → the
// reloader, which runs the configuration as generations → start. It returns
// when ctx ends (SIGTERM) or on error.
func run(ctx context.Context, opts options) error {
	setupLog.Info(version.String())
	logEffectiveFlags()
	// Every flag is checked before anything reaches the API server.
	mode, err := validateFlags(opts)
	if err := errors.Join(err, applyMemoryLimit(opts.containerMemoryLimit)); err != nil {
		return err
	}
	opts.settings.Mode = mode
	// One client config for the whole process (--kubeconfig is read once).
	getConfig := sync.OnceValues(func() (*rest.Config, error) { return restConfig(opts) })
	conf, err := loadInitial(ctx, opts, getConfig)
	if err != nil {
		return err
	}
	if conf != nil { // else loadInitial said why it waits (--wait-for-config)
		setupLog.Info("stage 1/4: configuration valid against the cluster", "source", opts.source.String())
	}
	cfg, err := getConfig()
	if err != nil {
		return err
	}
	budget := shutdownBudget(opts.manager.GracefulShutdownTimeout)
	mgrOpts := opts.manager
	mgrOpts.Wire = opts.settings.Wire // it watches nothing; it fetches as the generations do
	mgrOpts.GracefulShutdownTimeout = budget.manager
	var leader authority.Claim
	if opts.settings.Mode.ElectsLeader() {
		lock, err := metamanager.NewLeaseLock(cfg, mgrOpts)
		if err != nil {
			return err
		}
		// Writes leave only while the Lease's last renewal is recent (fence).
		claim := authority.NewLeaderClaim(lock, metamanager.RenewDeadlineOf(mgrOpts))
		mgrOpts.LeaseLock, leader = claim, claim
	}
	mgr, err := metamanager.New(cfg, nil, mgrOpts)
	if err != nil {
		return err
	}
	setupLog.Info("stage 2/4: manager built", "mode", opts.settings.Mode.String(), "metrics", mgrOpts.MetricsBindAddress, "probes", opts.probeAddress)
	probe, err := writeProbe(cfg, opts.source)
	if err != nil {
		return err
	}
	pacer := pace.New(opts.writeRate, ctrl.Log.WithName("pace"), probe)
	if err := mgr.Add(pacer); err != nil { // sends the probe until the manager stops
		return err
	}
	s := completeSettings(&opts, pacer, budget)
	reloader := &reload.Reloader{
		Config: cfg, Source: opts.source, Settings: s, Leader: leader, Initial: conf,
		Recorder: mgr.GetEventRecorder(rulecontroller.EventSource), Log: ctrl.Log.WithName("reload"), BrakeRecord: brakeRecord(opts),
	}
	if opts.settings.Mode == authority.Sharded {
		if reloader.Sharding, err = addSharding(ctx, mgr, cfg, opts); err != nil {
			return err
		}
	}
	if err := reloader.AddTo(mgr); err != nil {
		return err
	}
	if err := addHealthChecks(mgr, opts.probeAddress, reloader); err != nil {
		return err
	}
	setupLog.Info("stage 3/4: reloader and health checks added")
	setupLog.Info("stage 4/4: starting", "version", version.Version(), "source", opts.source.String(), "dryRun", s.DryRun, "limits", s.Guardrails.String(),
		"mode", opts.settings.Mode.String(), "gracefulShutdownTimeout", opts.manager.GracefulShutdownTimeout.String(), "metricsSecure", mgrOpts.MetricsSecure, "metricsCertDir", mgrOpts.MetricsCertDir,
		"writeRate", opts.writeRate.String(), "decodeUnchangedEvents", s.Wire.DecodeUnchanged, "unchangedBookmarkInterval", s.Wire.BookmarkInterval.String(), "watchOverHTTP2", s.Wire.WatchOverHTTP2, "listWatchCompression", !s.Wire.Uncompressed, "streamLists", !s.StockInformers)
	if err := mgr.Start(ctx); err != nil {
		return err
	}
	return releaseLease(mgrOpts, reloader, budget.release)
}

// brakeRecord is where the removal brake keeps its count: --removal-brake-record,
// or reload.BrakeRecordFor the configuration's source and the Lease.
func brakeRecord(opts options) types.NamespacedName {
	if ns, name, ok := strings.Cut(opts.brakeRecord, "/"); ok { // checked by validateFlags
		return types.NamespacedName{Namespace: ns, Name: name}
	}
	ns, _ := metamanager.LeaseNamespace(opts.manager) // out of a cluster: none, unless the flag names it
	return reload.BrakeRecordFor(opts.source, ns, cmp.Or(opts.manager.LeaderElectionID, metamanager.DefaultLeaderElectionID))
}

// writeProbe is the write pacer's probe (pace.Probe): a GET of the
// selectors ConfigMap's metadata, which the chart's Role grants by name and
// which API Priority and Fairness serves as the service account's other
// reads (the chart's FlowSchemas take its writes and Leases only); with
// --config-file, which the chart never uses, of Namespace default.
func writeProbe(cfg *rest.Config, source reload.Source) (pace.Probe, error) {
	if ns, name, ok := strings.Cut(source.ConfigMap, "/"); ok { // checked by validateFlags
		return pace.MetadataGet(cfg, corev1.SchemeGroupVersion.WithResource("configmaps"), types.NamespacedName{Namespace: ns, Name: name})
	}
	return pace.MetadataGet(cfg, corev1.SchemeGroupVersion.WithResource("namespaces"), types.NamespacedName{Name: metav1.NamespaceDefault})
}

// completeSettings fills in what the flags do not set directly: the write
// pacer, the installation's name and the generations' share of
// --graceful-shutdown-timeout. A timeout of 0 keeps the settings' default,
// as controller-runtime keeps its own for the manager's share.
func completeSettings(opts *options, pacer *pace.Pacer, budget budgets) *settings.Settings {
	s := &opts.settings
	s.Pacer, s.Installation = pacer, installation(*opts)
	if budget.generation > 0 {
		s.ShutdownTimeout = budget.generation
	}
	return s
}

// budgets split --graceful-shutdown-timeout: the generation's writes and
// caches stop first, then the manager, then the Lease is released; the whole
// fits in the flag.
type budgets struct{ generation, manager, release time.Duration }

func shutdownBudget(total time.Duration) budgets {
	release := min(2*time.Second, total/5)
	manager := total - release
	return budgets{generation: manager * 9 / 10, manager: manager, release: release}
}

// releaseLease gives the Lease up at once if every write stopped, so that a
// standby takes over without waiting for it to expire; otherwise it is left
// to expire, and no standby writes while a write of this replica may land.
func releaseLease(opts metamanager.Options, reloader *reload.Reloader, timeout time.Duration) error {
	if opts.LeaseLock == nil {
		return nil
	}
	if !reloader.WritesStopped() {
		setupLog.Info("warning: writes were still in flight at the end of --graceful-shutdown-timeout; the Lease is left to expire")
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := metamanager.ReleaseLease(ctx, opts.LeaseLock); err != nil {
		setupLog.Error(err, "releasing the Lease; a standby takes over when it expires")
	}
	return nil
}

// loadInitial reads, validates and resolves the configuration, retrying while
// the API server is unreachable. An invalid configuration is an error, unless
// --wait-for-config: then metawatch starts without one and follows the
// ConfigMap (its Pruner judges the admission policies meanwhile); before
// that error, the admission policies the flags no longer allow are judged
// once (pruneBeforeExit).
func loadInitial(ctx context.Context, opts options, getConfig func() (*rest.Config, error)) (*config.Config, error) {
	var conf *config.Config
	err := apiserver.RetryUnreachable(ctx, setupLog, "loading the configuration", func() error {
		c, err := reload.Load(ctx, getConfig, opts.source)
		if err != nil {
			return err
		}
		conf = c
		cfg, err := getConfig()
		if err != nil {
			return err
		}
		return reload.CheckAgainstCluster(ctx, cfg, c, &opts.settings.Guardrails)
	})
	switch {
	case err == nil:
		return conf, nil
	case apiserver.Untrusted(err):
		return nil, fmt.Errorf("loading the configuration: the TLS connection to the API server failed, which "+
			"waiting will not mend; check the server address and certificate authority of the kubeconfig "+
			"(--kubeconfig, $KUBECONFIG; in a pod, the cluster's root CA), the API server's certificate and "+
			"this machine's clock: %w", err)
	case opts.waitForConfig && opts.source.ConfigMap != "" && !apiserver.Unreachable(err):
		setupLog.Error(err, "no valid configuration yet; waiting for one (--wait-for-config)")
		return nil, nil
	}
	if config.IsInvalid(err) {
		if left := pruneBeforeExit(ctx, opts, getConfig); left != "" {
			return nil, fmt.Errorf("invalid configuration: %w; also: %s", err, left)
		}
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	// Not the configuration's fault: a kubeconfig, an unreachable or
	// forbidding API server. Say so, not "invalid configuration".
	return nil, fmt.Errorf("loading the configuration: %w", err)
}

// restConfig is the client config from --kubeconfig, $KUBECONFIG or the Pod's service account.
func restConfig(opts options) (*rest.Config, error) {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig (set --kubeconfig or $KUBECONFIG): %w", err)
	}
	cfg.QPS, cfg.Burst = float32(opts.qps), opts.burst
	if opts.settings.Mode == authority.Sharded {
		if cfg.UserAgent, err = opts.sharding.userAgent(); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// addHealthChecks serves /healthz and /readyz; /readyz/configuration also
// says the sharding mode ("ok: sharding off" for a single leader).
func addHealthChecks(mgr ctrl.Manager, addr string, reloader *reload.Reloader) error {
	return metamanager.ServeProbes(mgr, addr, metamanager.Probes{
		Live:     map[string]healthz.Checker{"ping": healthz.Ping},
		Ready:    map[string]healthz.Checker{"configuration": reloader.Ready},
		Describe: map[string]func() string{"configuration": reloader.Describe},
	})
}

// logEffectiveFlags logs every flag with the value in effect, given or default,
// so a log alone tells how a replica was configured.
func logEffectiveFlags() {
	var kv []any
	flag.CommandLine.VisitAll(func(f *flag.Flag) { kv = append(kv, f.Name, f.Value.String()) })
	setupLog.Info("effective flags", kv...)
}

// installation names this installation on the admission policies it makes:
// its selectors ConfigMap; for a file, which two installations may mount at
// the same path, its leader-election Lease, which they cannot share.
func installation(opts options) string {
	if opts.source.ConfigMap != "" || !opts.settings.Mode.ElectsLeader() {
		return opts.source.Installation()
	}
	ns, err := metamanager.LeaseNamespace(opts.manager)
	if err != nil {
		return opts.source.Installation()
	}
	return fmt.Sprintf("Lease %s/%s", ns, cmp.Or(opts.manager.LeaderElectionID, metamanager.DefaultLeaderElectionID))
}
