package sharding

import "github.com/metawatch/metawatch/pkg/testing/controlplane"

// ControlPlane is the control plane TestMain (ring_test.go) started, for the
// tests of the sharded cache in package sharding_test, which cannot see cp.
func ControlPlane() *controlplane.ControlPlane { return cp }
