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

	"golang.org/x/sys/unix"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/metawatch/metawatch/hack/onenode"
)

func main() {
	ctrllog.SetLogger(zap.New())
	if err := runCluster(); err != nil {
		fmt.Fprintf(os.Stderr, "cluster: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "cluster: stopped")
}

// runCluster starts the cluster and stops it on Ctrl-C or SIGTERM, or
// SIGHUP (its terminal closed).
func runCluster() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if err := stopWithParent(); err != nil {
		return err
	}
	start := time.Now()
	c, err := onenode.Start(ctx, onenode.Options{})
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("interrupted while starting; removed what it had made (%w)", err)
		}
		return err
	}
	fmt.Fprintf(os.Stderr, "cluster: ready in %s; try: %s --kubeconfig %s get nodes -o wide\ncluster: Ctrl-C stops it and removes everything it made\n",
		time.Since(start).Round(time.Second), c.Kubectl, c.KubeconfigPath)
	<-ctx.Done()
	if err := c.Stop(); err != nil {
		return fmt.Errorf("stopping: %w", err)
	}
	return nil
}

// stopWithParent asks the kernel for a SIGTERM when this process's parent
// dies. `make cluster` runs this command as make's child, and passes a
// SIGTERM on; but a parent killed outright (kill -9 of make, or of a go run
// of this command, which passes no signal on) cannot: without this the
// cluster would run on with nobody to stop it.
func stopWithParent() error {
	parent := os.Getppid()
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0); err != nil {
		return fmt.Errorf("asking to be stopped with the parent process: %w", err)
	}
	if os.Getppid() != parent { // the parent died before the request
		return fmt.Errorf("the parent process is gone")
	}
	return nil
}
