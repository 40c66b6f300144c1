package variant

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/metawatch/metawatch/pkg/apiserver"
	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/rulecontroller"
	"github.com/metawatch/metawatch/pkg/rules"
	"github.com/metawatch/metawatch/pkg/settings"
	"github.com/metawatch/metawatch/pkg/sharding"
	"github.com/metawatch/metawatch/pkg/telemetry"
	"github.com/metawatch/metawatch/pkg/wire"
)

const fieldManager = authority.DefaultFieldManager

func metawatch() Variant {
	return Variant{Name: "metawatch", Description: "metawatch: its Manager and controllers, configured by the ConfigMap below",
		Start: func(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters) (*Running, error) {
			return startMetawatch(ctx, cfg, spec, counters, defaultOptions())
		}}
}

// metawatchStockInformer is metawatch with --stream-lists=false: its cache's
// informers are client-go's, which buffer each list and relist whole before
// the store sees any of it, where metawatch's own (package informer) store
// each object as it comes. The before of the streaming informer's after,
// in the same run.
func metawatchStockInformer() Variant {
	return Variant{Name: "metawatch-stock-informer", Description: "metawatch with --stream-lists=false: client-go's informers, which buffer each list and relist whole, instead of the streaming ones",
		Start: func(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters) (*Running, error) {
			opts := defaultOptions()
			opts.StockInformers = true
			return startMetawatch(ctx, cfg, spec, counters, opts)
		}}
}

// metawatchHTTP2 shows what watching over HTTP/1.1, a connection per watch,
// saves per event: here the cache's lists and watches share the writes'
// HTTP/2 connection, as they did before #14.
func metawatchHTTP2() Variant {
	return Variant{Name: "metawatch-http2", Description: "metawatch with --watch-http2: lists and watches multiplexed over HTTP/2 instead of a connection each over HTTP/1.1",
		Start: func(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters) (*Running, error) {
			return startMetawatch(ctx, cfg, spec, counters, metamanager.Options{Wire: wire.Options{BookmarkInterval: wire.DefaultBookmarkInterval, WatchOverHTTP2: true}})
		}}
}

// metawatchBookmarkEach shows what holding back the bookmarks for unchanged
// events saves: here every event left out gets one.
func metawatchBookmarkEach() Variant {
	return Variant{Name: "metawatch-bookmark-each", Description: "metawatch with --unchanged-bookmark-interval=0: a bookmark for every status-only event left out",
		Start: func(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters) (*Running, error) {
			return startMetawatch(ctx, cfg, spec, counters, metamanager.Options{})
		}}
}

// onOneP is v with GOMAXPROCS=1, named NAME-gomaxprocs1: what one P saves
// per event. A process woken for each event on a machine of several CPUs
// hands it from the network poller to a goroutine on another P, and idle Ps
// spin; the chart runs metawatch with one P (its default CPU request).
func onOneP(v Variant, description string) Variant {
	start := v.Start
	v.Name, v.Description = v.Name+"-gomaxprocs1", description
	v.Start = func(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters) (*Running, error) {
		runtime.GOMAXPROCS(1)
		return start(ctx, cfg, spec, counters)
	}
	return v
}

// metawatchDecodeAll shows what leaving out unchanged objects' events before decoding saves.
func metawatchDecodeAll() Variant {
	return Variant{Name: "metawatch-decode-all", Description: "metawatch with --decode-unchanged-events: every status-only event decoded, stored and handed to the predicates",
		Start: func(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters) (*Running, error) {
			return startMetawatch(ctx, cfg, spec, counters, metamanager.Options{Wire: wire.Options{DecodeUnchanged: true}})
		}}
}

// Config is the configuration the metawatch variant runs: the rule as a
// copyFromNamespace rule, on the same pods as the others (and every
// namespace, which copyFromNamespace needs: a handful more than the others cache).
func Config(spec Spec) string {
	return fmt.Sprintf(`watches:
- kind: Pod
  labelSelector: %[1]s
rules:
- name: cost-center-from-namespace
  kinds: [Pod]
  copyFromNamespace: {labels: [%[2]s]}
`, spec.Selector, spec.Label)
}

// ReportConfig is Config with a rule that copies from the pods' owners as
// well (team, which the seed's ReplicaSets and Deployments carry with the
// pods' value): the live report
// then lists the Namespaces and the owners first and keeps an index of them,
// whose cost the bench's report scenario measures. The pods' owner
// references do not say their ReplicaSet controls them (see seed), so the
// rule finds no owner to copy from and the report's findings are Config's.
func ReportConfig(spec Spec) string {
	return Config(spec) + `- name: part-of-from-owner
  kinds: [Pod]
  copyFromOwner: {kinds: [Deployment, ReplicaSet], labels: [team]}
`
}

