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

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

func main() {
	// A flag set of its own: the global one carries flags that imported
	// packages register (controller-runtime's --kubeconfig), which make kind
	// would accept and ignore.
	fs := flag.NewFlagSet("make kind", flag.ExitOnError)
	var o options
	fs.StringVar(&o.name, "name", "metawatch-bench", "The kind cluster's name (the bench's --kind takes the same).")
	fs.StringVar(&o.config, "config", "bench/kind-config.yaml", "The kind cluster configuration it is created from.")
	kubernetes := fs.String("kubernetes", "", "The Kubernetes release of the node image, e.g. v1.35.4 (from v1.34; each built here once). Empty: $"+
		controlplane.VersionEnv+", else "+controlplane.DefaultKubernetesVersion+".")
	_ = fs.Parse(os.Args[1:])
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "kind: unexpected arguments %q: make kind takes only flags (ARGS=\"--name NAME --config FILE --kubernetes VERSION\")\n", fs.Args())
		os.Exit(2)
	}
	if err := selectKubernetes(*kubernetes); err != nil {
		fmt.Fprintf(os.Stderr, "kind: --kubernetes: %v\n", err)
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

// selectKubernetes makes v the release of the node image and of every tool
// make kind builds: the control plane's version is read from the
// environment as the process starts (package controlplane), so a v that
// differs is set there and make kind starts again, as itself, with it. It
// returns only if v is empty or already selected, or on an error.
func selectKubernetes(v string) error {
	if v == "" || v == controlplane.KubernetesVersion {
		return nil
	}
	if err := controlplane.CheckVersion(v); err != nil {
		return fmt.Errorf("%w; leave it out for %s", err, controlplane.DefaultKubernetesVersion)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.Setenv(controlplane.VersionEnv, v); err != nil {
		return err
	}
	return syscall.Exec(self, os.Args, os.Environ())
}
