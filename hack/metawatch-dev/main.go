// Command metawatch-dev is what `make run` runs: metawatch in the foreground,
// against $KUBECONFIG when one is given, else against a local control plane it
// starts (and stops on Ctrl-C) with the default selectors and a demo namespace.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

type options struct {
	metawatchBin string
	selectors    string
	demo         string
	kubeconfig   string
	stateDir     string
	extraArgs    []string
}

func main() {
	// First: the local control plane (envtest) logs through controller-runtime,
	// which prints a stack trace if nothing set its logger.
	ctrllog.SetLogger(zap.New())
	var o options
	flag.StringVar(&o.metawatchBin, "metawatch", "bin/metawatch", "The metawatch binary to run.")
	flag.StringVar(&o.selectors, "selectors", "selectors/default.yaml", "The selectors ConfigMap manifest.")
	flag.StringVar(&o.demo, "demo", "hack/demo.yaml", "Demo objects to create on the local control plane.")
	flag.StringVar(&o.stateDir, "state-dir", "bin/local", "Where the local control plane's kubeconfig is written.")
	flag.Parse()
	o.kubeconfig = controlplane.ExternalKubeconfig()
	o.extraArgs = flag.Args()
	if err := runUntilSignalled(o); err != nil {
		fmt.Fprintf(os.Stderr, "metawatch-dev: %v\n", err)
		os.Exit(1)
	}
}

// runUntilSignalled is run, cancelled by Ctrl-C or SIGTERM.
func runUntilSignalled(o options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, o)
}

func run(ctx context.Context, o options) error {
	if o.kubeconfig != "" {
		say("running against %s with --config-file %s and --dry-run: nothing is written to that cluster (ARGS=--dry-run=false writes)", o.kubeconfig, o.selectors)
		return runWatcher(ctx, o.metawatchBin, append([]string{"--kubeconfig", o.kubeconfig, "--config-file", o.selectors, "--dry-run"}, o.extraArgs...))
	}
	return runLocal(ctx, o)
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "metawatch-dev: "+format+"\n", args...)
}
