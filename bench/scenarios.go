package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/bench/probe"
	"github.com/metawatch/metawatch/bench/scenario"
	"github.com/metawatch/metawatch/bench/scenarios/bill"
	"github.com/metawatch/metawatch/bench/scenarios/failover"
	"github.com/metawatch/metawatch/bench/scenarios/fanout"
	"github.com/metawatch/metawatch/bench/scenarios/livereport"
	"github.com/metawatch/metawatch/bench/scenarios/shards"
	"github.com/metawatch/metawatch/bench/seed"
	"github.com/metawatch/metawatch/bench/variant"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// scenarioDef is one row of the scenario table: the name --scenarios takes,
// what --help says it measures, and, for a scenario that runs once per size
// after every variant was measured, how it runs.
type scenarioDef struct {
	name string
	// help is the name and what it measures, as --help lists it.
	help string
	// perSize runs the scenario at n pods after the variants and the
	// control plane's figures (nil: it runs within each variant's
	// measurement, or, as fanout and bill, at a place of its own).
	perSize func(h *harness, ctx context.Context, n int) error
	// largestOnly runs perSize at the largest of --sizes only.
	largestOnly bool
}

// scenarioTable is every scenario the harness runs, in the order the
// per-size ones run: to add a scenario, add its row (and its figures to
// bench/report). See bench/README.md.
var scenarioTable = []scenarioDef{
	{name: "sync", help: "sync (always: every variant starts with it)"},
	{name: "converge", help: "converge"},
	{name: "churn", help: "churn"},
	{name: "firehose", help: "firehose (status-only updates as fast as the API server takes them: CPU, allocations and GC per event, " +
		"a CPU profile; every variant, cache-only ones too)"},
	{name: "report", help: "report (metawatch check --live --report against kubectl get -o yaml of the same pods: time and peak RSS)",
		perSize: (*harness).liveReport},
	{name: "shards", help: "shards (--shard-replicas sharded metawatch replicas against the same pods, filtered by the API server and, " +
		"with its gate off, on receipt)", perSize: (*harness).shards},
	// failover: at the largest size only, where what a cold standby lists matters.
	{name: "failover", help: "failover (two metawatch processes with leader election, cold then --warm-standby: the leader killed, " +
		"the time to the first write)", perSize: (*harness).failover, largestOnly: true},
	{name: "fanout", help: "fanout (every bench namespace relabelled until every pod carries the new value: the metawatch binary as it " +
		"runs by default, then at a fixed 50 writes/s, then the bare client; time, writes/s, a probe client's GET and another writer's " +
		"patch p99, the API server's CPU; alone, it runs none of --variants)"},
	{name: "bill", help: "bill (what each variant costs the local API server beyond the same work unwatched: bytes per cached pod and " +
		"per status event, its CPU in the sync and per status update, its memory; runs the firehose too)"},
	{name: "relist", help: "relist (after each variant's steady window, the local kube-apiserver restarted past the variant's " +
		"resourceVersion, so that it lists every pod again: its peak and live heap during the relist, the time to every pod received, " +
		"its steady RSS after; the local control plane only, not with bill)"},
}

// scenarioNames are the names --scenarios takes.
func scenarioNames() []string {
	names := make([]string, len(scenarioTable))
	for i, s := range scenarioTable {
		names[i] = s.name
	}
	return names
}

// scenariosHelp is what --help says of --scenarios: each row's help.
func scenariosHelp() string {
	helps := make([]string, len(scenarioTable))
	for i, s := range scenarioTable {
		helps[i] = s.help
	}
	return "Scenarios: " + strings.Join(helps, ", ") + "."
}

// perSizeScenarios runs, at n pods, each per-size scenario of the table
// that was asked for, saving the report after each.
func (h *harness) perSizeScenarios(ctx context.Context, n int) error {
	for _, s := range scenarioTable {
		if s.perSize == nil || !h.o.has(s.name) || s.largestOnly && n != slices.Max(h.o.sizes) {
			continue
		}
		if err := s.perSize(h, ctx, n); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		h.save()
	}
	return nil
}

// fanout runs the fanout scenario (bench/scenarios/fanout) at n pods: on
// every bench namespace, observed by a watch of its own, with the metawatch
// binary and the metawatch variant's configuration.
func (h *harness) fanout(ctx context.Context, n int) error {
	if err := h.observeEveryNamespace(ctx); err != nil {
		return err
	}
	if err := h.everyNamespace.WaitPods(ctx, n, 10*time.Minute); err != nil {
		return err
	}
	namespaces, err := h.benchNamespaces(ctx)
	if err != nil {
		return err
	}
	bin, conf, remove, err := buildMetawatch(variant.Config(h.spec()))
	if err != nil {
		return err
	}
	defer remove()
	return fanout.Run(ctx, fanout.Setup{Client: h.client, Config: h.cfg, Kubeconfig: h.kubeconfig, Every: h.everyNamespace, First: h.observer,
		Namespaces: namespaces, Bin: bin, ConfigFile: conf, Concurrency: h.o.concurrency, Idle: h.o.fanOutIdle,
		QPS50MaxPods: h.o.fanOutQPS50MaxPods, VariantMaxPods: h.o.variantMaxPods,
		APIServerCPU: func() func() *float64 { return h.apiServerMeter("fanout").CPUSince() },
		Record: func(f fanout.Result) {
			h.run.FanOuts = append(h.run.FanOuts, f)
			h.save()
		}}, n)
}

