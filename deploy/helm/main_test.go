// Package helm_test tests the Helm chart on the local control plane: lint,
// render, server-side dry runs, install/upgrade/uninstall, and that the RBAC it
// grants is enough for metawatch and no more.
package helm_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

var (
	cp        *controlplane.ControlPlane
	helmBin   string
	metawatch string // the metawatch binary, run out of cluster as the chart's ServiceAccount
)

const chart = "metawatch"

func TestMain(m *testing.M) {
	os.Exit(setupAndRun(m))
}

func setupAndRun(m *testing.M) int {
	flag.Parse()
	if testing.Short() { // every test here needs helm, and most the control plane
		return m.Run()
	}
	var err error
	if helmBin, err = controlplane.EnsureHelm(context.Background(), os.Stderr); err != nil { //nolint:forbidigo // TestMain runs before any test: there is no test context yet
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	path, remove, err := testkit.Build("../../cmd/metawatch", "metawatch")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer remove()
	metawatch = path
	return controlplane.RunTests(m, &cp)
}
