// Command controlplane builds (or finds in the cache) the local control-plane
// binaries and the helm CLI, and prints where they are; `make test` runs it first so the build's
// progress is visible instead of buffered inside a test binary.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

func main() {
	start := time.Now()
	bins, err := controlplane.EnsureBinaries(context.Background(), os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "controlplane: %v\n", err)
		os.Exit(1)
	}
	// The tests that need pods made by the real workload controllers run it
	// beside the control plane (controlplane.StartControllerManager): built
	// here, with its progress shown, not inside a test's output.
	if _, err := controlplane.EnsureControllerManager(context.Background(), os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "controlplane: %v\n", err)
		os.Exit(1)
	}
	helm, err := controlplane.EnsureHelm(context.Background(), os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "controlplane: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("controlplane: kube-apiserver %s, etcd %s, kubectl and kube-controller-manager ready in %s, helm %s at %s (%s)\n",
		controlplane.KubernetesVersion, controlplane.EtcdVersion, bins.Dir, controlplane.HelmVersion, helm, time.Since(start).Round(time.Millisecond))
}
