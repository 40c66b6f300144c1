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
	var o options
	flag.StringVar(&o.name, "name", "metawatch", "The kind cluster's name.")
	flag.StringVar(&o.config, "config", "bench/kind-config.yaml", "The kind cluster configuration it is created from.")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "kind: %v\n", err)
		os.Exit(1)
	}
}
