package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/bench/kwok"
	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/bench/report"
	"github.com/metawatch/metawatch/bench/scenario"
	"github.com/metawatch/metawatch/bench/scenarios/converge"
	"github.com/metawatch/metawatch/bench/scenarios/relist"
	"github.com/metawatch/metawatch/bench/seed"
	"github.com/metawatch/metawatch/bench/target"
	"github.com/metawatch/metawatch/bench/variant"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// costCenter is the label the rule copies from the namespace to its pods.
const costCenter = "cost-center"

// harness is the parent process: it owns the cluster, the population and the report.
type harness struct {
	o          options
	kubeconfig string
	local      bool // the local control plane: thrown away at the end, nothing to delete
	cfg        *rest.Config
	client     client.Client
	population seed.Population
	size       int                // pods seeded so far
	observer   *scenario.Observer // the first namespace's pods, once seeded
	variants   []variant.Variant
	run        report.Run
	node       target.PodHost      // where the chart variant runs: --local-cluster's node, a kind cluster's
	chart      *chartSetup         // set up by the chart variant's first run
	kwok       *kwok.Kwok          // the simulated nodes of --kwok-nodes, if any
	shardGate  func(on bool) error // restarts the API server with ShardedListAndWatch on or off; nil if not ours
	// seedVia is "etcd" where pods past the first namespace are copied
	// into controlPlane's etcd, else "api".
	seedVia      string
	controlPlane *controlplane.ControlPlane
	// billMeter reads the local API server for the bill scenario, at the
	// current size (nil: no bill taken).
	billMeter *probe.APIServer
	// everyNamespace observes every namespace's pods, once the fanout scenario runs.
	everyNamespace *scenario.Observer
}

// run is the whole benchmark: open the target, then for each size grow the
// population, take the bare-client reference and measure every variant, and
// write the report.
func run(ctx context.Context, o options) error {
	h, stop, err := openHarness(ctx, o)
	if err != nil {
		return err
	}
	defer stop()
	for _, n := range o.sizes {
		if err := h.measureSize(ctx, n); err != nil {
			return fmt.Errorf("%d pods: %w", n, err)
		}
		// After each size, so a long run that fails later keeps what it measured.
		if err := report.Write(o.out, h.run); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "bench: report in %s (README.md, results.json, memory.png, latency.png)\n", o.out)
	return nil
}

func openHarness(ctx context.Context, o options) (*harness, func(), error) {
	variants, err := variantsOf(o.variants)
	if err != nil {
		return nil, nil, err
	}
	var tgt *target.Cluster
	if o.localCluster {
		tgt, err = target.OpenLocalCluster(ctx)
	} else {
		tgt, err = target.Open(ctx, o.kind)
	}
	if err != nil {
		return nil, nil, err
	}
	h, err := newHarness(ctx, o, tgt, variants)
	if err == nil {
		err = h.startKwok(ctx)
	}
	if err != nil {
		tgt.Stop()
		return nil, nil, err
	}
	return h, func() { h.cleanUp(); tgt.Stop() }, nil
}

// startKwok starts the simulated nodes of --kwok-nodes and binds the pods seeded from now on to them.
func (h *harness) startKwok(ctx context.Context) error {
	if h.o.kwokNodes == 0 {
		return nil
	}
	k, err := kwok.Start(ctx, h.client, h.kubeconfig, h.o.kwokNodes, os.Stderr)
	if err != nil {
		return fmt.Errorf("--kwok-nodes: %w", err)
	}
	h.kwok, h.population.Schedule = k, k.Schedule
	return nil
}

