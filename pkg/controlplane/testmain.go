package controlplane

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
)

// RunTests starts a control plane, points *cp at it, runs the package's tests
// and stops it. Use it from TestMain:
//
//	var cp *controlplane.ControlPlane
//
//	func TestMain(m *testing.M) { os.Exit(controlplane.RunTests(m, &cp)) }
//
// A fuzzing run (go test -fuzz) gets no control plane: fuzz targets are pure,
// and every fuzz worker process would otherwise start one of its own.
func RunTests(m *testing.M, cp **ControlPlane) int {
	flag.Parse()
	if fuzzing() {
		return m.Run()
	}
	started, err := Start(context.Background(), Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the local control plane: %v\n", err)
		return 1
	}
	*cp = started
	code := m.Run()
	if err := started.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the local control plane: %v\n", err)
	}
	return code
}

func fuzzing() bool {
	for _, name := range []string{"test.fuzz", "test.fuzzworker"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" && f.Value.String() != "false" {
			return true
		}
	}
	return false
}
