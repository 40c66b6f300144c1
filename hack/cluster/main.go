// Command cluster is `make cluster`: a one-node Kubernetes cluster on this
// machine (package cluster), in the foreground until Ctrl-C or SIGTERM, which
// stop it and remove everything it made.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/metawatch/metawatch/pkg/cluster"
)

func main() {
	ctrllog.SetLogger(zap.New())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	c, err := cluster.Start(ctx, cluster.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "cluster: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "cluster: ready in %s; try: %s --kubeconfig %s get nodes -o wide\ncluster: Ctrl-C stops it and removes everything it made\n",
		time.Since(start).Round(time.Second), c.Kubectl, c.KubeconfigPath)
	<-ctx.Done()
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "cluster: stopping: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "cluster: stopped")
}
