package main

import (
	"flag"
	"fmt"
	"strconv"
	"time"

	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/metawatch/metawatch/pkg/authority/pace"
	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/reload"
	"github.com/metawatch/metawatch/pkg/reports"
	"github.com/metawatch/metawatch/pkg/settings"
)

type options struct {
	// settings are what the flags set for the reloader, its generations
	// and their controllers, handed to them whole (reload.Reloader.Settings);
	// run completes them (the mode, the pacer, the shutdown budget).
	settings      settings.Settings
	writeRate     pace.RateBounds // --write-rate-*, --write-retry-after-max (settings.Pacer)
	waitForConfig bool
	qps           float64
	burst         int
	source        reload.Source
	manager       metamanager.Options
	probeAddress  string // --health-probe-bind-address, served by metamanager.ServeProbes
	zap           zap.Options
	sharding      shardingOptions
	version       bool
	// warmStandby is --warm-standby; with --leader-elect and --sharding it
	// resolves to mode.
	warmStandby bool
	// containerMemoryLimit is --container-memory-limit (applyMemoryLimit).
	containerMemoryLimit string
	// brakeRecord is --removal-brake-record (brakeRecord).
	brakeRecord string
}

// parseFlags parses args on flag.CommandLine, where controller-runtime has
// already registered --kubeconfig; a bad flag exits there.
func parseFlags(args []string) options {
	fs := flag.CommandLine
	o := bindFlags(fs)
	_ = fs.Parse(args) // flag.CommandLine exits on a bad flag
	return *o
}

