// Command bench is metawatch's benchmark harness: it seeds a cluster with
// realistic objects, runs each variant (metawatch and what teams run instead,
// see bench/variant) in its own process against it, drives the scenarios
// (the table in scenarios.go; their code in bench/scenario and
// bench/scenarios/<name>) and writes a report (bench/report). See
// bench/README.md.
//
//	make bench                                        # local control plane, 10k/50k/100k pods
//	make bench ARGS="--sizes 2000 --scenarios sync"   # a quick look
//	make bench ARGS="--kind metawatch-bench"          # a kind cluster from bench/kind-config.yaml
//	make bench ARGS="--kubeconfig ~/.kube/config"     # any cluster you may create namespaces in
//	make bench ARGS="--local-cluster"                 # make cluster's one-node cluster, plus metawatch from its chart, pods on kwok nodes
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/metawatch/metawatch/bench/child"
	"github.com/metawatch/metawatch/bench/kwok"
	"github.com/metawatch/metawatch/bench/scenarios/fanout"
	"github.com/metawatch/metawatch/bench/target"
	"github.com/metawatch/metawatch/bench/variant"
)

// options are the harness's flags.
type options struct {
	sizes                     []int
	scenarios, variants       []string
	perNamespace, concurrency int
	seedConcurrency           int
	kwokNodes                 int
	statusRate, labelRate     float64
	churnDuration             time.Duration
	firehoseRate              float64
	firehoseDuration          time.Duration
	steadyWindow              time.Duration
	kind, out, heapProfiles   string
	keep, localCluster        bool
	leanPods                  bool
	seedVia                   string // "etcd" or "api"
	shardReplicas             []int  // the shards scenario's numbers of replicas
	shardsClientToo           bool   // the shards scenario also filters on receipt
	child                     string // set in a variant's own process
	shard                     string // "i/N": the child is sharded replica i of N
	shardServerSide           bool   // the sharded child asks the API server to filter
	render                    string // re-render the report of this results.json
	// reportKubectlMaxPods: the report scenario's kubectl baseline runs only
	// at sizes up to this (0: every size).
	reportKubectlMaxPods int
	// fanOutIdle is how long the fanout scenario's probes run idle before each fan-out.
	fanOutIdle time.Duration
	// fanOutQPS50MaxPods: the fanout scenario's metawatch-qps50 runs only at
	// sizes up to this (0: every size).
	fanOutQPS50MaxPods int
	// reportBinaries are other metawatch binaries the report scenario also
	// times, each as tool name (e.g. an earlier commit's, for a before/after).
	reportBinaries []namedBinary
	// variantMaxPods: a variant named here runs only at sizes up to its number of pods.
	variantMaxPods map[string]int
}

