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
// and every fuzz worker process would otherwise start one of its own. Nor
// does go test -short: it runs the pure tests only, and every test that
// needs the control plane starts with SkipIfShort.
//
// As with envtest, KUBEBUILDER_ASSETS names a directory of kube-apiserver,
// etcd (and kubectl) binaries to use instead of building them, and
// USE_EXISTING_CLUSTER=true runs the tests against the cluster of
// $KUBECONFIG instead of starting one (see Start).
func RunTests(m *testing.M, cp **ControlPlane) int {
	flag.Parse()
	if fuzzing() || testing.Short() {
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

// SkipIfShort skips t under go test -short: it needs the control plane,
// which RunTests does not start then.
func SkipIfShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the local control plane; go test -short runs the pure tests only")
	}
}

// SkipIfExisting skips t against an existing cluster (USE_EXISTING_CLUSTER):
// it stops and starts the API server, which only a local control plane allows.
func (cp *ControlPlane) SkipIfExisting(t testing.TB) {
	t.Helper()
	if cp.existing {
		t.Skip("stops the API server: not against an existing cluster (USE_EXISTING_CLUSTER)")
	}
}
