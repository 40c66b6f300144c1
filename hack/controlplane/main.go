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
	helm, err := controlplane.EnsureHelm(context.Background(), os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "controlplane: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("controlplane: kube-apiserver %s, etcd %s and kubectl ready in %s, helm %s at %s (%s)\n",
		controlplane.KubernetesVersion, controlplane.EtcdVersion, bins.Dir, controlplane.HelmVersion, helm, time.Since(start).Round(time.Millisecond))
}
