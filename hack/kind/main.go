// Command kind is `make kind`: a kind cluster on this machine, from a node
// image built here without a registry (hack/kindnode), until Ctrl-C or
// `kind delete cluster`, leaving nothing behind but the cached node image.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// A flag set of its own: the global one carries flags that imported
	// packages register (controller-runtime's --kubeconfig), which make kind
	// would accept and ignore.
	fs := flag.NewFlagSet("make kind", flag.ExitOnError)
	var o options
	fs.StringVar(&o.name, "name", "metawatch-bench", "The kind cluster's name (the bench's --kind takes the same).")
	fs.StringVar(&o.config, "config", "bench/kind-config.yaml", "The kind cluster configuration it is created from.")
	_ = fs.Parse(os.Args[1:])
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "kind: unexpected arguments %q: make kind takes only flags (ARGS=\"--name NAME --config FILE\")\n", fs.Args())
		os.Exit(2)
	}
	// SIGHUP too: a closed terminal must clean up as Ctrl-C does.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	err := run(ctx, o)
	interrupted := ctx.Err() != nil
	stop()
	if err != nil {
		if interrupted {
			fmt.Fprintf(os.Stderr, "kind: interrupted: %v\n", err)
		} else {
			fmt.Fprintf(os.Stderr, "kind: %v\n", err)
		}
		os.Exit(1)
	}
}