func main() {
	o := parseFlags()
	ctrl.SetLogger(logr.Discard()) // the figures are the output; controller logs would drown them
	if err := runUntilSignalled(o); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// runUntilSignalled does what the flags ask; on Ctrl-C or SIGTERM the run
// stops, and the local control plane with it.
func runUntilSignalled(o options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch {
	case o.child != "":
		return child.Serve(ctx, child.Config{Variant: o.child, Concurrency: o.concurrency, HeapProfiles: o.heapProfiles, Pods: o.sizes[0],
			Shard: o.shard, ShardServerSide: o.shardServerSide, Label: costCenter})
	case o.render != "":
		return render(o.render, o.out)
	default:
		return run(ctx, o)
	}
}

func parseFlags() options {
	var o options
	sizes := flag.String("sizes", "10000,50000,100000", "Pods in the cluster, one run of every variant per size (the population grows between sizes).")
	scenarios := flag.String("scenarios", "sync,converge,churn", scenariosHelp())
	variants := flag.String("variants", strings.Join(variant.Names(variant.All()), ","), "Variants to run, each in its own process; the first is the baseline of the ratios.")
	flag.IntVar(&o.perNamespace, "pods-per-namespace", 10000, "Pods per namespace; converge and churn use the first namespace's.")
	flag.IntVar(&o.concurrency, "concurrency", 16, "Concurrent reconciles of every variant, and workers of the bare client.")
	flag.IntVar(&o.seedConcurrency, "seed-concurrency", 32, "Concurrent requests while seeding.")
	shardReplicas := flag.String("shard-replicas", "1,2,3", "The shards scenario's numbers of sharded replicas run at once (1 is the base of its shares).")
	flag.BoolVar(&o.shardsClientToo, "shards-on-receipt", true, "The shards scenario also runs with the API server's ShardedListAndWatch gate off (each replica drops the others' objects on receipt); "+
		"on the local control plane that restarts the API server twice per size.")
	flag.StringVar(&o.seedVia, "seed", "", "How pods are seeded: api (a create and a status update per pod) or etcd (the first namespace through the API, "+
		"the others copied from it straight into etcd while kube-apiserver is stopped; the local control plane only, without --kwok-nodes). "+
		"Default: etcd where it can, else api.")
	flag.Float64Var(&o.statusRate, "churn-status-rate", 100, "Status-only pod updates per second during churn.")
	flag.Float64Var(&o.labelRate, "churn-label-rate", 10, "Label changes per second (the rule's label removed from a pod) during churn.")
	flag.DurationVar(&o.churnDuration, "churn-duration", 30*time.Second, "How long churn runs per variant.")
	flag.Float64Var(&o.firehoseRate, "firehose-rate", 1000, "Status-only pod updates per second the firehose tries (it skips what would exceed 64 requests in flight, so the API server sets the real rate).")
	flag.DurationVar(&o.firehoseDuration, "firehose-duration", 30*time.Second, "How long the firehose runs per variant.")
	flag.DurationVar(&o.steadyWindow, "steady-window", 15*time.Second, "How long each variant runs idle after its sync before its steady RSS is taken (0: not taken).")
	flag.StringVar(&o.kind, "kind", "", "Run against kind cluster NAME (`make kind`'s, or created from "+target.KindConfig+" with the node image built here if missing), "+
		"and add the chart variant and 10 simulated nodes (--kwok-nodes), as --local-cluster does.")
	flag.StringVar(&o.out, "out", "bench/out", "Directory for results.json, README.md and the plots.")
	flag.StringVar(&o.heapProfiles, "heap-profiles", "", "Write each variant's heap profiles to DIR/VARIANT-N-synced.pprof, after its initial sync, and DIR/VARIANT-N-peak.pprof, at the most live heap during it (go tool pprof).")
	flag.BoolVar(&o.localCluster, "local-cluster", false, "Run on the one-node cluster of `make cluster` (root), started and thrown away here, and add the chart variant: metawatch deployed by its Helm chart, and 10 simulated nodes (--kwok-nodes).")
	flag.IntVar(&o.kwokNodes, "kwok-nodes", 0, "Simulated nodes (kwok, built once) to bind the pods to: kwok makes them Running and sends the churn's status updates, as kubelets would. 0: none, the harness writes pod status itself (default 10 with --local-cluster).")
	flag.BoolVar(&o.leanPods, "lean-pods", false, "Seed pods with the same metadata but one bare container (no env, probes, resources or volumes): "+
		"kube-apiserver holds about 61 KB per realistic pod, so a 24 GiB machine cannot hold 300k of them (see bench/README.md).")
	flag.BoolVar(&o.keep, "keep", false, "Keep the seeded namespaces at the end (on a kind cluster or kubeconfig; the local control plane is thrown away).")
	flag.IntVar(&o.reportKubectlMaxPods, "report-kubectl-max-pods", 0, "The report scenario's kubectl baseline runs only at sizes up to this many pods (0: at every size; at 100k realistic pods it ran for more than 15 minutes and took 14 GiB here).")
	flag.DurationVar(&o.fanOutIdle, "fanout-idle", 15*time.Second, "How long the fanout scenario's probes run idle, each variant started, before each fan-out: their idle p99.")
	flag.IntVar(&o.fanOutQPS50MaxPods, "fanout-qps50-max-pods", 0, "The fanout scenario's "+fanout.QPS50+" variant runs only at sizes up to this many pods (0: at every size; at 100k pods it takes about 33 minutes).")
	variantMaxPods := flag.String("variant-max-pods", "", "Variants that run only at sizes up to a number of pods, NAME=PODS,..., the fanout scenario's included (e.g. typed-cache=100000: a typed cache of a million pods "+
		"does not fit beside the API server on 24 GiB).")
	reportBinaries := flag.String("report-binaries", "", "The report scenario also times these metawatch binaries, NAME=PATH,... (e.g. one built from an earlier commit), with the same configuration.")
	flag.StringVar(&o.render, "render", "", "Only write the report (README.md, plots) of results.json FILE into --out, e.g. after changing the report's code.")
	flag.StringVar(&o.child, "child", "", "Internal: run this variant in this process and report to the harness on stdout.")
	flag.StringVar(&o.shard, "shard", "", "Internal: with --child metawatch, run as sharded replica I/N.")
	flag.BoolVar(&o.shardServerSide, "shard-server-side", false, "Internal: with --shard, send the API server a shard selector.")
	flag.Parse()
	o.sizes, o.scenarios, o.variants = mustInts("sizes", *sizes, "a positive number of pods"), split(*scenarios), split(*variants)
	for _, s := range o.scenarios {
		if !slices.Contains(scenarioNames(), s) {
			fmt.Fprintf(os.Stderr, "bench: --scenarios: %q is not a scenario: give some of %s, comma-separated\n", s, strings.Join(scenarioNames(), ","))
			os.Exit(2)
		}
	}
	if o.has("relist") && o.has("bill") {
		fmt.Fprintln(os.Stderr, "bench: --scenarios: relist and bill cannot run together: the relist restarts the API server whose CPU and memory the bill reads")
		os.Exit(2)
	}
	o.shardReplicas = mustInts("shard-replicas", *shardReplicas, "a positive number of replicas")
	o.reportBinaries = mustNamedBinaries("report-binaries", *reportBinaries)
	o.variantMaxPods = mustVariantMaxPods(*variantMaxPods)
	if o.fanOutQPS50MaxPods < 0 || o.fanOutIdle <= 0 {
		fmt.Fprintf(os.Stderr, "bench: --fanout-qps50-max-pods must be 0 (every size) or a number of pods, and --fanout-idle a duration above 0 (e.g. 15s); got %d and %s\n", o.fanOutQPS50MaxPods, o.fanOutIdle)
		os.Exit(2)
	}
	if o.reportKubectlMaxPods < 0 {
		fmt.Fprintf(os.Stderr, "bench: --report-kubectl-max-pods: %d is not a number of pods: give 0 (every size) or more\n", o.reportKubectlMaxPods)
		os.Exit(2)
	}
	// A cluster with a node on this machine runs the chart too, and its pods
	// are bound to simulated nodes, as on a cluster with kubelets.
	hasNode := o.localCluster || o.kind != ""
	if hasNode && !flagSet("variants") {
		o.variants = append(o.variants, variant.Chart().Name)
	}
	if hasNode && !flagSet("kwok-nodes") {
		o.kwokNodes = 10
	}
	if o.kwokNodes < 0 || o.kwokNodes > kwok.MaxNodes {
		fmt.Fprintf(os.Stderr, "bench: --kwok-nodes: %d is not a number of simulated nodes: give 1 to %d, or 0 for none\n", o.kwokNodes, kwok.MaxNodes)
		os.Exit(2)
	}
	return o
}

func flagSet(name string) (set bool) {
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func split(s string) []string { return strings.Split(strings.ReplaceAll(s, " ", ""), ",") }

// mustInts is the comma-separated positive numbers of flag name, or exits
// saying which is not one (what).
func mustInts(name, s, what string) []int {
	var out []int
	for _, f := range split(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "bench: --%s: %q is not %s\n", name, f, what)
			os.Exit(2)
		}
		out = append(out, n)
	}
	return out
}

