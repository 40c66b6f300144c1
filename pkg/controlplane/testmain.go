package controlplane

import (
	"context"
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
func RunTests(m *testing.M, cp **ControlPlane) int {
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
