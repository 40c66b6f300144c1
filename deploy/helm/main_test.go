// Package helm_test tests the Helm chart on the local control plane: lint,
// render, server-side dry runs, install/upgrade/uninstall, and that the RBAC it
// grants is enough for metawatch and no more.
package helm_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/metawatch/metawatch/pkg/controlplane"
)

var (
	cp        *controlplane.ControlPlane
	helmBin   string
	metawatch string // the metawatch binary, run out of cluster as the chart's ServiceAccount
)

const chart = "metawatch"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "metawatch-helm-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := setupAndRun(m, dir)
	os.RemoveAll(dir)
	os.Exit(code)
}

func setupAndRun(m *testing.M, dir string) int {
	var err error
	if helmBin, err = controlplane.EnsureHelm(context.Background(), os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	metawatch = filepath.Join(dir, "metawatch")
	if out, err := exec.Command("go", "build", "-o", metawatch, "../../cmd/metawatch").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building metawatch: %v\n%s", err, out)
		return 1
	}
	return controlplane.RunTests(m, &cp)
}