// namedBinary is a program and the name it has in the report.
type namedBinary struct{ name, path string }

// mustNamedBinaries is the NAME=PATH,... of flag name, each an executable
// file, or exits saying which is not.
func mustNamedBinaries(name, s string) []namedBinary {
	if s == "" {
		return nil
	}
	var out []namedBinary
	for _, f := range split(s) {
		n, path, ok := strings.Cut(f, "=")
		info, err := os.Stat(path)
		if !ok || n == "" || err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			fmt.Fprintf(os.Stderr, "bench: --%s: %q is not NAME=PATH of an executable metawatch binary (e.g. before=/tmp/metawatch-old)\n", name, f)
			os.Exit(2)
		}
		out = append(out, namedBinary{name: n, path: path})
	}
	return out
}

// mustVariantMaxPods is --variant-max-pods, NAME=PODS,..., or exits saying
// which entry is not a known variant and a positive number of pods.
func mustVariantMaxPods(s string) map[string]int {
	out := map[string]int{}
	if s == "" {
		return out
	}
	for _, f := range split(s) {
		name, pods, _ := strings.Cut(f, "=")
		n, err := strconv.Atoi(pods)
		if !knownVariant(name) || err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "bench: --variant-max-pods: %q is not NAME=PODS of a variant (the fanout scenario's included) and a positive number of pods (e.g. typed-cache=100000)\n", f)
			os.Exit(2)
		}
		out[name] = n
	}
	return out
}

// knownVariant reports whether name is a variant of --variants or of the
// fanout scenario.
func knownVariant(name string) bool {
	if _, unknown := variant.Named(name); unknown == nil {
		return true
	}
	return slices.Contains(fanout.Variants(), name)
}

// fanOutOnly reports whether fanout is the only scenario asked for: its
// variants are its own, and none of --variants runs.
func (o options) fanOutOnly() bool { return len(o.scenarios) == 1 && o.scenarios[0] == "fanout" }

func (o options) has(scenario string) bool {
	for _, s := range o.scenarios {
		if s == scenario {
			return true
		}
	}
	return false
}
