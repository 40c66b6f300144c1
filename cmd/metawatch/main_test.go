package main_test

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

var (
	cp  *controlplane.ControlPlane
	bin string // the metawatch binary under test
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() { // every test here runs the binary on the control plane
		os.Exit(m.Run())
	}
	path, remove, err := testkit.Build(".", "metawatch")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = path
	code := controlplane.RunTests(m, &cp)
	remove()
	os.Exit(code)
}