func newHarness(ctx context.Context, o options, tgt *target.Cluster, variants []variant.Variant) (*harness, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", tgt.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, err
	}
	if err := seed.Leftover(ctx, c); err != nil {
		return nil, err
	}
	if slices.ContainsFunc(variants, func(v variant.Variant) bool { return v.Deployed }) && tgt.Pods != nil {
		if err := refuseAnotherInstallation(ctx, cfg); err != nil { // before minutes of seeding
			return nil, err
		}
	}
	if o.has("relist") && tgt.ControlPlane == nil {
		return nil, relist.ErrNotLocal
	}
	via, err := seedVia(o, tgt)
	if err != nil {
		return nil, err
	}
	h := &harness{o: o, kubeconfig: tgt.Kubeconfig, local: tgt.Local, cfg: cfg, client: c, variants: variants, node: tgt.Pods, shardGate: tgt.ShardGate,
		seedVia: via, controlPlane: tgt.ControlPlane,
		population: seed.Population{Client: c, PerNamespace: o.perNamespace, Concurrency: o.seedConcurrency, Log: os.Stderr, Lean: o.leanPods}}
	h.run = report.Run{Machine: describeMachine(cfg, tgt), Options: reportOptions(o), Baseline: variants[0].Name}
	return h, nil
}

func variantsOf(names []string) ([]variant.Variant, error) {
	var vs []variant.Variant
	for _, name := range names {
		v, err := variant.Named(name)
		if err != nil {
			return nil, fmt.Errorf("--variants: %w", err)
		}
		vs = append(vs, v)
	}
	return vs, nil
}

// cleanUp deletes the population, stops kwok and deletes the simulated
// nodes, unless --keep. The namespaces go first, and are waited for, while
// kwok still runs: a pod on a simulated node is gone only once its node's
// kwok has seen it terminate, and with kwok stopped it would stay
// Terminating until the pod garbage collector found its node deleted.
func (h *harness) cleanUp() {
	deleting := !h.o.keep && !h.local
	if deleting {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		if err := seed.DeleteAndWait(ctx, h.client); err != nil {
			fmt.Fprintf(os.Stderr, "bench: deleting the bench namespaces: %v (delete them with `kubectl delete namespace -l %s`)\n", err, seed.Selector)
		}
		cancel()
	}
	if h.kwok != nil {
		if err := h.kwok.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		}
	}
	if !deleting {
		return
	}
	if err := kwok.DeleteNodes(context.Background(), h.client); err != nil {
		fmt.Fprintf(os.Stderr, "bench: deleting the simulated nodes: %v (delete them with `kubectl delete node -l %s=true`)\n", err, kwok.NodeLabel)
	}
}

// measureSize grows the population to n pods and measures every variant on it.
func (h *harness) measureSize(ctx context.Context, n int) error {
	if err := h.grow(ctx, n); err != nil {
		return err
	}
	if h.o.has("converge") || h.o.has("churn") {
		if err := h.bare(ctx, n); err != nil {
			return err
		}
	}
	if h.o.has("bill") && !h.o.fanOutOnly() {
		if err := h.billAlone(ctx, n); err != nil {
			return fmt.Errorf("bill: %w", err)
		}
	}
	for _, v := range h.variants {
		if h.o.fanOutOnly() {
			break // the fan-out's variants are its own
		}
		if limit, ok := h.o.variantMaxPods[v.Name]; ok && n > limit {
			fmt.Fprintf(os.Stderr, "bench: %d pods: %s skipped (--variant-max-pods %s=%d)\n", n, v.Name, v.Name, limit)
			continue
		}
		fmt.Fprintf(os.Stderr, "bench: %d pods: %s\n", n, v.Name)
		r, err := h.measureVariant(ctx, v, n)
		if err != nil {
			return fmt.Errorf("variant %s: %w", v.Name, err)
		}
		h.run.Results = append(h.run.Results, r)
		h.save()
	}
	if h.o.has("fanout") {
		if err := h.fanout(ctx, n); err != nil {
			return fmt.Errorf("fanout: %w", err)
		}
	}
	h.recordControlPlane(ctx, n) // before the shards scenario restarts the API server
	if err := h.perSizeScenarios(ctx, n); err != nil {
		return err
	}
	return nil
}

// save writes the report of what was measured so far: a long run stopped
// or failed later keeps it.
func (h *harness) save() {
	if err := report.Write(h.o.out, h.run); err != nil {
		fmt.Fprintf(os.Stderr, "bench: writing the report so far: %v\n", err)
	}
}