func startMetawatch(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters, opts metamanager.Options) (*Running, error) {
	conf, err := config.Parse([]byte(Config(spec)))
	if err != nil {
		return nil, err
	}
	watches, _, err := apiserver.Resolve(cfg, conf)
	if err != nil {
		return nil, err
	}
	rulesByKind, err := rules.Compile(conf)
	if err != nil {
		return nil, err
	}
	opts.MetricsBindAddress = "0"
	var relists atomic.Int64
	if !opts.StockInformers {
		opts.Relists = metacache.NewRelists()
		opts.Relists.OnRelisted(podGVK.GroupKind(), func() { relists.Add(1) })
	}
	if spec.Shard != nil {
		opts.ShardFilter = &metacache.ShardFilter{Cover: sharding.NewCoverage(spec.Shard.Buckets()), ServerSide: spec.Shard.ServerSide}
	}
	mgr, err := metamanager.New(cfg, watches, opts)
	if err != nil {
		return nil, err
	}
	s := settings.Defaults()
	s.MaxConcurrentReconciles = spec.Concurrency
	if err := rulecontroller.Setup(mgr, watches, rulesByKind, &s, rulecontroller.Wiring{}); err != nil {
		return nil, err
	}
	counters.readReconciles = reconcileTotal
	running, err := startCounted(ctx, mgr.GetCache(), mgr.Start, counters, metacache.NewObject(podGVK), metacache.NewObject(namespaceGVK))
	if err == nil && opts.Relists != nil {
		running.Relists = relists.Load
	}
	return running, err
}

// reconcileTotal is controller_runtime_reconcile_total summed over metawatch's controllers.
func reconcileTotal() int64 {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		return 0
	}
	var total float64
	for _, f := range families {
		if f.GetName() == "controller_runtime_reconcile_total" {
			total += sum(f.GetMetric())
		}
	}
	return int64(total)
}

// unchangedTotal is metawatch_watch_events_unchanged_total summed over its
// resources, collected from the counter itself: a Gather of the whole
// registry at every snapshot would be CPU of the measured process.
func unchangedTotal() int64 {
	ch := make(chan prometheus.Metric)
	go func() {
		telemetry.UnchangedEvents.Collect(ch)
		close(ch)
	}()
	var total float64
	for m := range ch {
		var d dto.Metric
		if m.Write(&d) == nil {
			total += d.GetCounter().GetValue()
		}
	}
	return int64(total)
}

func sum(ms []*dto.Metric) float64 {
	var total float64
	for _, m := range ms {
		total += m.GetCounter().GetValue()
	}
	return total
}

// shrinkSteps are stock metadata-only caches with metacache.Shrink's steps added
// one at a time, ending at what metawatch's cache keeps.
func shrinkSteps() []Variant {
	var steps []Variant
	var shrink metacache.Shrink
	strip := false
	add := func(name, description string, step func()) {
		step()
		s, st := shrink, strip
		steps = append(steps, Variant{Name: name, Description: description, CacheOnly: true,
			Start: func(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters) (*Running, error) {
				return startShrunkCache(ctx, cfg, spec, counters, s, st)
			}})
	}
	floor := Variant{Name: "metadata-cache", Description: "cache only: stock controller-runtime metadata-only cache, no transform, no controller (the least a stock user can run)",
		CacheOnly: true, Start: func(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters) (*Running, error) {
			return startShrunkCache(ctx, cfg, spec, counters, metacache.Shrink{}, false)
		}}
	steps = append(steps, floor, onOneP(floor, "cache only: metadata-cache with GOMAXPROCS=1 (the floor, one P)"))
	add("step1-managedfields", "cache only: metadata, other managers' managedFields dropped by a transform", func() { shrink.ManagedFields = true })
	add("step2-strip-before-decode", "cache only: + managedFields stripped from the protobuf before decoding", func() { strip = true })
	add("step3-annotations", "cache only: + annotations no rule reads dropped", func() { shrink.Annotations = true })
	add("step4-intern", "cache only: + repeated strings interned", func() { shrink.Intern = true })
	add("step5-share-labels", "cache only: + equal label sets share one map", func() { shrink.ShareLabels = true })
	add("step6-unread-fields", "cache only: + ownerReferences, finalizers, generateName dropped", func() { shrink.UnreadFields = true })
	// The name it had as an experiment, before metawatch's cache adopted it.
	add("step7-compact-objects", "cache only: + each object packed into 128 bytes, given back whole by every read (= metawatch's cache)", func() { shrink.Pack = true })
	return steps
}

func startShrunkCache(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters, shrink metacache.Shrink, strip bool) (*Running, error) {
	if strip {
		cfg = stripped(cfg)
	}
	return startCache(ctx, cfg, spec, counters, cache.Options{DefaultTransform: shrink.Transform()}, metacache.NewObject(podGVK))
}

// stripped is cfg through the stripping transport, as the steps from step2 on use it.
func stripped(cfg *rest.Config) *rest.Config {
	return wire.StripManagedFields(cfg, []string{authority.DefaultFieldManager}, wire.Options{}, nil)
}
