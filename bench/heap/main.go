// Command heap measures what a cache of N realistic pods costs in one process
// per variant, against the same API server in the same run: retained heap per
// pod after GC, bytes allocated during the initial sync, bytes received.
//
//	go run ./bench/heap                      # local control plane, 20k pods
//	go run ./bench/heap --kubeconfig ~/.kube/config --pods 50000
//	go run ./bench/heap --kind metawatch-bench --pods 100000
//
// The full harness (scenarios, variants, plots) is bench/'s job; this is the
// foundation's memory figure, kept small on purpose.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/metawatch/metawatch/bench/target"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/metawatch/metawatch/pkg/controlplane"
)

type options struct {
	pods        int
	namespace   string
	concurrency int
	variants    string
	kubeconfig  string
	variant     string // set in the child process that measures one variant
	json        bool
	kind        string
}

func main() {
	var o options
	flag.IntVar(&o.pods, "pods", 20000, "Realistic pods to create and cache.")
	flag.StringVar(&o.namespace, "namespace", "bench-heap", "Namespace the pods are created in (must not exist).")
	flag.IntVar(&o.concurrency, "concurrency", 32, "Concurrent requests while seeding.")
	flag.StringVar(&o.variants, "variants", strings.Join(variantNames(), ","), "Variants to measure, each in its own process.")
	flag.StringVar(&o.variant, "measure", "", "Internal: measure this one variant and print its result as JSON.")
	flag.StringVar(&o.kind, "kind", "", "Run against kind cluster NAME (created from "+target.KindConfig+" if missing).")
	flag.BoolVar(&o.json, "json", false, "Print the results as JSON instead of a Markdown table.")
	flag.Parse()
	ctrl.SetLogger(logr.Discard()) // the figures are the output; controller logs would drown them
	o.kubeconfig = controlplane.ExternalKubeconfig()
	// On Ctrl-C or SIGTERM the run stops and the local control plane is stopped with it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if o.variant != "" {
		err = measureAndPrint(ctx, o)
	} else {
		err = run(ctx, o)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "heap: %v\n", err)
		os.Exit(1)
	}
}