func (h *harness) grow(ctx context.Context, n int) error {
	from := h.size
	if n > from {
		start := time.Now()
		fmt.Fprintf(os.Stderr, "bench: creating pods %d..%d (and their namespaces, Deployments, Services, ConfigMaps) via %s\n", from, n-1, h.seedVia)
		grow := h.population.Grow
		if h.seedVia == "etcd" {
			grow = h.growInEtcd
		}
		if err := grow(ctx, from, n); err != nil {
			return err
		}
		if h.kwok != nil {
			if err := h.kwok.WaitRunning(ctx, seed.Selector, 2*time.Minute, os.Stderr); err != nil {
				return err
			}
		}
		took := time.Since(start)
		fmt.Fprintf(os.Stderr, "bench: seeded in %s\n", took.Round(time.Second))
		h.run.Seeding = append(h.run.Seeding, report.Seeding{From: from, To: n, Via: h.seedVia, Seconds: took.Seconds()})
		if err := quietAfterSeeding(ctx, took); err != nil {
			return err
		}
	}
	h.size = max(n, from)
	if h.observer != nil {
		return nil
	}
	var err error
	h.observer, err = scenario.Observe(ctx, h.cfg, seed.NamespaceName(0), seed.Selector, costCenter)
	return err
}

// quietAfterSeeding waits a tenth of the seeding's time (at most a minute)
// before the first variant is measured. Without it, the first variant's sync
// at 50k pods took 7.3 s against 3.4 to 4.6 s for the next ones (issue #14's
// 300k run): right after seeding, the API server still collects the garbage of
// a heap of several GB and etcd compacts. With it, the first one was not the
// slowest.
func quietAfterSeeding(ctx context.Context, seeding time.Duration) error {
	wait := min(seeding/10, time.Minute)
	fmt.Fprintf(os.Stderr, "bench: letting the API server settle for %s\n", wait.Round(time.Second))
	return scenario.Sleep(ctx, wait)
}

// bare takes the bare-client reference for convergence, which also leaves
// every pod of the first namespace converged as metawatch's field manager: each
// variant starts from the same state.
func (h *harness) bare(ctx context.Context, n int) error {
	bare, err := converge.RunBare(ctx, h.client, h.observer, n, h.o.concurrency)
	if err != nil {
		return err
	}
	h.run.Bare = append(h.run.Bare, bare)
	return nil
}

func reportOptions(o options) report.Options {
	return report.Options{Sizes: slices.Clone(o.sizes), PerNamespace: o.perNamespace, Concurrency: o.concurrency, Scenarios: o.scenarios,
		ChurnStatusPerSec: o.statusRate, ChurnLabelsPerSec: o.labelRate, ChurnSeconds: o.churnDuration.Seconds(), KwokNodes: o.kwokNodes,
		FirehosePerSec: o.firehoseRate, FirehoseSeconds: o.firehoseDuration.Seconds(), SteadySeconds: o.steadyWindow.Seconds(), LeanPods: o.leanPods,
		ReportKubectlMaxPods: o.reportKubectlMaxPods, FanOutIdleSeconds: fanOutIdleSeconds(o), FanOutQPS50MaxPods: o.fanOutQPS50MaxPods,
		VariantMaxPods: o.variantMaxPods, Command: makeCommand(os.Args[1:])}
}

// fanOutIdleSeconds is --fanout-idle in seconds where the fanout scenario runs.
func fanOutIdleSeconds(o options) float64 {
	if !o.has("fanout") {
		return 0
	}
	return o.fanOutIdle.Seconds()
}

// makeCommand is the make command line that runs the bench with args, each
// quoted for a shell where it needs it.
func makeCommand(args []string) string {
	if len(args) == 0 {
		return "make bench"
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = a
		if a == "" || strings.ContainsAny(a, " \t'\"$`\\*?[]{}();&|<>~#") {
			quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return `make bench ARGS="` + strings.Join(quoted, " ") + `"`
}

// render writes the report of an earlier run's results.json into out.
func render(resultsJSON, out string) error {
	data, err := os.ReadFile(resultsJSON)
	if err != nil {
		return err
	}
	var r report.Run
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("%s: %w", resultsJSON, err)
	}
	return report.Write(out, r)
}
