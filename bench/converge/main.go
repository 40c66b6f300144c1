// Command converge measures how fast metawatch converges 10k pods after one
// namespace label change, against a bare client doing the same server-side
// applies with the same concurrency, on the same API server, in the same run.
//
//	go run ./bench/converge                  # local control plane, 10k pods, concurrency 16
//	go run ./bench/converge --pods 2000 --concurrency 8 --kubeconfig ~/.kube/config
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/metawatch/metawatch/bench/target"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/bench/seed"
	"github.com/metawatch/metawatch/pkg/controlplane"
)

type options struct {
	pods, concurrency int
	namespace, kind   string
}

func main() {
	var o options
	flag.IntVar(&o.pods, "pods", 10000, "Pods in the namespace whose label changes.")
	flag.IntVar(&o.concurrency, "concurrency", 16, "metawatch's --max-concurrent-reconciles, and the bare client's workers.")
	flag.StringVar(&o.namespace, "namespace", "bench-converge", "Namespace to create (must not exist).")
	flag.StringVar(&o.kind, "kind", "", "Run against kind cluster NAME (created from "+target.KindConfig+" if missing).")
	verbose := flag.Bool("verbose", false, "Show metawatch's log (development mode) instead of only the figures.")
	flag.Parse()
	if *verbose {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		ctrl.SetLogger(logr.Discard()) // the figures are the output; controller logs would drown them
	}
	// On Ctrl-C or SIGTERM the run stops and the local control plane is stopped with it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "converge: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	cfg, stop, err := openTarget(ctx, o.kind)
	if err != nil {
		return err
	}
	defer stop()
	cfg.QPS, cfg.Burst = -1, 0 // both sides unthrottled: the API server is what is measured against
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	if err := seedNamespace(ctx, c, o); err != nil {
		return err
	}
	mw, err := timeMetawatch(ctx, cfg, c, o)
	if err != nil {
		return err
	}
	bare, err := timeBareClient(ctx, c, o)
	if err != nil {
		return err
	}
	report(o, mw, bare)
	return nil
}

// openTarget is the benchmark's cluster (see bench/target) as a client config.
func openTarget(ctx context.Context, kind string) (*rest.Config, func(), error) {
	cluster, err := target.Open(ctx, kind)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig)
	if err != nil {
		cluster.Stop()
		return nil, nil, err
	}
	return cfg, cluster.Stop, nil
}

func seedNamespace(ctx context.Context, c client.Client, o options) error {
	if err := seed.Namespace(ctx, c, o.namespace, map[string]string{"cost-center": "a"}); err != nil {
		return err
	}
	start := time.Now()
	fmt.Fprintf(os.Stderr, "converge: creating %d realistic pods in %s\n", o.pods, o.namespace)
	if err := seed.Pods(ctx, c, o.namespace, o.pods, 32, os.Stderr); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "converge: seeded in %s\n", time.Since(start).Round(time.Second))
	return nil
}

func report(o options, mw, bare time.Duration) {
	mwRate, bareRate := float64(o.pods)/mw.Seconds(), float64(o.pods)/bare.Seconds()
	fmt.Printf("\n%d pods, concurrency %d, kube-apiserver %s, same run\n\n", o.pods, o.concurrency, controlplane.KubernetesVersion)
	fmt.Println("| | time | applies/s |")
	fmt.Println("|---|---|---|")
	fmt.Printf("| metawatch: namespace label change to every pod relabelled | %.2fs | %.0f |\n", mw.Seconds(), mwRate)
	fmt.Printf("| bare client: the same server-side applies | %.2fs | %.0f |\n", bare.Seconds(), bareRate)
	fmt.Printf("\nmetawatch throughput / bare client throughput = %.2f (target >= 0.8)\n", mwRate/bareRate)
}
