package controlplane_test

import (
	"os"
	"testing"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// An external test package: the tests use testkit, which imports controlplane.
var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { os.Exit(controlplane.RunTests(m, &cp)) }
