package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/metawatch/metawatch/pkg/controlplane"
)

var (
	cp  *controlplane.ControlPlane
	bin string // the metawatch binary under test
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "metawatch-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "metawatch")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building metawatch: %v\n%s", err, out)
		os.Exit(1)
	}
	code := controlplane.RunTests(m, &cp)
	os.RemoveAll(dir)
	os.Exit(code)
}