// bindFlags defines metawatch's flags on fs, with their defaults, into the
// options it returns.
func bindFlags(fs *flag.FlagSet) *options {
	o := &options{settings: settings.Defaults()}
	s := &o.settings
	fs.StringVar(&o.source.File, "config-file", "", "Path to the configuration: a config.yaml or a selectors ConfigMap manifest.")
	fs.StringVar(&o.source.ConfigMap, "config-map", "", "Selectors ConfigMap as NAMESPACE/NAME; its data key config.yaml holds the configuration, followed live.")
	fs.BoolVar(&o.waitForConfig, "wait-for-config", false, "Start without a valid --config-map configuration and wait for one, instead of exiting non-zero.")
	fs.StringVar(&o.manager.MetricsBindAddress, "metrics-bind-address", ":8443", "Address of the Prometheus metrics endpoint; 0 disables it.")
	fs.BoolVar(&o.manager.MetricsSecure, "metrics-secure", true, "Serve metrics over HTTPS, only to callers the API server authenticates and authorizes (get on /metrics); false serves plain HTTP to anyone who can connect.")
	fs.StringVar(&o.manager.MetricsCertDir, "metrics-cert-dir", "", "Directory holding tls.crt and tls.key (a kubernetes.io/tls Secret mounted as a volume): the certificate the HTTPS metrics endpoint serves, reloaded when the files change. Empty: a self-signed certificate made at start, which scrapers cannot verify. Needs --metrics-secure.")
	fs.StringVar(&o.probeAddress, "health-probe-bind-address", ":8081", "Address of /healthz and /readyz; 0 disables them.")
	fs.Float64Var(&o.qps, "kube-api-qps", 50, "Reads per second to the API server (start-up lists, watches, bucket moves); writes are paced by --write-rate-min and --write-rate-max, leader election has its own budget.")
	fs.IntVar(&o.burst, "kube-api-burst", 100, "Burst above --kube-api-qps.")
	fs.BoolVar(&o.manager.LeaderElection, "leader-elect", false, "Elect a leader so that one replica of several is active.")
	fs.BoolVar(&o.warmStandby, "warm-standby", false, "With --leader-elect: a standby keeps its cache synced and its controllers ready, writing once it leads, so a failover waits for the Lease only, "+
		"not for a sync of every object. Costs the standby as much memory as the leader.")
	fs.StringVar(&s.PolicyOwner, "admission-policy-owner", "", "`ClusterRole` that owns the admission policies of rules with atCreation (their ownerReferences): deleting it, "+
		"as helm uninstall deletes the chart's, has the garbage collector delete them. Needs get on that ClusterRole. Empty: nothing owns them, and they outlive metawatch.")
	fs.StringVar(&o.manager.LeaderElectionID, "leader-election-id", metamanager.DefaultLeaderElectionID, "Name of the leader-election Lease.")
	fs.StringVar(&o.manager.LeaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader-election Lease; defaults to the Pod's namespace in a cluster.")
	fs.DurationVar(&o.manager.LeaseDuration, "leader-election-lease-duration", 15*time.Second, "How long a standby waits before taking a Lease its holder stopped renewing (after a crash, not a clean stop).")
	fs.DurationVar(&o.manager.RenewDeadline, "leader-election-renew-deadline", 10*time.Second, "How long the leader keeps trying to renew the Lease before it gives up leading; less than the lease duration.")
	fs.DurationVar(&o.manager.RetryPeriod, "leader-election-retry-period", 2*time.Second, "How often replicas try to acquire or renew the Lease.")
	fs.BoolVar(&o.sharding.enabled, "sharding", false, "Run every replica active, each caching and writing its share of the objects (64 buckets of their uids, a Lease each); excludes --leader-elect. The leader-election flags set its Leases' namespace and timings. Needs POD_NAME, a name unique among the replicas (the chart sets it).")
	fs.StringVar(&o.sharding.ring, "sharding-ring", "metawatch", "Name of the set of replicas sharing the buckets: the prefix and label of their Leases.")
	fs.DurationVar(&o.manager.GracefulShutdownTimeout, "graceful-shutdown-timeout", 30*time.Second, "How long the whole shutdown on SIGTERM may take: the writes in flight, then the caches and the manager, then the Lease's release.")
	s.Guardrails.BindFlags(fs)
	s.RemovalBrake.BindFlags(fs)
	fs.StringVar(&o.brakeRecord, "removal-brake-record", "", "ConfigMap, as NAMESPACE/NAME, where the removal brake keeps its count and the approvals it used, so that a restart, "+
		"a failover or a rolling update goes on from them and sharded replicas share one bound. metawatch creates it; it needs get, create and patch on it. "+
		"Empty: <name>-removal-brake beside the --config-map ConfigMap; with --config-file, <--leader-election-id>-removal-brake in the Lease's namespace, or this process's memory only "+
		"out of a cluster. With --dry-run the count is kept in memory.")
	o.writeRate = pace.DefaultRateBounds()
	o.writeRate.BindFlags(fs)
	fs.IntVar(&s.MaxConcurrentReconciles, "max-concurrent-reconciles", s.MaxConcurrentReconciles, "Reconciles run at once, per kind.")
	fs.BoolVar(&s.Wire.DecodeUnchanged, "decode-unchanged-events", false, "Decode and deliver to the cache every watch event, status-only updates too. By default an event whose object is unchanged but for its resourceVersion is left out before decoding: the cache keeps the object as it was, and a bookmark carries the newest resourceVersion to the informer (see --unchanged-bookmark-interval).")
	fs.BoolVar(&s.Wire.WatchOverHTTP2, "watch-http2", false, "List and watch over HTTP/2, multiplexed on the connection the writes use. By default each watch has a connection of its own over HTTP/1.1: a watch event then costs no flow-control write and no hand-off between goroutines, and a dead connection is found by TCP keepalive in about 30 s.")
	fs.Var(negated{&s.Wire.Uncompressed}, "list-watch-compression", "Ask the API server to gzip the cache's lists and watches. "+
		"gzip costs CPU on both sides for every watch event, against the bytes it saves (docs/sizing.md has the figures); the writes are not affected.")
	fs.Var(negated{&s.StockInformers}, "stream-lists", "Store each object of a list or relist in the cache as it arrives, marked, and sweep what the list did not bring at its end (package informer), "+
		"with each event handler's queue bounded: a relist then costs no more memory than the first sync. false uses client-go's informers, which hold a whole list, "+
		"and a copy of it, before the cache sees any of it, and let handlers' queues grow without bound.")
	fs.DurationVar(&s.Wire.BookmarkInterval, "unchanged-bookmark-interval", s.Wire.BookmarkInterval, "The most the bookmark standing for unchanged events left out is held back while events flow: the informer's resourceVersion lags by at most that, and is exact whenever a watch ends (which is when it resumes). 0 sends one per event.")
	fs.StringVar(&o.containerMemoryLimit, "container-memory-limit", "", "The container's memory limit (bytes, or a quantity such as 1Gi); the Go runtime's soft memory limit is set to 90% of it, so the GC works harder as the heap nears it instead of the container being OOM-killed. The chart sets it from resources.limits.memory. Ignored when GOMEMLIMIT is set.")
	fs.BoolVar(&s.EventValues, "events-include-values", false, "Let LabelConflict and OwnershipFight Events carry the value another field manager wrote (never for annotations of Secrets). Off, they name that manager only: anyone who may list Events reads them.")
	fs.StringVar(&s.Identity.FieldManager, "field-manager", s.Identity.FieldManager, "Server-side apply field manager the rules write as: the keys this installation owns are "+
		"those this name owns. Each installation writing the same kinds needs a name of its own: two applying as one replace each other's keys on every write.")
	fs.StringVar(&s.Identity.Adopted, "adopt-field-manager", "", "The field manager this installation wrote as before --field-manager was changed: "+
		"the label and annotation keys it owns are taken over (values unchanged), then released if no rule wants them. "+
		"Only a name no running installation writes as: an object that name applied to after adoption began is left to it, and counted.")
	fs.BoolVar(&s.DryRun, "dry-run", false, "Compute every rule's writes, log and count them (result=\"dry-run\"), and write nothing: no key, no admission policy, and no delete either. "+
		"Admission policies an earlier run of this installation left go on writing at creation: metawatch reports them (metawatch_admission_cleanup_blocked{reason=\"dry-run\"}, "+
		"an Event) with the kubectl line that deletes them.")
	fs.IntVar(&s.EventWritesPerMinute, "event-writes-per-minute", s.EventWritesPerMinute, "The most Event writes a minute for what the rules find (MissingRequiredMetadata, "+
		"LabelConflict, OwnershipFight, KeysLeftByGuardrail). Objects are never told one Event each: each is folded into one Event per reason, rule, kind and namespace, "+
		"written at most every 30 s; what this bound holds back waits for the next round (metawatch_events_folded_total, metawatch_events_dropped_total).")
	fs.BoolVar(&s.OpenReports, "open-reports", false, "Keep what the rules find as OpenReports reports (openreports.io/v1alpha1): one Report per namespace with results and one ClusterReport, "+
		"current within a minute, at most --open-reports-max-results results each (the rest counted in the summary). Needs the CRDs (Kyverno 1.15 and Policy Reporter install them; so does the chart's "+
		"openReports.installCRDs) and create, patch, delete, list on reports and clusterreports. Sharded, each replica writes its own, named after it.")
	fs.IntVar(&s.ReportResults, "open-reports-max-results", s.ReportResults, fmt.Sprintf("With --open-reports: the most results one report lists, fails first; its summary counts the others. "+
		"A result is about 430 bytes: at most %d, so that a report stays well within the API server's 1.5 MiB per object.", reports.MaxResultsLimit))
	fs.BoolVar(&o.version, "version", false, "Print the version and exit.")
	// Errors are explained in their message; stack traces are for panics (--zap-stacktrace-level overrides).
	o.zap.StacktraceLevel = zapcore.PanicLevel
	o.zap.BindFlags(fs)
	fs.Usage = func() { printUsage(fs.Output(), fs) }
	return o
}

// negated is a boolean flag that sets *p to the opposite of its value: a
// flag that is on by default for an option whose zero value is off.
type negated struct{ p *bool }

func (n negated) String() string {
	if n.p == nil {
		return "true"
	}
	return strconv.FormatBool(!*n.p)
}

func (n negated) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*n.p = !v
	return nil
}

func (n negated) IsBoolFlag() bool { return true }