// billAlone takes the bill's reference (bench/scenarios/bill) at n pods,
// before any variant runs. It leaves h.billMeter set for the variants, nil
// (and the bill not taken, saying why) where the API server is not the
// local control plane's or restarted while it was read.
func (h *harness) billAlone(ctx context.Context, n int) error {
	if h.billMeter == nil || !h.billMeter.Same() { // the same process keeps the peak it had before
		h.billMeter = h.apiServerMeter("bill")
	}
	if h.billMeter == nil {
		fmt.Fprintf(os.Stderr, "bench: %d pods: bill: the API server is not the local control plane's: the bill is not taken\n", n)
		return nil
	}
	ref, err := bill.Alone(ctx, bill.Setup{API: h.billMeter, Client: h.client, Observer: h.observer, Updates: h.firehoseOptions()}, n)
	if err != nil {
		return err
	}
	if ref == nil {
		h.billMeter = nil // lost: no bill at this size
		return nil
	}
	h.run.APIServerAlone = append(h.run.APIServerAlone, *ref)
	return nil
}

// apiServerMeter is the local control plane's kube-apiserver, for the
// fanout and bill scenarios (named by forScenario); nil, and why on stderr,
// where the API server is not the local control plane's.
func (h *harness) apiServerMeter(forScenario string) *probe.APIServer {
	if h.controlPlane == nil {
		return nil
	}
	return probe.APIServerAt(h.cfg.Host, forScenario)
}

// observeEveryNamespace starts the observer of every namespace's pods, once.
func (h *harness) observeEveryNamespace(ctx context.Context) error {
	if h.everyNamespace != nil {
		return nil
	}
	var err error
	h.everyNamespace, err = scenario.Observe(ctx, h.cfg, metav1.NamespaceAll, seed.Selector, costCenter)
	return err
}

// benchNamespaces are the names of the namespaces the harness seeded.
func (h *harness) benchNamespaces(ctx context.Context) ([]string, error) {
	var list corev1.NamespaceList
	if err := h.client.List(ctx, &list, client.HasLabels{seed.BenchLabel}); err != nil {
		return nil, err
	}
	names := make([]string, len(list.Items))
	for i, ns := range list.Items {
		names[i] = ns.Name
	}
	return names, nil
}

// shards runs the shards scenario (bench/scenarios/shards) at n pods:
// metawatch's sharded replicas, each a process of its own, the churn sent
// as the churn scenario sends it (by kwok, with simulated nodes).
func (h *harness) shards(ctx context.Context, n int) error {
	return shards.Run(ctx, shards.Setup{Child: h.childOptions(), Config: h.cfg, ShardGate: h.shardGate, Replicas: h.o.shardReplicas,
		ClientToo: h.o.shardsClientToo, SteadyWindow: h.o.steadyWindow,
		Churn: func(ctx context.Context, opts scenario.ChurnOptions) (int, error) {
			_, updates, err := h.churnSender().Send(ctx, opts)
			return updates, err
		},
		ChurnOpts: scenario.ChurnOptions{StatusPerSecond: h.o.statusRate, Duration: h.o.churnDuration},
		Record:    func(r shards.Result) { h.run.Shards = append(h.run.Shards, r) }}, n)
}

// failover runs the failover scenario (bench/scenarios/failover) at n pods
// with the metawatch binary, the metawatch variant's configuration and a
// copyFromOwner rule.
func (h *harness) failover(ctx context.Context, n int) error {
	bin, conf, remove, err := buildMetawatch(variant.ReportConfig(h.spec()))
	if err != nil {
		return err
	}
	defer remove()
	failovers, err := failover.Run(ctx, failover.Setup{Bin: bin, Config: conf, Kubeconfig: h.kubeconfig, Client: h.client, Observer: h.observer}, n)
	h.run.Failovers = append(h.run.Failovers, failovers...)
	return err
}

// liveReport runs the report scenario (bench/scenarios/livereport) at n
// pods: the metawatch binary with the metawatch variant's configuration and
// a copyFromOwner rule, any --report-binaries, and kubectl.
func (h *harness) liveReport(ctx context.Context, n int) error {
	bin, conf, remove, err := buildMetawatch(variant.ReportConfig(h.spec()))
	if err != nil {
		return err
	}
	defer remove()
	tools := []livereport.Tool{{Name: "metawatch", Path: bin}}
	for _, b := range h.o.reportBinaries {
		tools = append(tools, livereport.Tool{Name: b.name, Path: b.path})
	}
	reports, err := livereport.Run(ctx, livereport.Setup{Tools: tools, Config: conf, Kubeconfig: h.kubeconfig, Selector: seed.Selector,
		KubectlMaxPods: h.o.reportKubectlMaxPods}, n)
	h.run.LiveReports = append(h.run.LiveReports, reports...)
	return err
}

// buildMetawatch builds the metawatch binary, as users run it, and writes
// config beside it (config.yaml): the report and failover scenarios give
// the metawatch variant's configuration with a rule that copies from owners
// too (variant.ReportConfig), the fanout scenario the variant's own.
func buildMetawatch(config string) (bin, conf string, remove func(), err error) {
	bin, remove, err = testkit.Build("github.com/metawatch/metawatch/cmd/metawatch", "metawatch")
	if err != nil {
		return "", "", nil, err
	}
	conf = filepath.Join(filepath.Dir(bin), "config.yaml")
	if err := os.WriteFile(conf, []byte(config), 0o600); err != nil {
		remove()
		return "", "", nil, err
	}
	return bin, conf, remove, nil
}
